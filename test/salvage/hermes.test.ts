import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { HERMES_SCHEMA } from "../../bench/salvage-data.js";
import { salvage } from "../../src/salvage/salvage.js";
import { bigText, fauxText, fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { runCli, tempEnv } from "./cli.js";
import { fillAgentDb, fillMemoryDb, hermesTruncate, piIndexed, piMessages, textOf } from "./hermes-fill.js";
import { formatRecall, jsonModeLog, measureRecall } from "./log-shapes.js";
import { tempRoot } from "../helpers/tmp.js";

type Ev = Record<string, unknown>;
type Msg = ReturnType<typeof piMessages>[number];
let root: string;
let a: PiSessionResult;
let b: PiSessionResult;
let cwdA: string;
let cwdB: string;
const BIG = 150_000;

const sha = (f: string) => createHash("sha256").update(readFileSync(f)).digest("hex");
const salvagedMessages = (text: string) =>
  validateWithPi(text, { expectMessages: true })
    .entries.filter((e) => e.type === "message")
    .map((e) => (e as unknown as { message: Msg }).message);

/** Every user and assistant text of the original, as hermes could keep it, found in the salvage. */
function textRecall(original: Msg[], got: Msg[], truncate: (t: string) => string, sameTime = true) {
  const wanted = original.filter((m) => (m.role === "user" || m.role === "assistant") && textOf(m) !== "");
  const found = wanted.filter((m) => got.some((g) => g.role === m.role && textOf(g) === truncate(textOf(m)) && (!sameTime || g.timestamp === m.timestamp)));
  return { found: found.length, total: wanted.length };
}

beforeAll(async () => {
  root = tempRoot("hermes");
  cwdA = join(root, "proj-a");
  cwdB = join(root, "proj-b");
  a = await makePiSession({
    agentDir: join(root, "agent"),
    cwd: cwdA,
    turns: [
      { user: "list files", assistant: [[fauxText("looking"), fauxToolCall("bash", { command: "echo a; echo b" })], "two files"] },
      { user: "write it out in full", assistant: [bigText(BIG, "long answer ")] },
      { user: "now a tool only", assistant: [[fauxToolCall("bash", { command: "echo quiet" })], "quietly done"] },
    ],
  });
  b = await makePiSession({ agentDir: join(root, "agent"), cwd: cwdB, turns: [{ user: "other project", assistant: ["other answer"] }] });
});

describe("salvage --from-hermes (pi-hermes-memory sessions.db)", () => {
  let db: string;
  beforeAll(() => {
    db = join(root, "sessions.db");
    fillMemoryDb(db, [
      { id: a.sessionId, cwd: cwdA, messages: piIndexed(a.file) },
      { id: b.sessionId, cwd: cwdB, messages: piIndexed(b.file) },
    ]);
  });

  it("recovers every user and assistant text within hermes' truncation, selected by --cwd, and leaves the db untouched", async () => {
    const before = sha(db);
    const out = join(root, "out-memory");
    const run = await runCli(["--json", "salvage", "--from-hermes", db, "--cwd", cwdA, "--out", out], tempEnv(root));
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.sessions).toHaveLength(1);
    expect(report.sessions[0]).toMatchObject({ id: a.sessionId, cwd: cwdA });
    const got = salvagedMessages(readFileSync(report.sessions[0].file, "utf8"));
    // pi-hermes-memory stores the entries' write times, not pi's message times: match on text.
    const r = textRecall(piMessages(a.file), got, (t) => hermesTruncate(t.trim()), false);
    // Its rows carry pi's entry ids, and those come back.
    const entryIds = validateWithPi(readFileSync(report.sessions[0].file, "utf8")).entries.map((e) => e.id);
    expect(piIndexed(a.file).filter((m) => textOf(m) !== "" && m.role !== "toolResult").every((m) => entryIds.includes(m.entryId))).toBe(true);
    console.log(`hermes recall [pi-hermes-memory]: user+assistant text ${r.found}/${r.total} (within truncation)`);
    expect(r.found).toBe(r.total);
    expect(report.sessions[0].gaps.join(" ")).toMatch(/1 message\(s\) were cut by hermes/);
    expect(report.sessions[0].gaps.join(" ")).toMatch(/list tool names only/);
    expect(sha(db)).toBe(before);
    expect(readdirSync(root).filter((n) => n.startsWith("sessions.db"))).toEqual(["sessions.db"]);
  });

  it("keeps tool calls known only by name, each answered by a result marked as not recorded; pi's context builds, every call answered", async () => {
    const runOnce = async (name: string) => {
      const run = await runCli(["--json", "salvage", "--from-hermes", db, "--session", a.sessionId, "--out", join(root, name)], tempEnv(root));
      expect(run.exitCode, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout);
      return { report, text: readFileSync(report.sessions[0].file, "utf8") };
    };
    const { report, text } = await runOnce("out-names");
    const pi = validateWithPi(text, { expectMessages: true });
    const ctx = pi.context.messages as unknown as Msg[];
    const calls = ctx.flatMap((m) => (m.role === "assistant" ? (m.content as { type: string; id: string; name: string; arguments: unknown }[]).filter((b) => b.type === "toolCall") : []));
    // The db names one tool (turn 1's "looking" + bash); the tool-only turn had no text, so the extension skipped it.
    expect(calls.map((c) => [c.name, c.arguments])).toEqual([["bash", { _pi_guard: "arguments not recorded" }]]);
    const at = ctx.findIndex((m) => m.role === "assistant" && textOf(m) === "looking");
    expect((ctx[at] as unknown as { stopReason: string }).stopReason).toBe("toolUse");
    const result = ctx[at + 1] as unknown as { role: string; toolCallId: string; toolName: string; isError: boolean; details: unknown; content: { text: string }[] };
    expect(result).toMatchObject({ role: "toolResult", toolCallId: calls[0].id, toolName: "bash", isError: false, details: { _pi_guard: "result not recorded" } });
    expect(result.content[0].text).toMatch(/not recorded by pi-hermes-memory/);
    // Every call answered exactly once, call ids unique, and the same on every run.
    const answered = ctx.filter((m) => m.role === "toolResult").map((m) => m.toolCallId);
    expect(answered.sort()).toEqual(calls.map((c) => c.id).sort());
    expect((await runOnce("out-names-2")).text.split("\n").filter((l) => l.includes("toolCall")).map((l) => JSON.parse(l).message.content)).toEqual(
      text.split("\n").filter((l) => l.includes("toolCall")).map((l) => JSON.parse(l).message.content),
    );
    const s = report.sessions[0];
    expect(s.facts.kept).toMatchObject({ "user messages": 3, "assistant messages": 4, "tool calls by name only": 1, timestamps: 8 });
    expect(s.facts.kept["tool results"]).toBeUndefined();
    expect(s.facts.notKept).toMatchObject({ "tool call arguments": 1, "tool results (not recorded)": 1, "texts cut by the source": 1, "usage/model": 4 });
    expect(s.sources[0].notKept).toEqual({ "texts cut by hermes": 1, "tool call arguments": 1, "tool results (not recorded)": 1 });
    expect(s.gaps.join(" ")).toMatch(/1 tool call\(s\) in 1 assistant turn\(s\) list tool names only: kept by name/);
    const human = await runCli(["salvage", "--from-hermes", db, "--session", a.sessionId, "--out", join(root, "out-names-human")], tempEnv(root));
    console.log(`report [pi-hermes-memory]:\n${human.stdout}${human.stderr}`);
    expect(human.stdout + human.stderr).toMatch(/\n  kept +user messages 3, assistant messages 4, assistant text blocks 4, tool calls by name only 1, timestamps 8\n/);
    expect(human.stdout + human.stderr).toMatch(/\n  not kept +tool call arguments 1, tool results \(not recorded\) 1, usage\/model 4, texts cut by the source 1\n/);
  });

  it("hostile tool_calls values become no calls, are counted, and the session still loads in pi", async () => {
    const file = join(root, "hostile-tools.db");
    const h = new Database(file);
    h.exec(HERMES_SCHEMA);
    h.prepare("INSERT INTO sessions VALUES ('s-hostile', 'p', ?, '2026-11-30T10:00:00.000Z', NULL, 5)").run(cwdA);
    const add = h.prepare("INSERT INTO messages VALUES (?, 's-hostile', ?, ?, ?, ?)");
    add.run("0000000a", "user", "hi", "2026-11-30T10:00:01.000Z", null);
    add.run("0000000b", "assistant", "a", "2026-11-30T10:00:02.000Z", JSON.stringify(["bash", 5, null, "", "x y", "read"]));
    add.run("0000000c", "assistant", "b", "2026-11-30T10:00:03.000Z", "not json");
    add.run("0000000d", "assistant", "", "2026-11-30T10:00:04.000Z", JSON.stringify(["bash"]));
    add.run("0000000e", "assistant", "c", "2026-11-30T10:00:05.000Z", "[]");
    h.close();
    const run = await runCli(["--json", "salvage", "--from-hermes", file, "--out", join(root, "out-hostile")], tempEnv(root));
    expect(run.exitCode, run.stderr).toBe(0);
    const s = JSON.parse(run.stdout).sessions[0];
    const ctx = validateWithPi(readFileSync(s.file, "utf8"), { expectMessages: true }).context.messages as unknown as Msg[];
    const calls = ctx.flatMap((m) => (m.role === "assistant" ? (m.content as { type: string; id: string; name: string }[]).filter((b) => b.type === "toolCall") : []));
    expect(calls.map((c) => c.name)).toEqual(["bash", "read", "bash"]);
    expect(new Set(calls.map((c) => c.id)).size).toBe(3);
    expect(ctx.filter((m) => m.role === "toolResult").map((m) => m.toolCallId)).toEqual(calls.map((c) => c.id));
    expect(s.facts.kept["tool calls by name only"]).toBe(3);
    expect(s.sources[0].notKept["tool_calls values not understood"]).toBe(5);
  });

  it("asks which session when the db holds several and none is chosen", async () => {
    const run = await runCli(["salvage", "--from-hermes", db, "--out", join(root, "x")], tempEnv(root));
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr).toBe(`pi-guard: ${db} holds 2 sessions: choose with --session ID, --cwd PATH, --since TIME, or take them all with --all`);
  });

  it("--all takes every session; --session picks one", async () => {
    const all = await salvage({ hermes: [db], hermesSelection: { all: true }, outDir: join(root, "out-all") });
    expect(all.written.map((w) => w.sessionId).sort()).toEqual([a.sessionId, b.sessionId].sort());
    const one = await salvage({ hermes: [db], hermesSelection: { sessions: [b.sessionId] }, outDir: join(root, "out-one") });
    expect(one.written.map((w) => w.sessionId)).toEqual([b.sessionId]);
  });

  it("merged with a partial log of the same session, gives more than either alone", async () => {
    const text = readFileSync(a.file, "utf8");
    const header = JSON.parse(text.slice(0, text.indexOf("\n")));
    const events = a.events as unknown as Ev[];
    const firstTurn = events.slice(0, events.findIndex((e, i) => i > 0 && e.type === "agent_start"));
    const log = join(root, "first-turn.jsonl");
    writeFileSync(log, jsonModeLog(header, firstTurn));
    const count = async (opts: Parameters<typeof salvage>[0], name: string) => {
      const r = await salvage({ ...opts, outDir: join(root, `merge-${name}`) });
      const recall = measureRecall(a.file, readFileSync(r.written[0].path, "utf8"));
      console.log(formatRecall(name, recall));
      return Object.values(recall.content).reduce((x, y) => x + y, 0);
    };
    const sel = { sessions: [a.sessionId] };
    const logOnly = await count({ logs: [log] }, "log alone");
    const hermesOnly = await count({ hermes: [db], hermesSelection: sel }, "hermes alone");
    const both = await count({ logs: [log], hermes: [db], hermesSelection: sel }, "log + hermes");
    expect(both).toBeGreaterThan(Math.max(logOnly, hermesOnly));
    // The richer copy wins: the log's assistant message with its tool call, not hermes' text-only copy.
    const merged = await salvage({ logs: [log], hermes: [db], hermesSelection: sel, outDir: join(root, "merge-check") });
    const got = salvagedMessages(readFileSync(merged.written[0].path, "utf8"));
    const firstAssistant = piMessages(a.file).find((m) => m.role === "assistant")!;
    expect(got.filter((g) => g.role === "assistant" && textOf(g) === "looking")).toEqual([firstAssistant]);
    // Recognised as the same messages despite different times and ids: nothing doubled.
    expect(got.map((g) => g.role)).toEqual(["user", "assistant", "toolResult", "assistant", "user", "assistant", "user", "assistant"]);
    // hermes' call by name and its "not recorded" result gave way to the log's real call and result.
    expect(readFileSync(merged.written[0].path, "utf8")).not.toMatch(/_pi_guard"?:"?(arguments|result) not recorded/);
    expect(merged.report.sessions[0].facts.kept).toMatchObject({ "tool calls with arguments": 1, "tool results": 1 });
  });
});

describe("salvage --from-hermes (hermes-agent state.db)", () => {
  it("maps OpenAI tool calls and tool rows to pi, and follows parent_session_id chains", async () => {
    const db = join(root, "state.db");
    const msgs = piMessages(a.file);
    const split = msgs.findIndex((m, i) => i > 0 && m.role === "user");
    fillAgentDb(db, [
      { id: "20261130_root", parent: null, model: "faux-1", messages: msgs.slice(0, split) },
      { id: "20261130_child", parent: "20261130_root", model: "faux-1", messages: msgs.slice(split) },
      { id: "20261130_other", parent: null, model: "faux-1", messages: piMessages(b.file) },
    ]);
    const before = sha(db);
    const r = await salvage({ hermes: [db], hermesSelection: { sessions: ["20261130_child"] }, outDir: join(root, "out-agent") });
    expect(r.written).toHaveLength(1);
    expect(r.sessions[0].header.id).toBe("20261130_root");
    const got = salvagedMessages(readFileSync(r.written[0].path, "utf8"));
    const t = textRecall(msgs, got, (x) => x);
    const results = msgs.filter((m) => m.role === "toolResult");
    const resultsFound = results.filter((m) => got.some((g) => g.role === "toolResult" && g.toolCallId === m.toolCallId && isDeepStrictEqual(g.content, m.content)));
    const calls = msgs.flatMap((m) => (m.role === "assistant" ? (m.content as { type: string }[]).filter((c) => c.type === "toolCall") : []));
    const callsFound = calls.filter((c) => got.some((g) => g.role === "assistant" && (g.content as unknown[]).some((x) => isDeepStrictEqual(x, c))));
    console.log(`hermes recall [hermes-agent]: user+assistant text ${t.found}/${t.total}, tool calls ${callsFound.length}/${calls.length}, tool results ${resultsFound.length}/${results.length}`);
    expect([t.found, callsFound.length, resultsFound.length]).toEqual([t.total, calls.length, results.length]);
    expect(r.report.sessions[0].gaps.join(" ")).toMatch(/2 hermes sessions \(a parent_session_id chain\) joined/);
    expect(sha(db)).toBe(before);
  });

  it("answers a state.db tool call whose tool row never came (an interrupted turn) with a result marked as not recorded", async () => {
    const db = join(root, "state-cut.db");
    const msgs = piMessages(a.file);
    // hermes-agent writes the assistant row before running its tools: a crash leaves a call with no tool row.
    const cut = msgs.slice(0, msgs.findIndex((m) => m.role === "toolResult"));
    fillAgentDb(db, [{ id: "20261130_cut", parent: null, model: "faux-1", messages: cut }]);
    const run = await runCli(["--json", "salvage", "--from-hermes", db, "--cwd", cwdA, "--out", join(root, "out-cut")], tempEnv(root));
    expect(run.exitCode, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    const ctx = validateWithPi(readFileSync(report.sessions[0].file, "utf8"), { expectMessages: true }).context.messages as unknown as Msg[];
    expect(ctx.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
    const call = (ctx[1].content as { type: string; id: string; arguments: unknown }[]).find((b) => b.type === "toolCall")!;
    expect(call.arguments).toEqual({ command: "echo a; echo b" });
    expect(ctx[2]).toMatchObject({ toolCallId: call.id, toolName: "bash", isError: false, details: { _pi_guard: "result not recorded" } });
    expect(report.sessions[0].facts.kept).toMatchObject({ "tool calls with arguments": 1 });
    expect(report.sessions[0].facts.notKept).toMatchObject({ "tool results (not recorded)": 1 });
    expect(report.sessions[0].gaps.join(" ")).toMatch(/1 tool call\(s\) have no result row/);
    const human = await runCli(["salvage", "--from-hermes", db, "--cwd", cwdA, "--out", join(root, "out-cut-human")], tempEnv(root));
    console.log(`report [hermes-agent]:\n${human.stdout}${human.stderr}`);
  });

  it("reads a live WAL-mode database from a private copy, seeing rows only in -wal, writing none of the three files", async () => {
    const dir = mkdtempSync(join(root, "wal-"));
    const db = join(dir, "state.db");
    const live = fillAgentDb(db, [{ id: "live", parent: null, model: "faux-1", messages: piMessages(b.file) }], { wal: true, keepOpen: true });
    try {
      expect(existsSync(`${db}-wal`)).toBe(true);
      const hashes = () => ["", "-wal", "-shm"].map((s) => sha(`${db}${s}`));
      const before = hashes();
      const run = await runCli(["--json", "salvage", "--from-hermes", db, "--out", join(dir, "out"), "--cwd", "/p"], tempEnv(dir));
      expect(run.stderr).toBe("");
      expect(run.exitCode).toBe(0);
      const report = JSON.parse(run.stdout);
      expect(report.sessions[0].messages).toMatchObject({ user: 1, assistant: 1 });
      expect(report.sources[0].notes.join(" ")).toMatch(/private copy/);
      expect(hashes()).toEqual(before);
    } finally {
      live.close();
    }
  });
});
