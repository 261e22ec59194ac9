// --from-terminal against the real pi TUI: pi runs under tmux with the faux model, prompts are
// typed with send-keys, the scrollback is captured with and without escapes, salvaged by the
// built CLI, loaded by pi's own in-memory functions and compared with the file pi wrote.

import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateWithPi } from "../helpers/pi-validate.js";
import { runCli, tempEnv } from "./cli.js";
import { type TuiRun, runPiTui } from "./tui/pi-tui.js";
import { EDGE_TURNS, THINKING_TURNS, TUI_TURNS } from "./tui/turns.js";
import { parseJsonl, recall } from "./tui/recall.js";
import { tempRoot } from "../helpers/tmp.js";

const root = tempRoot("terminal");
let run: TuiRun;
beforeAll(async () => {
  run = await runPiTui(join(root, "pi"), TUI_TURNS);
  writeFileSync(join(root, "styled.txt"), run.styled);
  writeFileSync(join(root, "plain.txt"), run.plain);
}, 120_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function salvageCapture(name: string) {
  const out = join(root, `out-${name}`);
  const res = await runCli(["--json", "salvage", "--from-terminal", join(root, `${name}.txt`), "--out", out], tempEnv(join(root, `env-${name}`)));
  expect(res.exitCode, res.stderr).toBe(0);
  const files = readdirSync(out).filter((f) => f.endsWith(".jsonl"));
  expect(files).toHaveLength(1);
  const text = readFileSync(join(out, files[0]), "utf8");
  return { text, report: JSON.parse(res.stdout), lines: parseJsonl(text) };
}

describe("salvage --from-terminal (real pi TUI under tmux)", () => {
  for (const name of ["styled", "plain"]) {
    it(`recovers every prompt, >= 95% of assistant words, and the tool calls from the ${name} capture`, async () => {
      const { text, report, lines } = await salvageCapture(name);
      const pi = validateWithPi(text, { expectMessages: true });
      expect(pi.context.messages.length).toBeGreaterThan(0);
      const original = parseJsonl(readFileSync(run.sessionFile, "utf8"));
      const r = recall(original, lines);
      console.log(`terminal (${name}): users ${r.users.recovered}/${r.users.original}, assistant words ${r.assistantWords.recovered}/${r.assistantWords.original} (${r.assistantWords.percent.toFixed(1)}%), tool calls ${r.toolCalls.recovered}/${r.toolCalls.original}, tool results ${r.toolResults.recovered}/${r.toolResults.original}`);
      expect(r.users.recovered).toBe(r.users.original);
      expect(r.users.original).toBe(TUI_TURNS.length);
      expect(r.assistantWords.percent).toBeGreaterThanOrEqual(95);
      expect(r.toolCalls.recovered).toBe(r.toolCalls.original);
      // bash and read show their output; write shows what it wrote, not "Successfully wrote ...".
      expect(r.toolResults).toEqual({ original: 3, recovered: 2 });
      expect(report.sessions[0].gaps.join("\n")).toMatch(/1 tool result\(s\) not shown on screen/);
      // The footer names the project dir; the report admits what the screen cannot give.
      expect(report.sessions[0].cwd).toBe(run.cwd);
      expect(report.sessions[0].idInvented).toBe(true);
      expect(report.sessions[0].gaps.join("\n")).toMatch(/no session id/);
      if (name === "plain") expect(report.sessions[0].gaps.join("\n")).toMatch(/role .* guessed from the layout/);
      else expect(report.sessions[0].gaps.join("\n")).not.toMatch(/guessed/);
    });
  }

  it("keeps tool boxes apart and reports what pi cut or did not show: long output, a failed command, write then edit", async () => {
    const edge = await runPiTui(join(root, "pi-edge"), EDGE_TURNS);
    for (const [name, capture] of [["edge-styled", edge.styled], ["edge-plain", edge.plain]] as const) {
      writeFileSync(join(root, `${name}.txt`), capture);
      const { text, report, lines } = await salvageCapture(name);
      validateWithPi(text, { expectMessages: true });
      const results = lines.filter((l) => l.message?.role === "toolResult").map((l) => l.message);
      expect(results.map((m) => m.toolName), name).toEqual(["bash", "bash", "write", "edit"]);
      // Only the tail pi showed, without pi's "... (N earlier lines)" marker.
      expect(results[0].content[0].text, name).toBe("36\n37\n38\n39\n40");
      expect(results[1].isError, name).toBe(true);
      expect(results[1].content[0].text, name).toMatch(/^oops\n+Command exited with code 3$/);
      const users = lines.filter((l) => l.message?.role === "user").map((l) => l.message.content[0].text);
      expect(users, name).toEqual(EDGE_TURNS.map((t) => t.prompt));
      const gaps = report.sessions[0].gaps.join("\n");
      expect(gaps, name).toMatch(/1 tool result\(s\) are only the part pi showed/);
      expect(gaps, name).toMatch(/1 tool call\(s\) whose arguments the screen does not show/);
      expect(gaps, name).toMatch(/1 tool result\(s\) not shown on screen/);
    }
  });

  it("reads standard input with -", async () => {
    const { execa } = await import("execa");
    const { BIN } = await import("../helpers/cli.js");
    const out = join(root, "out-stdin");
    const res = await execa(process.execPath, [BIN, "salvage", "--from-terminal", "-", "--out", out], { input: run.styled, env: tempEnv(join(root, "env-stdin")), extendEnv: false, reject: false });
    expect(res.exitCode, String(res.stderr)).toBe(0);
    expect(readdirSync(out).filter((f) => f.endsWith(".jsonl"))).toHaveLength(1);
  });

  it("refuses text that is not a pi screen with one line and exit 1, writing nothing", async () => {
    const file = join(root, "notes.txt");
    writeFileSync(file, "just some notes\n\nnothing from pi here\n");
    const out = join(root, "out-none");
    const res = await runCli(["salvage", "--from-terminal", file, "--out", out], tempEnv(join(root, "env-none")));
    expect(res.exitCode).toBe(1);
    expect(res.stderr.split("\n")).toHaveLength(1);
    expect(res.stderr).toMatch(/no pi conversation found/);
    expect(() => readdirSync(out)).toThrow();
  });
});

describe("salvage --from-terminal: thinking (real pi TUI, faux model replying with thinking blocks)", () => {
  let think: TuiRun;
  const squash = (t: string) => t.replace(/\s+/g, " ").trim();
  const blocksOf = (lines: Record<string, any>[], type: string) =>
    lines.filter((l) => l.message?.role === "assistant").flatMap((l) => l.message.content.filter((b: any) => b.type === type).map((b: any) => squash(b.thinking ?? b.text)));
  beforeAll(async () => {
    think = await runPiTui(join(root, "pi-think"), THINKING_TURNS);
    writeFileSync(join(root, "think-styled.txt"), think.styled);
    writeFileSync(join(root, "think-plain.txt"), think.plain);
  }, 120_000);

  it("with escapes: what pi drew in its thinking style comes back as thinking blocks, not answer text", async () => {
    const { text, report, lines } = await salvageCapture("think-styled");
    validateWithPi(text, { expectMessages: true });
    const original = parseJsonl(readFileSync(think.sessionFile, "utf8"));
    const wanted = blocksOf(original, "thinking");
    expect(wanted).toHaveLength(3);
    expect(blocksOf(lines, "thinking")).toEqual(wanted);
    // No thinking leaked into the answers, and the answers are whole.
    const answers = blocksOf(lines, "text");
    for (const t of wanted) expect(answers.some((a) => a.includes(t.slice(0, 30)))).toBe(false);
    expect(answers).toEqual(blocksOf(original, "text").map((t) => t.replace(/\*/g, "")));
    // Thinking and the text or call after it stay one message, as pi wrote it.
    const shapes = (ls: Record<string, any>[]) => ls.filter((l) => l.message?.role === "assistant").map((l) => l.message.content.map((b: any) => b.type).join("+"));
    expect(shapes(lines)).toEqual(shapes(original));
    expect(report.sessions[0].facts.kept).toMatchObject({ "thinking blocks": 3, "assistant text blocks": 2 });
    expect(report.sessions[0].sources[0].notKept).toEqual({});
  });

  it("merged with pi's own export of the same session, every message comes back once, thinking included", async () => {
    const { execa } = await import("execa");
    const copy = join(root, "think-session.jsonl");
    writeFileSync(copy, readFileSync(think.sessionFile));
    const html = join(root, "think.html");
    await execa(process.execPath, [join(process.cwd(), "node_modules/@mariozechner/pi-coding-agent/dist/cli.js"), "--export", copy, html], { env: think.env, extendEnv: false });
    const out = join(root, "out-think-merged");
    const res = await runCli(["--json", "salvage", "--from-terminal", join(root, "think-styled.txt"), "--from-html", html, "--out", out], tempEnv(join(root, "env-think-merged")));
    expect(res.exitCode, res.stderr).toBe(0);
    const report = JSON.parse(res.stdout);
    expect(report.sessions).toHaveLength(1);
    const lines = parseJsonl(readFileSync(report.sessions[0].file, "utf8"));
    const original = parseJsonl(readFileSync(think.sessionFile, "utf8"));
    const roles = (ls: Record<string, any>[]) => ls.filter((l) => l.type === "message").map((l) => l.message.role);
    expect(roles(lines)).toEqual(roles(original));
    expect(blocksOf(lines, "thinking")).toEqual(blocksOf(original, "thinking"));
  });

  it("without escapes: thinking cannot be told from text, and the report says how many replies may mix them", async () => {
    const { text, report } = await salvageCapture("think-plain");
    validateWithPi(text, { expectMessages: true });
    const s = report.sessions[0];
    expect(s.facts.kept["thinking blocks"]).toBeUndefined();
    expect(s.sources[0].notKept["thinking possibly mixed into text"]).toBe(3);
    expect(s.gaps.join("\n")).toMatch(/3 assistant message\(s\) may hold thinking mixed into their text/);
  });

  it("with thinking hidden (hideThinkingBlock), pi's \"Thinking...\" label is counted as hidden thinking, not kept as text", async () => {
    const hidden = await runPiTui(join(root, "pi-think-hidden"), THINKING_TURNS, { hideThinkingBlock: true });
    writeFileSync(join(root, "think-hidden.txt"), hidden.styled);
    const { text, report, lines } = await salvageCapture("think-hidden");
    validateWithPi(text, { expectMessages: true });
    expect(JSON.stringify(lines.filter((l) => l.type === "message"))).not.toMatch(/Thinking\.\.\./);
    expect(blocksOf(lines, "thinking")).toEqual([]);
    expect(blocksOf(lines, "text")).toEqual(blocksOf(parseJsonl(readFileSync(hidden.sessionFile, "utf8")), "text").map((t) => t.replace(/\*/g, "")));
    expect(report.sessions[0].sources[0].notKept).toEqual({ "thinking hidden on screen": 3 });
  });
});
