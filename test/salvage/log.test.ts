import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseSessionText } from "../../src/agents/pi/parse.js";
import { sessionDirName } from "../../src/agents/pi/writer.js";
import { salvage } from "../../src/salvage/salvage.js";
import { fauxText, fauxThinking, fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { runCli, tempEnv } from "./cli.js";
import { deltaOnly, formatRecall, fullMessageOnly, jsonModeLog, measureRecall, rpcModeLog, webUiLog, type Recall } from "./log-shapes.js";
import { tempRoot } from "../helpers/tmp.js";

type Ev = Record<string, unknown>;
let root: string;
let made: PiSessionResult;
let header: Ev;
let events: Ev[];
let messages: Ev[];
let n = 0;

beforeAll(async () => {
  root = tempRoot("log");
  made = await makePiSession({
    agentDir: join(root, "agent"),
    cwd: join(root, "proj"),
    thinkingLevel: "low",
    turns: [
      { user: "list files", assistant: [[fauxThinking("I should look"), fauxText("looking"), fauxToolCall("bash", { command: "echo a; echo b" })], "two files"] },
      {
        user: "write and read a note",
        assistant: [[fauxToolCall("write", { path: "note.md", content: "# note\nünïcödé ✓\n" })], [fauxToolCall("read", { path: "note.md" })], "done"],
      },
      { user: "make it fail", assistant: [[fauxToolCall("bash", { command: "echo oops >&2; exit 3" })], "it failed"] },
    ],
  });
  const text = readFileSync(made.file, "utf8");
  header = JSON.parse(text.slice(0, text.indexOf("\n")));
  events = made.events as unknown as Ev[];
  messages = parseSessionText(text)
    .entries.filter((e) => e.type === "message")
    .map((e) => e.message as Ev);
});

async function salvageText(log: string, extra: { cwd?: string } = {}) {
  const file = join(root, `log-${++n}.log`);
  writeFileSync(file, log);
  const out = join(root, `out-${n}`);
  const result = await salvage({ logs: [file], outDir: out, ...extra });
  expect(result.written).toHaveLength(1);
  const text = readFileSync(result.written[0].path, "utf8");
  validateWithPi(text, { expectMessages: true });
  return { text, result, recall: measureRecall(made.file, text) };
}

/** role + content of every message, in file order: the conversation as pi would replay it. */
const sequence = (text: string) =>
  validateWithPi(text)
    .entries.filter((e) => e.type === "message")
    .map((e) => JSON.stringify([(e as unknown as { message: Ev }).message.role, (e as unknown as { message: Ev }).message.content]));

const without = (types: string[], evs: Ev[] = events) => evs.filter((e) => !types.includes(String(e.type)));
const full = (r: Recall, kind: "exact" | "content") => {
  for (const role of Object.keys(r.total)) expect(`${role} ${r[kind][role] ?? 0}`).toBe(`${role} ${r.total[role]}`);
};

describe("salvage --from-log", () => {
  it("pi --mode json: every message back exactly, under the original session id and cwd", async () => {
    const { recall, result, text } = await salvageText(jsonModeLog(header, events));
    console.log(formatRecall("json", recall));
    full(recall, "exact");
    expect(sequence(text)).toEqual(sequence(readFileSync(made.file, "utf8")));
    expect(result.sessions[0].header).toMatchObject({ id: header.id, cwd: header.cwd });
    // pi continues with the model the conversation used.
    expect(validateWithPi(text).context.model).toMatchObject({ provider: "faux", modelId: "faux-1" });
  });

  it("pi --mode rpc: session id from get_state; cwd from --cwd", async () => {
    const { recall, result } = await salvageText(rpcModeLog(String(header.id), events, messages), { cwd: "/work/x" });
    console.log(formatRecall("rpc", recall));
    full(recall, "exact");
    expect(result.sessions[0].header).toMatchObject({ id: header.id, cwd: "/work/x" });
  });

  it("web UI log with prefixes, SSE lines, rpc_event envelopes and plain text", async () => {
    const { recall, result } = await salvageText(webUiLog(String(header.id), events));
    console.log(formatRecall("web-ui", recall));
    full(recall, "exact");
    expect(result.report.sources[0].notes.join(" ")).toMatch(/plain text line/);
    expect(result.report.sessions[0].gaps.join(" ")).toMatch(/no project dir/);
  });

  it("without message_end, turn_end and agent_end give every message back", async () => {
    const { recall, text } = await salvageText(jsonModeLog(header, without(["message_end"])));
    console.log(formatRecall("no message_end", recall));
    full(recall, "exact");
    expect(sequence(text)).toEqual(sequence(readFileSync(made.file, "utf8")));
  });

  it("a get_messages response alone gives every message back", async () => {
    const kept = without(["message_start", "message_update", "message_end", "turn_end", "agent_end", "tool_execution_end"]);
    const { recall, text } = await salvageText(rpcModeLog(String(header.id), kept, messages));
    console.log(formatRecall("get_messages only", recall));
    full(recall, "exact");
    expect(sequence(text)).toEqual(sequence(readFileSync(made.file, "utf8")));
  });

  it("tool results come back from tool_execution_end when their messages are lost", async () => {
    const kept = without(["turn_end", "agent_end"]).filter((e) => !(String(e.type).startsWith("message_") && (e.message as Ev)?.role === "toolResult"));
    const { recall, result, text } = await salvageText(jsonModeLog(header, kept));
    console.log(formatRecall("tool_execution_end", recall));
    expect(sequence(text)).toEqual(sequence(readFileSync(made.file, "utf8")));
    full(recall, "content");
    expect(result.report.sessions[0].gaps.join(" ")).toMatch(/4 tool result\(s\) rebuilt from tool_execution_end/);
  });

  it("newer delta-only message_update events rebuild assistant content when message_end is lost", async () => {
    const kept = without(["message_end", "turn_end", "agent_end"], deltaOnly(events));
    const { recall } = await salvageText(jsonModeLog(header, kept));
    console.log(formatRecall("delta-only, no message_end", recall));
    expect(recall.content.assistant).toBe(recall.total.assistant);
    expect(recall.content.user).toBe(recall.total.user);
  });

  it("old full-message message_update events rebuild assistant content when message_end is lost", async () => {
    const kept = without(["message_end", "turn_end", "agent_end"], fullMessageOnly(events));
    const { recall } = await salvageText(jsonModeLog(header, kept));
    console.log(formatRecall("old message_update, no message_end", recall));
    expect(recall.content.assistant).toBe(recall.total.assistant);
  });

  it("reads a truncated last line and both names of the compaction events", async () => {
    const compaction = (type: string, summary: string) => ({ type, reason: "threshold", result: { summary, firstKeptEntryId: "abcd1234", tokensBefore: 1000 }, aborted: false, willRetry: false });
    const evs = [...events.slice(0, 10), compaction("auto_compaction_end", "old summary"), ...events.slice(10), compaction("compaction_end", "new summary")];
    const log = jsonModeLog(header, evs) + JSON.stringify(events[5]).slice(0, 70);
    const { recall, result, text } = await salvageText(log);
    full(recall, "exact");
    const customs = validateWithPi(text).entries.filter((e) => e.type === "custom" && (e as { customType?: string }).customType === "pi-guard/salvage/compaction");
    expect(customs.map((c) => (c as { data: { summary: string } }).data.summary)).toEqual(["old summary", "new summary"]);
    expect(result.report.sources[0].notes.join(" ")).toMatch(/last line .* cut off/);
  });

  it("one log holding two sessions gives two sessions; --install puts each where pi looks", async () => {
    const other = await makePiSession({ agentDir: join(root, "agent"), cwd: join(root, "proj-2"), turns: [{ user: "second session", assistant: ["second answer"] }] });
    const otherText = readFileSync(other.file, "utf8");
    const otherHeader = JSON.parse(otherText.slice(0, otherText.indexOf("\n")));
    const file = join(root, "two-sessions.log");
    writeFileSync(file, jsonModeLog(header, events) + "[pi-web] switching session\n" + jsonModeLog(otherHeader, other.events));
    const env = tempEnv(mkdtempSync(join(root, "install-")));
    const run = await runCli(["--json", "salvage", "--from-log", file, "--install"], env);
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.sessions.map((x: { id: string }) => x.id)).toEqual([header.id, otherHeader.id]);
    for (const [s, original] of [
      [report.sessions[0], made.file],
      [report.sessions[1], other.file],
    ] as const) {
      expect(s.file.startsWith(join(env.PI_CODING_AGENT_DIR, "sessions", sessionDirName(s.cwd)))).toBe(true);
      const recall = measureRecall(original, readFileSync(s.file, "utf8"));
      for (const role of Object.keys(recall.total)) expect(recall.exact[role]).toBe(recall.total[role]);
    }
  });

  it("a log from the CLI: one clear line and non-zero exit when it holds no pi events", async () => {
    const file = join(root, "chatter.log");
    writeFileSync(file, "hello\n[pi-web] started {not json}\n");
    const run = await runCli(["salvage", "--from-log", file, "--out", join(root, "none")], tempEnv(root));
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr).toBe(`pi-guard: ${file}: no pi messages found (not a pi --mode json/rpc log?)`);
  });
});
