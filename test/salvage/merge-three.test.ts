// log + hermes + terminal for ONE session, each made by real pi: turns 1-3 typed into the real
// TUI under tmux (the terminal capture), turn 4 run in the same session with `pi --mode json
// --session FILE` (the log), and a pi-hermes-memory db filled from the final file by the
// documented mapping (text only, no tool results). Merged, they give more than any one alone.

import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateWithPi } from "../helpers/pi-validate.js";
import { runCli, tempEnv } from "./cli.js";
import { fillMemoryDb, piIndexed } from "./hermes-fill.js";
import { runPiTui, piEnv, type ScriptBlock, type TuiRun } from "./tui/pi-tui.js";
import { parseJsonl } from "./tui/recall.js";
import { TUI_TURNS } from "./tui/turns.js";
import { tempRoot } from "../helpers/tmp.js";

const PI_CLI = fileURLToPath(new URL("../../node_modules/@mariozechner/pi-coding-agent/dist/cli.js", import.meta.url));
const root = tempRoot("merge3");
const piRoot = join(root, "pi");
let run: TuiRun;
const files = { terminal: join(root, "screen.txt"), log: join(root, "turn4.jsonl"), hermes: join(root, "sessions.db") };
const FOURTH = "Fourth prompt: print the word four with the shell.";

beforeAll(async () => {
  run = await runPiTui(piRoot, TUI_TURNS);
  writeFileSync(files.terminal, run.styled);
  const script: ScriptBlock[][] = [[{ text: "Printing it." }, { tool: "bash", args: { command: "echo four" } }], [{ text: "It printed four, as asked." }]];
  const scriptFile = join(piRoot, "script4.json");
  writeFileSync(scriptFile, JSON.stringify(script));
  const log = execFileSync(process.execPath, [PI_CLI, "--mode", "json", "--session", run.sessionFile, FOURTH], { cwd: run.cwd, env: piEnv(piRoot, scriptFile), encoding: "utf8", timeout: 60_000 });
  writeFileSync(files.log, log);
  const header = JSON.parse(readFileSync(run.sessionFile, "utf8").split("\n")[0]);
  fillMemoryDb(files.hermes, [{ id: header.id, cwd: header.cwd, messages: piIndexed(run.sessionFile) }]);
}, 180_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

type Line = Record<string, any>;
const msgs = (lines: Line[], role?: string) => lines.filter((l) => l.type === "message" && (!role || l.message.role === role));
const userTexts = (lines: Line[]) => msgs(lines, "user").map((l) => l.message.content[0].text.replace(/\s+/g, " ").trim());

async function salvageWith(name: string, args: string[]) {
  const out = join(root, `out-${name}`);
  const res = await runCli(["--json", "salvage", ...args, "--out", out], tempEnv(join(root, `env-${name}`)));
  expect(res.exitCode, res.stderr).toBe(0);
  const written = readdirSync(out).filter((f) => f.endsWith(".jsonl"));
  expect(written, name).toHaveLength(1);
  const text = readFileSync(join(out, written[0]), "utf8");
  validateWithPi(text, { expectMessages: true });
  return { lines: parseJsonl(text), report: JSON.parse(res.stdout) };
}

describe("merging log + hermes + terminal of one session", () => {
  it("gives every message once, more than any one source alone", async () => {
    const original = parseJsonl(readFileSync(run.sessionFile, "utf8"));
    expect(userTexts(original)).toHaveLength(4);
    const alone = {
      terminal: await salvageWith("terminal", ["--from-terminal", files.terminal]),
      log: await salvageWith("log", ["--from-log", files.log]),
      hermes: await salvageWith("hermes", ["--from-hermes", files.hermes, "--all"]),
    };
    const merged = await salvageWith("merged", ["--from-terminal", files.terminal, "--from-log", files.log, "--from-hermes", files.hermes, "--all"]);
    // Results marked "not recorded" (hermes names tools only) stand in for facts, they are not ones.
    const count = (lines: Line[]) => msgs(lines).filter((l) => !l.message.details?._pi_guard).length;
    const summary = Object.entries(alone).map(([k, v]) => `${k} ${count(v.lines)}`).join(", ");
    console.log(`merge log+hermes+terminal: ${summary}; merged ${count(merged.lines)}; original ${count(original)}`);
    for (const v of Object.values(alone)) expect(count(merged.lines)).toBeGreaterThan(count(v.lines));

    // One session, every prompt once and in order, no doubled replies or results.
    expect(merged.report.sessions).toHaveLength(1);
    expect(merged.report.sessions[0].id).toBe(original[0].id);
    expect(userTexts(merged.lines)).toEqual(userTexts(original));
    for (const role of ["assistant", "toolResult"]) expect(msgs(merged.lines, role).length, role).toBe(msgs(original, role).length);
    // Every call hermes knew by name only found its real copy (screen or log): no placeholder left.
    expect(JSON.stringify(merged.lines)).not.toMatch(/not recorded/);
    // Tool results of turns 1-3 exist only on screen, turn 4's only in the log.
    const results = msgs(merged.lines, "toolResult").map((l) => `${l.message.toolName}|${l.message.content.map((b: Line) => b.text ?? "").join("").trim()}`);
    expect(results).toEqual(expect.arrayContaining(["bash|one\ntwo\nthree", "read|remember the milk", "bash|four"]));
    // Every tool result follows the assistant message that calls it.
    const calls = new Set(msgs(merged.lines, "assistant").flatMap((l) => l.message.content.filter((b: Line) => b.type === "toolCall").map((b: Line) => b.id)));
    for (const l of msgs(merged.lines, "toolResult")) expect(calls.has(l.message.toolCallId), l.message.toolCallId).toBe(true);
    expect(merged.report.sessions[0].sources.map((s: Line) => s.kind).sort()).toEqual(["hermes", "log", "terminal"]);
  });
});
