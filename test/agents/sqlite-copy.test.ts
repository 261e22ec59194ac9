// The consistent SQLite copy (src/snapshot/sqlite-copy.ts) and its wiring in the snapshotter and
// restore: a live WAL-mode db is copied without a byte or an mtime changing in its dir, a snapshot
// taken while a real writer process commits rows holds a sound db with a prefix of those rows under
// the db's own path (and no -wal/-shm), a restore leaves no stale side files, and a corrupt db is
// refused as damaged data.
import Database from "better-sqlite3";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RepoError } from "../../src/repo/errors.js";
import { restoreSnapshot } from "../../src/restore/restorer.js";
import { copySqlite } from "../../src/snapshot/sqlite-copy.js";
import { openEngine } from "../snapshot/engine.js";
import { cli, initRepo, ok, PROJECT_ROOT } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox | undefined;
let writer: ChildProcess | undefined;
const open: Database[] = [];
afterEach(() => {
  writer?.kill("SIGKILL");
  for (const db of open.splice(0)) db.close();
  sb?.cleanup();
  sb = writer = undefined;
});

/** name → [size, mtimeMs, ctimeMs] of every entry in `dir`. */
const listing = (dir: string) => Object.fromEntries(readdirSync(dir).map((n) => [n, ((s) => [s.size, s.mtimeMs, s.ctimeMs])(statSync(path.join(dir, n)))]));

/** A WAL-mode db with `rows` rows, held open (as opencode holds it) with nothing checkpointed. */
function liveDb(file: string, rows: number): Database {
  const db = new Database(file);
  open.push(db);
  db.pragma("journal_mode = WAL");
  db.pragma("wal_autocheckpoint = 0");
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
  const ins = db.prepare("INSERT INTO t (id, body) VALUES (?, ?)");
  for (let i = 1; i <= rows; i++) ins.run(i, `row ${i} ${"x".repeat(200)}`);
  return db;
}

const rowsOf = (file: string): number[] => {
  const db = new Database(file, { readonly: true });
  try {
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    return db.prepare("SELECT id FROM t ORDER BY id").all().map((r) => Number(r.id));
  } finally {
    db.close();
  }
};

// Commits one row per transaction as fast as it can, with a checkpoint every few pages (so the
// db file itself is rewritten while it is copied), and writes its committed count to `countFile`.
const WRITER = `
const Database = require("better-sqlite3");
const fs = require("node:fs");
const [file, countFile] = process.argv.slice(1);
const db = new Database(file);
db.pragma("journal_mode = WAL");
db.exec("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
const ins = db.prepare("INSERT INTO t (id, body) VALUES (?, ?)");
let n = db.prepare("SELECT count(*) AS n FROM t").get().n;
// An agent's pace: a transaction of a few rows, then a breath (a tight loop of one-row commits
// restarts the WAL faster than any raw copy can be taken: docs/FORMAT.md §10, "SQLite databases").
const nap = new Int32Array(new SharedArrayBuffer(4));
const batch = db.transaction((k) => { for (let i = 0; i < k; i++) { n++; ins.run(n, "row " + n + " " + "y".repeat(300 + (n % 700))); } });
for (;;) {
  batch(50);
  // Written whole (temp and rename): a reader that met the truncated file read 0 rows committed.
  fs.writeFileSync(countFile + ".tmp", String(n));
  fs.renameSync(countFile + ".tmp", countFile);
  Atomics.wait(nap, 0, 0, 2);
}
`;

function startWriter(file: string, countFile: string): Promise<void> {
  writer = spawn(process.execPath, ["-e", WRITER, file, countFile], { cwd: PROJECT_ROOT, stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolve, reject) => {
    writer!.on("exit", (code) => reject(new Error(`writer exited ${code}`)));
    const poll = setInterval(() => {
      if (existsSync(countFile) && Number(readFileSync(countFile, "utf8")) >= 2000) {
        clearInterval(poll);
        resolve();
      }
    }, 20);
  });
}

describe("consistent SQLite copy", () => {
  it("copies a live WAL db with uncheckpointed rows, leaving the db's dir exactly as it was (names, sizes, mtimes, ctimes)", async () => {
    sb = makeSandbox("sqlite-ro");
    const dir = sb.dir("agent-data");
    const file = path.join(dir, "opencode.db");
    liveDb(file, 500);
    expect(existsSync(`${file}-wal`)).toBe(true);
    const before = listing(dir);
    const copy = await copySqlite(file, { stagingDir: sb.dir("staging") });
    try {
      expect(listing(dir)).toEqual(before);
      expect(path.dirname(copy.path).startsWith(path.join(sb.root, "staging"))).toBe(true);
      // Every row, those only in the WAL too, in one file with no side files.
      expect(readdirSync(path.dirname(copy.path)).filter((n) => n.startsWith("copy.db"))).toEqual(["copy.db"]);
      expect(rowsOf(copy.path)).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
    } finally {
      await copy.dispose();
    }
    expect(listing(dir)).toEqual(before);
  });

  it("refuses a corrupt db as damaged data (RepoError corrupt), naming it", async () => {
    sb = makeSandbox("sqlite-bad");
    const file = path.join(sb.dir("agent-data"), "opencode.db");
    const db = new Database(file);
    db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)");
    for (let i = 0; i < 300; i++) db.prepare("INSERT INTO t (body) VALUES (?)").run("z".repeat(500));
    db.close();
    const bytes = readFileSync(file);
    bytes.fill(0x55, 4096 + 8, 4096 * 3); // the b-tree pages after the schema page
    writeFileSync(file, bytes);
    const err = await copySqlite(file, { stagingDir: sb.dir("staging") }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RepoError);
    expect((err as RepoError).kind).toBe("corrupt");
    expect((err as Error).message).toContain(file);
    expect((err as Error).message.split("\n")).toHaveLength(1);
    // Nothing left behind in staging.
    expect(readdirSync(path.join(sb.root, "staging", "sqlite"))).toEqual([]);
  });

  it("keeps a db SQLite cannot read byte for byte, with its side files, and says so: one bad file never fails the snapshot", async () => {
    sb = makeSandbox("sqlite-unreadable");
    await initRepo(sb);
    // pi's copy rules mark pi-hermes-memory/sessions.db as SQLite; this one is not a database at all.
    const dir = path.join(sb.agentDir, "pi-hermes-memory");
    mkdirSync(dir, { recursive: true });
    const junk = Buffer.from("these are not the pages of a SQLite database\n".repeat(200));
    writeFileSync(path.join(dir, "sessions.db"), junk);
    writeFileSync(path.join(dir, "sessions.db-wal"), "a stray wal\n");
    writeFileSync(path.join(sb.agentDir, "auth.json"), '{"k":"v"}\n');
    const r = await cli(sb, ["snapshot", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/pi-hermes-memory\/sessions\.db: not a sound SQLite database .*; stored as it is, byte for byte/);
    expect(JSON.parse(r.stdout).skipped ?? []).toEqual([]);
    const target = sb.dir("then");
    await ok(sb, ["restore", "latest", "--target", target]);
    const back = readdirSync(target, { recursive: true }).map(String);
    const db = back.find((f) => f.endsWith("pi-hermes-memory/sessions.db"));
    expect(db, back.join(", ")).toBeDefined();
    expect(readFileSync(path.join(target, db!)).equals(junk)).toBe(true);
    expect(readFileSync(path.join(target, `${db!}-wal`), "utf8")).toBe("a stray wal\n");
  }, 120_000);

  it("snapshots a db while a real writer process commits rows: the stored db is sound, holds a prefix of the committed rows, and comes back with no stale -wal/-shm", async () => {
    sb = makeSandbox("sqlite-busy");
    await initRepo(sb);
    mkdirSync(sb.agentDir, { recursive: true });
    const file = path.join(sb.agentDir, "opencode.db");
    const countFile = path.join(sb.root, "count");
    await startWriter(file, countFile);
    const engine = await openEngine(sb);
    const committedBefore = Number(readFileSync(countFile, "utf8"));
    const snap = await engine.snap({ copyKind: (_root, rel) => (rel === "opencode.db" ? "sqlite-wal" : undefined) });
    const committedAfter = Number(readFileSync(countFile, "utf8")) + 50;
    writer!.kill("SIGKILL");
    writer = undefined;

    const nodes = await engine.nodes(snap);
    expect(nodes.filter((n) => n.type === "file").map((n) => n.path)).toEqual(["opencode.db"]);
    expect(snap.snapshot.skipped).toBeUndefined();
    const stored = path.join(sb.root, "stored.db");
    writeFileSync(stored, await engine.bytes(await engine.node(snap, "opencode.db")));
    const rows = rowsOf(stored);
    expect(rows.length).toBeGreaterThanOrEqual(committedBefore);
    expect(rows.length).toBeLessThanOrEqual(committedAfter);
    expect(rows).toEqual(Array.from({ length: rows.length }, (_, i) => i + 1));

    // The writer died (kill -9) with its WAL and shm in place: the restore replaces the db and drops them.
    expect(existsSync(`${file}-wal`)).toBe(true);
    const report = await restoreSnapshot(engine.repo, { id: snap.id, snapshot: snap.snapshot }, { destinations: { agent: sb.agentDir } });
    expect(report.failed).toEqual([]);
    expect(readdirSync(sb.agentDir).filter((n) => n.startsWith("opencode.db"))).toEqual(["opencode.db"]);
    expect(readFileSync(file).equals(readFileSync(stored))).toBe(true);
    expect(rowsOf(file)).toEqual(rows);
  }, 120_000);
});
