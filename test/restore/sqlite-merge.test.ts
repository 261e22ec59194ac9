// restore/sqlite-merge.ts with the real agents, offline: one session's rows come back from a
// snapshot's consistent copy (the project's copySqlite) into a live db that other sessions kept
// writing to, and only that session's rows change. opencode 1.18.33: a session deleted by
// `opencode session delete` comes back beside a continued session and a newer one, opencode lists
// all three and continues the restored one; a session with newer rows than the snapshot loses them
// (reported as discarded), and a dry run counts the same without writing a byte. Codex 0.169.0: a
// thread whose threads row was deleted is listed again by Codex's own thread/list and resumed.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { CODEX_STATE_DB, codexAdapter } from "../../src/agents/codex/index.js";
import { opencodeAdapter } from "../../src/agents/opencode/index.js";
import type { SessionRows } from "../../src/agents/types.js";
import { RepoError } from "../../src/repo/errors.js";
import { mergeSessionRows, sessionRowsOf, type SqliteMergeReport } from "../../src/restore/sqlite-merge.js";
import { copySqlite, type SqliteCopy } from "../../src/snapshot/sqlite-copy.js";
import { codexHome, codexThreadList, runCodex, startCodexModel } from "../helpers/agents/codex.js";
import { opencodeCli, opencodeDb, opencodeSessions, runOpencode, startOpencodeModel } from "../helpers/agents/opencode.js";
import { callTool, type FakeModelServer, say, type Turn } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox, tempRoot } from "../helpers/tmp.js";

const OPENCODE_ROWS = opencodeAdapter.sessionRows![0];
const CODEX_STATE_ROWS = codexAdapter.sessionRows!.find((r) => r.glob === CODEX_STATE_DB)!;
const CODEX_HISTORY_ROWS = codexAdapter.sessionRows!.find((r) => r.glob === "thread_history_1.sqlite")!;

let sb: Sandbox | undefined;
let server: FakeModelServer | undefined;
const copies: SqliteCopy[] = [];
afterEach(async () => {
  for (const c of copies.splice(0)) await c.dispose();
  await server?.close();
  sb?.cleanup();
  sb = server = undefined;
});

/** A consistent copy of a live db, as a snapshot stores it (the project's copy module). */
async function snapshotCopy(sb: Sandbox, file: string): Promise<string> {
  const copy = await copySqlite(file, { stagingDir: sb.dir("test-staging") });
  copies.push(copy);
  return copy.path;
}

type Rows = Record<string, unknown[]>;

/** Runs `read` on a self-contained db file, opened read-only in a copy of its own (a read-only open leaves side files beside the file). */
function readDb<T>(file: string, read: (db: Database) => T): T {
  const dir = tempRoot("test-rows");
  copyFileSync(file, path.join(dir, "db"));
  const db = new Database(path.join(dir, "db"), { readonly: true, fileMustExist: true });
  try {
    return read(db);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const sorted = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).sort();

/** One session's rows in every table of the description, sorted. */
function rowsIn(file: string, spec: SessionRows, sid: string): Rows {
  return readDb(file, (db) => {
    const out: Rows = {};
    for (const t of spec.tables) {
      if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(t.table)) continue;
      out[t.table] = sorted(db.prepare(`SELECT * FROM "${t.table}" WHERE "${t.column}" = ?`).all(sid));
    }
    return out;
  });
}

/** Every row of every table that mentions `id` in any column: what a description of the session's rows must cover, found without it. */
function rowsMentioning(file: string, id: string): Rows {
  return readDb(file, (db) => {
    const out: Rows = {};
    for (const table of db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => String(r.name))) {
      const cols = db.prepare(`PRAGMA table_info("${table}")`).all().map((c) => `instr(CAST("${String(c.name)}" AS TEXT), @id) > 0`);
      const rows = db.prepare(`SELECT * FROM "${table}" WHERE ${cols.join(" OR ")}`).all({ id });
      if (rows.length) out[table] = sorted(rows);
    }
    return out;
  });
}

/** A session's rows in a live db, read through a consistent copy (the live db is never opened in place). */
async function liveRows(sb: Sandbox, live: string, spec: SessionRows, sid: string): Promise<Rows> {
  const copy = await copySqlite(live, { stagingDir: sb.dir("test-staging") });
  try {
    return rowsIn(copy.path, spec, sid);
  } finally {
    await copy.dispose();
  }
}

/** rowsMentioning of a live db, through a consistent copy. */
async function liveMentions(sb: Sandbox, live: string, id: string): Promise<Rows> {
  const copy = await copySqlite(live, { stagingDir: sb.dir("test-staging") });
  try {
    return rowsMentioning(copy.path, id);
  } finally {
    await copy.dispose();
  }
}

/** integrity_check and foreign_key_check of a live db, through a consistent copy. */
async function soundness(sb: Sandbox, live: string): Promise<{ integrity: unknown; fk: unknown[] }> {
  const copy = await copySqlite(live, { stagingDir: sb.dir("test-staging") });
  const db = new Database(copy.path, { readonly: true });
  try {
    return { integrity: db.pragma("integrity_check", { simple: true }), fk: db.pragma("foreign_key_check") as unknown[] };
  } finally {
    db.close();
    await copy.dispose();
  }
}

/**
 * The bytes of a db and its WAL, by name ("-" for a file that is not there). Not the -shm: it is
 * the WAL's index in shared memory, where every reader (a read-only one too, opencode too) marks
 * what it reads; it holds no rows.
 */
const fileHashes = (db: string): Record<string, string> =>
  Object.fromEntries(["", "-wal"].map((s) => [path.basename(db + s), existsSync(db + s) ? createHash("sha256").update(readFileSync(db + s)).digest("hex") : "-"]));

const counts = (r: SqliteMergeReport) => Object.fromEntries(r.tables.map((t) => [t.table, { added: t.added, replaced: t.replaced, deleted: t.deleted, unchanged: t.unchanged }]));

/** The RepoError a merge throws (a merge that succeeds fails the test). */
function refusal(run: () => unknown): RepoError {
  try {
    run();
  } catch (err) {
    if (err instanceof RepoError) return err;
    throw err;
  }
  throw new Error("the merge was not refused");
}


/**
 * Sessions A (answered by `aTurns`) and B, made by the real opencode in a new sandbox, and a
 * consistent copy of its db taken after them, as a snapshot holds it. The sandbox and the model
 * server are also the module's, for afterEach to end.
 */
async function twoSessions(label: string, aPrompt: string, aTurns: Turn[]): Promise<{ sb: Sandbox; server: FakeModelServer; a: string; b: string; live: string; snap: string }> {
  const box = (sb = makeSandbox(label));
  const model = (server = await startOpencodeModel(aTurns));
  const a = (await runOpencode(box, model, aPrompt)).sessionId;
  model.setScript([say("Session B answers.")]);
  const b = (await runOpencode(box, model, "session B: hello")).sessionId;
  const live = opencodeDb(box);
  return { sb: box, server: model, a, b, live, snap: await snapshotCopy(box, live) };
}

describe("which description a database's sessions have", () => {
  it("opencode's db (any channel, or moved by OPENCODE_DB), Codex's state_5.sqlite and thread_history_1.sqlite; no other file", () => {
    expect(sessionRowsOf(opencodeAdapter, { root: "opencode", path: "opencode.db" })?.tables[0]).toEqual({ table: "session", column: "id" });
    expect(sessionRowsOf(opencodeAdapter, { root: "opencode", path: "opencode-beta.db" })).toBeDefined();
    expect(sessionRowsOf(opencodeAdapter, { root: "opencode-db", path: "elsewhere.db" })).toBeDefined();
    expect(sessionRowsOf(opencodeAdapter, { root: "opencode", path: "auth.json" })).toBeUndefined();
    expect(sessionRowsOf(codexAdapter, { root: "codex", path: "state_5.sqlite" })?.tables[0]).toEqual({ table: "threads", column: "id" });
    expect(sessionRowsOf(codexAdapter, { root: "codex", path: "thread_history_1.sqlite" })?.tables[0].column).toBe("thread_id");
    expect(sessionRowsOf(codexAdapter, { root: "codex", path: "logs_2.sqlite" })).toBeUndefined();
    expect(sessionRowsOf(codexAdapter, { root: "opencode", path: "state_5.sqlite" })).toBeUndefined();
  });
});

describe("merge one opencode session's rows into the live opencode.db (real opencode 1.18.33)", () => {
  it("a session deleted by opencode comes back with exactly the snapshot's rows; a continued session and a newer one are untouched; opencode lists all three and continues the restored one", async () => {
    const { sb, server, a, b, live, snap } = await twoSessions("merge-oc", "session A: please run echo", [
      callTool("bash", { command: "echo merged-tool-output", description: "Print" }),
      say("Session A ran the tool."),
    ]);
    const snapA = rowsIn(snap, OPENCODE_ROWS, a);
    expect(snapA.part.join("\n")).toContain("merged-tool-output");

    // After the snapshot: A is deleted by opencode itself, B goes on, C is new.
    await opencodeCli(sb, ["session", "delete", a]);
    expect(await opencodeSessions(sb)).not.toContain(a);
    server.setScript([say("Session B, second answer.")]);
    await runOpencode(sb, server, "session B: one more", { session: b });
    server.setScript([say("Session C answers.")]);
    const c = (await runOpencode(sb, server, "session C: new")).sessionId;
    const before = { b: await liveRows(sb, live, OPENCODE_ROWS, b), c: await liveRows(sb, live, OPENCODE_ROWS, c) };
    expect(before.b.message.length).toBeGreaterThan(rowsIn(snap, OPENCODE_ROWS, b).message.length);
    // opencode's delete left no row anywhere that names A.
    expect(await liveMentions(sb, live, a)).toEqual({});

    const dry = mergeSessionRows({ rows: OPENCODE_ROWS, snapshotCopy: snap, live, sessionId: a, dryRun: true });
    const report = mergeSessionRows({ rows: OPENCODE_ROWS, snapshotCopy: snap, live, sessionId: a });
    expect(report.dryRun).toBe(false);
    expect(counts(report)).toEqual(counts(dry));
    for (const t of report.tables) expect({ table: t.table, added: t.added, replaced: t.replaced, deleted: t.deleted, unchanged: t.unchanged }).toEqual({ table: t.table, added: snapA[t.table].length, replaced: 0, deleted: 0, unchanged: 0 });
    expect(report.tables.find((t) => t.table === "part")!.added).toBeGreaterThan(0);

    expect(await liveRows(sb, live, OPENCODE_ROWS, a)).toEqual(snapA);
    expect(await liveRows(sb, live, OPENCODE_ROWS, b)).toEqual(before.b);
    expect(await liveRows(sb, live, OPENCODE_ROWS, c)).toEqual(before.c);
    // Whatever names A anywhere in the db is back as it was, described or not.
    expect(Object.keys(rowsMentioning(snap, a))).toEqual(expect.arrayContaining(["session", "message", "part", "event", "event_sequence"]));
    expect(await liveMentions(sb, live, a)).toEqual(rowsMentioning(snap, a));
    expect(await soundness(sb, live)).toEqual({ integrity: "ok", fk: [] });
    // No side file is left beside the snapshot's copy.
    expect(["-wal", "-shm", "-journal"].filter((s) => existsSync(snap + s))).toEqual([]);

    expect(await opencodeSessions(sb)).toEqual(expect.arrayContaining([a, b, c]));
    server.setScript([say("Back in session A.")]);
    const resumed = await runOpencode(sb, server, "session A: are you there?", { session: a });
    expect(resumed.sessionId).toBe(a);
    expect(resumed.text).toContain("Back in session A.");
    const history = JSON.stringify((server.turnRequests.at(-1)!.json as { messages: unknown[] }).messages);
    expect(history).toContain("session A: please run echo");
    expect(history).toContain("merged-tool-output");
    expect(history).not.toContain("session B");
  }, 300_000);

  it("a session whose live rows are newer than the snapshot's: the newer rows are deleted and named as discarded; a dry run counts the same and writes nothing", async () => {
    const { sb, server, a, b, live, snap } = await twoSessions("merge-oc-newer", "session A: first", [say("First answer in A.")]);
    const snapA = rowsIn(snap, OPENCODE_ROWS, a);
    server.setScript([say("A newer answer that the restore discards.")]);
    await runOpencode(sb, server, "session A: a newer turn", { session: a });
    const newer = await liveRows(sb, live, OPENCODE_ROWS, a);
    const newMessages = newer.message.filter((m) => !snapA.message.includes(m)).map((m) => (JSON.parse(m as string) as { id: string }).id);
    expect(newMessages.length).toBeGreaterThanOrEqual(2);
    const bBefore = await liveRows(sb, live, OPENCODE_ROWS, b);

    const bytes = fileHashes(live);
    const dry = mergeSessionRows({ rows: OPENCODE_ROWS, snapshotCopy: snap, live, sessionId: a, dryRun: true });
    expect(fileHashes(live)).toEqual(bytes);
    expect(dry.dryRun).toBe(true);
    const message = dry.tables.find((t) => t.table === "message")!;
    expect(message.deleted).toBe(newMessages.length);
    expect(message.discarded.map((k) => (JSON.parse(k) as string[])[0]).sort()).toEqual([...newMessages].sort());
    expect(dry.tables.find((t) => t.table === "part")!.deleted).toBeGreaterThan(0);
    expect(dry.tables.find((t) => t.table === "event")!.deleted).toBeGreaterThan(0);
    // The session row itself (its time_updated) and its event counter changed with the newer turn.
    expect(dry.tables.find((t) => t.table === "session")).toMatchObject({ replaced: 1, added: 0, deleted: 0 });
    expect(dry.tables.find((t) => t.table === "event_sequence")).toMatchObject({ replaced: 1 });
    expect(await liveRows(sb, live, OPENCODE_ROWS, a)).toEqual(newer);

    const report = mergeSessionRows({ rows: OPENCODE_ROWS, snapshotCopy: snap, live, sessionId: a });
    expect(report.tables).toEqual(dry.tables);
    expect(await liveRows(sb, live, OPENCODE_ROWS, a)).toEqual(snapA);
    expect(await liveMentions(sb, live, a)).toEqual(rowsMentioning(snap, a));
    expect(await liveRows(sb, live, OPENCODE_ROWS, b)).toEqual(bBefore);
    expect(await soundness(sb, live)).toEqual({ integrity: "ok", fk: [] });

    // opencode continues A from the snapshot's state: the discarded turn is not in its history.
    server.setScript([say("A, continued after the merge.")]);
    const resumed = await runOpencode(sb, server, "session A: still there?", { session: a });
    expect(resumed.text).toContain("A, continued after the merge.");
    const history = JSON.stringify((server.turnRequests.at(-1)!.json as { messages: unknown[] }).messages);
    expect(history).toContain("session A: first");
    expect(history).not.toContain("a newer turn");
  }, 300_000);
});

describe("merge one Codex thread's rows into the live state_5.sqlite (real Codex 0.169.0)", () => {
  it("a thread whose threads row was deleted is listed by Codex again after the merge, the other thread's rows untouched, and codex resumes it", async () => {
    sb = makeSandbox("merge-codex");
    server = await startCodexModel([callTool("exec_command", { cmd: "echo codex-merge-tool" }), say("Thread X ran the tool.")]);
    const x = await runCodex(sb, server, "thread X: run the echo");
    server.setScript([say("Thread Y answers.")]);
    const y = await runCodex(sb, server, "thread Y: hello");
    const state = path.join(codexHome(sb), CODEX_STATE_DB);
    const history = path.join(codexHome(sb), "thread_history_1.sqlite");
    const snapState = await snapshotCopy(sb, state);
    const snapHistory = await snapshotCopy(sb, history);
    expect((await codexThreadList(sb, server)).map((t) => t.id).sort()).toEqual([x.sessionId, y.sessionId].sort());

    // As users report: the row goes, the rollout stays (codex is not running).
    const db = new Database(state);
    expect(db.prepare("DELETE FROM threads WHERE id = ?").run(x.sessionId).changes).toBe(1);
    db.close();
    expect((await codexThreadList(sb, server)).map((t) => t.id)).toEqual([y.sessionId]);
    const yBefore = await liveRows(sb, state, CODEX_STATE_ROWS, y.sessionId);
    const xHistory = await liveRows(sb, history, CODEX_HISTORY_ROWS, x.sessionId);
    expect(xHistory.thread_items.length).toBeGreaterThan(0);

    const report = mergeSessionRows({ rows: CODEX_STATE_ROWS, snapshotCopy: snapState, live: state, sessionId: x.sessionId });
    expect(report.tables.find((t) => t.table === "threads")).toMatchObject({ added: 1, replaced: 0, deleted: 0 });
    expect(report.tables.every((t) => t.deleted === 0)).toBe(true);
    // The history projection was not touched by the loss: merging it changes nothing.
    const historyReport = mergeSessionRows({ rows: CODEX_HISTORY_ROWS, snapshotCopy: snapHistory, live: history, sessionId: x.sessionId });
    expect(historyReport.tables.every((t) => t.added + t.replaced + t.deleted === 0)).toBe(true);
    expect(historyReport.tables.find((t) => t.table === "thread_items")!.unchanged).toBe(xHistory.thread_items.length);

    expect(await liveRows(sb, state, CODEX_STATE_ROWS, x.sessionId)).toEqual(rowsIn(snapState, CODEX_STATE_ROWS, x.sessionId));
    expect(await liveMentions(sb, state, x.sessionId)).toEqual(rowsMentioning(snapState, x.sessionId));
    expect(await liveRows(sb, state, CODEX_STATE_ROWS, y.sessionId)).toEqual(yBefore);
    expect(await soundness(sb, state)).toEqual({ integrity: "ok", fk: [] });
    const listed = await codexThreadList(sb, server);
    expect(listed.map((t) => t.id).sort()).toEqual([x.sessionId, y.sessionId].sort());
    expect(listed.find((t) => t.id === x.sessionId)).toMatchObject({ path: x.rollout, preview: "thread X: run the echo" });

    server.setScript([say("Thread X resumed after the merge.")]);
    const resumed = await runCodex(sb, server, "thread X: what did the echo print?", { resume: x.sessionId });
    expect(resumed.sessionId).toBe(x.sessionId);
    expect(resumed.text).toBe("Thread X resumed after the merge.");
    expect(server.turnRequests.at(-1)!.body).toContain("codex-merge-tool");
  }, 300_000);
});

describe("a merge that cannot be done safely is refused in one line and writes nothing", () => {
  /** A real opencode db with session A deleted after its snapshot copy: a merge of A would write. */
  async function deletedSession(): Promise<{ live: string; snap: string; a: string }> {
    const { a, live, snap } = await twoSessions("merge-refused", "session A", [say("A answers.")]);
    await opencodeCli(sb!, ["session", "delete", a]);
    return { live, snap, a };
  }

  /** A private copy of the snapshot's copy, changed by `sql` (a schema of another opencode version, hostile rows). */
  function variant(sb: Sandbox, snap: string, name: string, sql: string): string {
    const file = path.join(sb.dir("variants"), `${name}.db`);
    copyFileSync(snap, file);
    const db = new Database(file);
    // As a hostile or damaged snapshot may hold them: rows SQLite's own checks would refuse.
    db.pragma("foreign_keys = OFF");
    db.exec(sql);
    db.close();
    return file;
  }

  it("schema mismatches (a newer migration in the snapshot, a column or a table only the live db has, a view), and snapshot rows that would break a foreign key, take another session's keys, or exceed the bound", async () => {
    const { live, snap, a } = await deletedSession();
    const bytes = fileHashes(live);
    const cases: [string, string, RegExp][] = [
      ["newer", "INSERT INTO migration VALUES ('29990101000000_from_the_future', 0)", /the snapshot's db has 1 migration\(s\) the live db lacks \(29990101000000_from_the_future\): its schema is newer/],
      ["no-column", "ALTER TABLE message DROP COLUMN time_updated", /column message\.time_updated is in the live db but not in the snapshot's/],
      ["no-table", "DROP TABLE todo", /table todo is in the live db but not in the snapshot's/],
      ["view", "DROP TABLE part; CREATE VIEW part AS SELECT * FROM message", /part in the snapshot's db is not a plain table/],
    ];
    for (const [name, sql, why] of cases) {
      const err = refusal(() => mergeSessionRows({ rows: OPENCODE_ROWS, snapshotCopy: variant(sb!, snap, name, sql), live, sessionId: a }));
      expect(err.kind, name).toBe("input");
      expect(err.message, name).toMatch(why);
      expect(err.message, name).toMatch(/^merge of session ses_\S+ into \S+opencode\.db: the schemas differ: .*; nothing was written$/);
      expect(err.message).not.toContain("\n");
      expect(fileHashes(live), name).toEqual(bytes);
    }
    // Rows that would reach beyond the session: a part of A naming a message that is nowhere (a
    // broken foreign key), B's messages given to A in the snapshot (keys of another session's
    // rows live), more rows than the merge may read.
    const hostile: [string, string, RegExp, number?][] = [
      ["orphan", `INSERT INTO part SELECT 'prt_orphan', 'msg_nowhere', session_id, time_created, time_updated, data FROM part WHERE session_id = '${a}' LIMIT 1`, /the merged rows break a foreign key of table part \(1 violation\(s\), 0 before\); nothing was written$/],
      ["stolen", `UPDATE message SET session_id = '${a}' WHERE session_id <> '${a}'`, /table message: \d+ row\(s\) of session ses_\S+ in the snapshot have keys that belong to other rows in the live db; nothing was written$/],
      ["bound", "SELECT 1", /table message of the snapshot's db holds \d+ rows of session ses_\S+, more than the 1 a merge reads$/, 1],
    ];
    for (const [name, sql, why, maxRows] of hostile) {
      const err = refusal(() => mergeSessionRows({ rows: OPENCODE_ROWS, snapshotCopy: variant(sb!, snap, name, sql), live, sessionId: a, ...(maxRows ? { maxRows } : {}) }));
      expect(err.message, name).toMatch(why);
      expect(err.message).not.toContain("\n");
      expect(fileHashes(live), name).toEqual(bytes);
    }
    expect(await liveMentions(sb!, live, a)).toEqual({});
    // A session the snapshot does not have: nothing to do, so nothing deleted.
    const missing = refusal(() => mergeSessionRows({ rows: OPENCODE_ROWS, snapshotCopy: snap, live, sessionId: "ses_not_in_the_snapshot" }));
    expect(missing.kind).toBe("not-found");
    expect(fileHashes(live)).toEqual(bytes);
  }, 300_000);

  it("a snapshot copy that is not a database, or a damaged one", async () => {
    const { live, snap, a } = await deletedSession();
    const bytes = fileHashes(live);
    const text = path.join(sb!.dir("bad"), "text.db");
    writeFileSync(text, "this is not a database\n".repeat(20));
    const notDb = refusal(() => mergeSessionRows({ rows: OPENCODE_ROWS, snapshotCopy: text, live, sessionId: a }));
    expect(notDb.kind).toBe("input");
    expect(notDb.message).toMatch(/text\.db: the snapshot's copy is not a SQLite database$/);
    // The right header, then garbage where the schema should be.
    const damaged = path.join(sb!.dir("bad"), "damaged.db");
    const head = readFileSync(snap).subarray(0, 100);
    writeFileSync(damaged, Buffer.concat([head, Buffer.alloc(readFileSync(snap).length - 100, 0xa5)]));
    const bad = refusal(() => mergeSessionRows({ rows: OPENCODE_ROWS, snapshotCopy: damaged, live, sessionId: a }));
    expect(bad.kind).toBe("corrupt");
    expect(bad.message).toMatch(/unreadable \(.+\); nothing was written$/);
    expect(bad.message).not.toContain("\n");
    expect(fileHashes(live)).toEqual(bytes);
    expect(["-wal", "-shm", "-journal"].filter((s) => existsSync(text + s) || existsSync(damaged + s))).toEqual([]);
  }, 300_000);

  /** A second real connection, in another process, holding a write transaction on `db` until it is told to end it (or for `holdMs`, then commits). */
  async function holdWriteLock(db: string, holdMs?: number): Promise<{ release(): Promise<void> }> {
    const script = `
      const db = new (require(process.argv[1]))(process.argv[2]);
      db.exec("BEGIN IMMEDIATE");
      db.prepare("UPDATE project SET time_updated = time_updated").run();
      console.log("locked");
      const end = (sql) => { db.exec(sql); db.close(); process.exit(0); };
      const hold = Number(process.argv[3]);
      if (hold >= 0) setTimeout(() => end("COMMIT"), hold);
      process.stdin.on("data", () => end("ROLLBACK"));`;
    const child = spawn(process.execPath, ["-e", script, createRequire(import.meta.url).resolve("better-sqlite3"), db, String(holdMs ?? -1)], { stdio: ["pipe", "pipe", "inherit"] });
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    await new Promise<void>((resolve, reject) => {
      child.stdout.setEncoding("utf8").on("data", (d: string) => d.includes("locked") && resolve());
      child.once("exit", (code) => reject(new Error(`the lock holder exited (${code}) before locking`)));
    });
    return {
      async release() {
        child.stdin.write("end\n");
        await exited;
      },
    };
  }

  it("a live db locked by another writer: the merge waits for it, and fails in one line with nothing written while it stays locked", async () => {
    const { live, snap, a } = await deletedSession();
    const lock = await holdWriteLock(live);
    const err = refusal(() => mergeSessionRows({ rows: OPENCODE_ROWS, snapshotCopy: snap, live, sessionId: a, busyTimeoutMs: 500 }));
    await lock.release();
    expect(err.kind).toBe("locked");
    expect(err.message).toMatch(/^merge of session ses_\S+ into \S+: the live db stayed locked by another writer for 500 ms \(is the agent running\?\); nothing was written$/);
    expect(await liveRows(sb!, live, OPENCODE_ROWS, a)).toMatchObject({ session: [], message: [], part: [], event: [] });

    // A writer that finishes while the merge waits: the merge goes through after it.
    await holdWriteLock(live, 300);
    const report = mergeSessionRows({ rows: OPENCODE_ROWS, snapshotCopy: snap, live, sessionId: a, busyTimeoutMs: 60_000 });
    expect(report.tables.find((t) => t.table === "session")).toMatchObject({ added: 1 });
    expect(await liveRows(sb!, live, OPENCODE_ROWS, a)).toEqual(rowsIn(snap, OPENCODE_ROWS, a));
    expect(await opencodeSessions(sb!)).toContain(a);
  }, 300_000);
});
