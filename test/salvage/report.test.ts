// The fidelity report for one input of each kind, each made the way the real program makes it:
// a web UI log of real pi events with its plain lines, a real `pi --export` page, a
// pi-hermes-memory sessions.db and a hermes-agent state.db filled by their row rules, and the real
// pi TUI captured with and without escapes. Every report lists facts kept and not kept, counted.

import { execa } from "execa";
import { copyFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bigText, fauxText, fauxThinking, fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { runCli, tempEnv } from "./cli.js";
import { fillAgentDb, fillMemoryDb, piIndexed, piMessages } from "./hermes-fill.js";
import { webUiLog } from "./log-shapes.js";
import { runPiTui, type TuiRun } from "./tui/pi-tui.js";
import { THINKING_TURNS } from "./tui/turns.js";
import { tempRoot } from "../helpers/tmp.js";

const PI_CLI = join(process.cwd(), "node_modules/@mariozechner/pi-coding-agent/dist/cli.js");
const root = tempRoot("report");
const cwd = join(root, "proj");
let made: PiSessionResult;
let tui: TuiRun;
const input: Record<string, string> = {};

beforeAll(async () => {
  made = await makePiSession({
    agentDir: join(root, "agent"),
    cwd,
    turns: [
      { user: "list files", assistant: [[fauxThinking("A listing needs the shell."), fauxText("looking"), fauxToolCall("bash", { command: "echo a; echo b" })], "two files"] },
      { user: "write it out in full", assistant: [bigText(150_000, "long answer ")] },
    ],
  });
  input.log = join(root, "web-ui.log");
  writeFileSync(input.log, webUiLog(made.sessionId, made.events));
  // pi --export on a copy: pi's loader may rewrite its input.
  const copy = join(root, basename(made.file));
  copyFileSync(made.file, copy);
  input.html = join(root, "export.html");
  await execa("node", [PI_CLI, "--export", copy, input.html], { env: { PI_CODING_AGENT_DIR: join(root, "agent"), HOME: root }, extendEnv: true });
  input.memory = join(root, "sessions.db");
  fillMemoryDb(input.memory, [{ id: made.sessionId, cwd, messages: piIndexed(made.file) }]);
  input.agent = join(root, "state.db");
  const msgs = piMessages(made.file);
  // An interrupted turn: the assistant row with its call was written, the tool row never was.
  fillAgentDb(input.agent, [{ id: "20261130_agent", parent: null, model: "faux-1", messages: msgs.slice(0, msgs.findIndex((m) => m.role === "toolResult")) }]);
  tui = await runPiTui(join(root, "tui"), THINKING_TURNS);
  input.styled = join(root, "styled.txt");
  writeFileSync(input.styled, tui.styled);
  input.plain = join(root, "plain.txt");
  writeFileSync(input.plain, tui.plain);
}, 180_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const ARGS: Record<string, string[]> = {
  log: ["--from-log"],
  html: ["--from-html"],
  memory: ["--from-hermes"],
  agent: ["--from-hermes"],
  styled: ["--from-terminal"],
  plain: ["--from-terminal"],
};

async function report(kind: string) {
  const args = ["salvage", ...ARGS[kind], input[kind], "--cwd", cwd, "--out", join(root, `out-${kind}`)];
  const json = await runCli(["--json", ...args], tempEnv(join(root, `env-${kind}`)));
  expect(json.exitCode, json.stderr).toBe(0);
  const human = await runCli([...args.slice(0, -1), join(root, `out-${kind}-human`)], tempEnv(join(root, `env-${kind}-h`)));
  expect(human.exitCode, human.stderr).toBe(0);
  console.log(`report [${kind}]:\n${(human.stdout + human.stderr).replaceAll(root, "$T")}`);
  const r = JSON.parse(json.stdout);
  expect(r.sessions).toHaveLength(1);
  validateWithPi(readFileSync(r.sessions[0].file, "utf8"), { expectMessages: true });
  expect(human.stdout + human.stderr).toMatch(/\n  kept +\S.*\n  not kept +\S/);
  return { s: r.sessions[0], sources: r.sources };
}

describe("the salvage report lists facts kept and not kept, per session, for every kind of input", () => {
  it("web UI log (real events, plain lines mixed in)", async () => {
    const { s, sources } = await report("log");
    expect(s.facts.kept).toMatchObject({ "user messages": 2, "assistant messages": 3, "thinking blocks": 1, "tool calls with arguments": 1, "tool results": 1, "usage/model": 3 });
    expect(s.facts.notKept).toEqual({});
    expect(sources[0].notKept["plain text lines"]).toBeGreaterThan(0);
  });

  it("pi --export HTML", async () => {
    const { s } = await report("html");
    expect(s.facts.kept).toMatchObject({ "user messages": 2, "assistant messages": 3, "thinking blocks": 1, "tool calls with arguments": 1, "tool results": 1, "usage/model": 3 });
    expect(s.facts.notKept).toEqual({});
  });

  it("pi-hermes-memory sessions.db", async () => {
    const { s } = await report("memory");
    expect(s.facts.kept).toMatchObject({ "user messages": 2, "assistant messages": 3, "tool calls by name only": 1 });
    expect(s.facts.kept["thinking blocks"]).toBeUndefined();
    expect(s.facts.notKept).toEqual({ "tool call arguments": 1, "tool results (not recorded)": 1, "usage/model": 3, "texts cut by the source": 1 });
    expect(s.sources[0].notKept).toEqual({ "texts cut by hermes": 1, "tool call arguments": 1, "tool results (not recorded)": 1 });
  });

  it("hermes-agent state.db", async () => {
    const { s } = await report("agent");
    expect(s.facts.kept).toMatchObject({ "user messages": 1, "assistant messages": 1, "tool calls with arguments": 1 });
    expect(s.facts.notKept).toEqual({ "tool results (not recorded)": 1, "usage/model": 1 });
    expect(s.sources[0].notKept).toEqual({ "tool results (not recorded)": 1, "system prompts": 1 });
  });

  it("terminal capture with escapes", async () => {
    const { s } = await report("styled");
    expect(s.facts.kept).toMatchObject({ "user messages": 2, "assistant messages": 3, "thinking blocks": 3, "tool calls with arguments": 1, "tool results": 1 });
    expect(s.facts.notKept).toMatchObject({ "usage/model": 3, "timestamps (made up)": 6 });
    expect(s.sources[0].notKept).toEqual({});
  });

  it("terminal capture without escapes", async () => {
    const { s } = await report("plain");
    expect(s.facts.kept["thinking blocks"]).toBeUndefined();
    expect(s.sources[0].notKept).toMatchObject({ "thinking possibly mixed into text": 3, "roles guessed from layout": 5 });
  });
});
