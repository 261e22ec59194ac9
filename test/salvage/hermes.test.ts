import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { salvage } from "../../src/salvage/salvage.js";
import { bigText, fauxText, fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { runCli, tempEnv } from "./cli.js";
import { fillAgentDb, fillMemoryDb, hermesTruncate, piIndexed, piMessages, textOf } from "./hermes-fill.js";
import { formatRecall, jsonModeLog, measureRecall } from "./log-shapes.js";

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
  root = mkdtempSync(join(tmpdir(), "pi-guard-hermes-"));
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
