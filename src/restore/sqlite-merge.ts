// `restore --session` into a SQLite database that exists live (opencode.db, Codex's state_5.sqlite):
// restoring the whole file would roll back every other session in it, so only the session's rows
// (the adapter's SessionRows) are made to equal the snapshot's: rows the live db lacks are added,
// rows that differ are replaced, and the session's rows the snapshot lacks are deleted (they are
// newer than the snapshot: the report names them as discarded; the caller has saved them in its
// pre-restore snapshot). No other session's row is touched.
//
// Each pass has one connection: the live db as `main`, a private copy of the snapshot's db
// attached as `snap` (never the snapshot in place), so rows are compared and copied by SQLite
// without passing through memory. The write is one IMMEDIATE transaction under a busy timeout (the agent may be running),
// with foreign keys off so that no cascade deletes a row the report does not count; instead the
// transaction checks, before it commits, that the merged rows equal the snapshot's (a trigger of
// the live db may not change them) and that no foreign key breaks that held before. A read-only
// pass checks and counts first (a dry run stops there).

import type Database from "better-sqlite3";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, openSync, readSync, closeSync, rmSync } from "node:fs";
import picomatch from "picomatch";
import type { AgentAdapter, FileRef, SessionRows, SessionRowsTable } from "../agents/types.js";
import { RepoError } from "../repo/errors.js";
import { sqlite, sqlIdent as q } from "../sqlite.js";
import { checkSchemas, type TableShape } from "./sqlite-schema.js";

export const DEFAULT_MERGE_BUSY_MS = 10_000;
/** Rows of one session in one table, on either side, at most: a hostile snapshot cannot make the merge endless. */
export const MAX_SESSION_ROWS = 5_000_000;
/** The discarded rows the report names by key, per table. */
const MAX_DISCARDED_KEYS = 100;
const SIDE_SUFFIXES = ["-wal", "-shm", "-journal"] as const;

export interface SqliteMergeOptions {
  /** The adapter's description of this db's session rows. */
  rows: SessionRows;
  /** A private, consistent copy of the snapshot's db (it may gain side files while open; those this merge made are removed). */
  snapshotCopy: string;
  /** The agent's db, which must exist. */
  live: string;
  sessionId: string;
  /** Count what would change; open the live db read-only and write nothing. */
  dryRun?: boolean;
  busyTimeoutMs?: number;
  maxRows?: number;
  /**
   * A snapshot whose db lacks the session means its live rows are all deleted, instead of a
   * refusal: `restore --undo` of a restore that brought a deleted session back.
   */
  absentDeletes?: boolean;
}

export interface TableMerge {
  table: string;
  added: number;
  replaced: number;
  /** The session's live rows the snapshot lacks: newer than the snapshot, discarded. */
  deleted: number;
  unchanged: number;
  /** The primary keys of the deleted rows (the first MAX_DISCARDED_KEYS), as JSON arrays. */
  discarded: string[];
}

export interface SqliteMergeReport {
  live: string;
  sessionId: string;
  dryRun: boolean;
  tables: TableMerge[];
  /** Shared rows (SharedRows) the live db lacked, added from the snapshot. */
  shared: { table: string; added: number }[];
  /** One-line remarks: a newer live schema, a table in neither db. */
  notes: string[];
}

/** The adapter's description of the session rows of the database `ref`, if it has one (first match, as copy rules). */
export function sessionRowsOf(adapter: AgentAdapter, ref: FileRef): SessionRows | undefined {
  return adapter.sessionRows?.find((r) => r.root === ref.root && picomatch(r.glob, { dot: true })(ref.path));
}

const SQLITE_MAGIC = Buffer.from("SQLite format 3\0", "latin1");

const sqliteCode = (err: unknown): string => String((err as { code?: unknown })?.code ?? "");

/** Refuses, in one line, a copy that is not a SQLite file, before SQLite is pointed at it. */
function checkCopy(file: string): void {
  const st = lstatSync(file, { throwIfNoEntry: false });
  if (!st?.isFile()) throw new RepoError(`${file}: the snapshot's copy is not a regular file`, "input");
  const head = Buffer.alloc(100);
  const fd = openSync(file, "r");
  try {
    if (readSync(fd, head, 0, head.length, 0) < head.length || !head.subarray(0, SQLITE_MAGIC.length).equals(SQLITE_MAGIC)) {
      throw new RepoError(`${file}: the snapshot's copy is not a SQLite database`, "input");
    }
  } finally {
    closeSync(fd);
  }
}

const keyMatch = (shape: TableShape) => shape.pk.map((c) => `l.${q(c)} = s.${q(c)}`).join(" AND ");
const sameRow = (shape: TableShape) => shape.columns.map((c) => `l.${q(c)} IS s.${q(c)}`).join(" AND ");
const mine = (alias: string, t: SessionRowsTable) => `${alias}.${q(t.column)} = @sid`;

/** The statements for one table of the description. */
function tableSql(t: SessionRowsTable, shape: TableShape) {
  const T = q(t.table);
  const k = keyMatch(shape);
  const cols = shape.columns.map(q).join(", ");
  const sCols = shape.columns.map((c) => `s.${q(c)}`).join(", ");
  const rest = shape.columns.filter((c) => !shape.pk.includes(c));
  const snapRow = `SELECT 1 FROM snap.${T} s WHERE ${k} AND ${mine("s", t)}`;
  const liveGone = `FROM main.${T} AS l WHERE ${mine("l", t)} AND NOT EXISTS (${snapRow})`;
  return {
    snapRows: `SELECT count(*) FROM snap.${T} s WHERE ${mine("s", t)}`,
    liveRows: `SELECT count(*) FROM main.${T} l WHERE ${mine("l", t)}`,
    added: `SELECT count(*) FROM snap.${T} s WHERE ${mine("s", t)} AND NOT EXISTS (SELECT 1 FROM main.${T} l WHERE ${k})`,
    // A key the snapshot gives this session that the live db gives to another one: copying it would touch that session.
    foreign: `SELECT count(*) FROM snap.${T} s JOIN main.${T} l ON ${k} WHERE ${mine("s", t)} AND l.${q(t.column)} IS NOT @sid`,
    changed: `SELECT count(*) FROM snap.${T} s JOIN main.${T} l ON ${k} WHERE ${mine("s", t)} AND ${mine("l", t)} AND NOT (${sameRow(shape)})`,
    same: `SELECT count(*) FROM snap.${T} s JOIN main.${T} l ON ${k} WHERE ${mine("s", t)} AND ${mine("l", t)} AND ${sameRow(shape)}`,
    deleted: `SELECT count(*) ${liveGone}`,
    discarded: `SELECT ${shape.pk.map((c) => `l.${q(c)}`).join(", ")} ${liveGone} LIMIT ${MAX_DISCARDED_KEYS}`,
    doDelete: `DELETE ${liveGone}`,
    doReplace: rest.length
      ? `UPDATE main.${T} AS l SET (${rest.map(q).join(", ")}) = (SELECT ${rest.map((c) => `s.${q(c)}`).join(", ")} FROM snap.${T} s WHERE ${k}) ` +
        `WHERE ${mine("l", t)} AND EXISTS (SELECT 1 FROM snap.${T} s WHERE ${k} AND ${mine("s", t)} AND NOT (${sameRow(shape)}))`
      : undefined,
    doAdd: `INSERT INTO main.${T} (${cols}) SELECT ${sCols} FROM snap.${T} s WHERE ${mine("s", t)} AND NOT EXISTS (SELECT 1 FROM main.${T} l WHERE ${k})`,
  };
}

/** The statements for shared rows the session's snapshot rows name and the live db lacks. */
function sharedSql(s: NonNullable<SessionRows["shared"]>[number], shape: TableShape, from: SessionRowsTable) {
  const named = `snap.${q(s.table)} s WHERE s.${q(s.column)} IN (SELECT x.${q(s.from.column)} FROM snap.${q(s.from.table)} x WHERE ${mine("x", from)}) AND NOT EXISTS (SELECT 1 FROM main.${q(s.table)} l WHERE l.${q(s.column)} = s.${q(s.column)})`;
  return {
    added: `SELECT count(*) FROM ${named}`,
    doAdd: `INSERT INTO main.${q(s.table)} (${shape.columns.map(q).join(", ")}) SELECT ${shape.columns.map((c) => `s.${q(c)}`).join(", ")} FROM ${named}`,
  };
}

const count = (db: Database, sql: string, sid: string): number => Number(db.prepare(sql).pluck().get({ sid }));

/** What the merge would do to each table, read inside the caller's transaction. */
function plan(db: Database, spec: SessionRows, shapes: Map<string, TableShape>, sid: string, maxRows: number, absentDeletes = false): { tables: TableMerge[]; shared: { table: string; added: number }[] } {
  const tables: TableMerge[] = [];
  for (const t of spec.tables) {
    const shape = shapes.get(t.table);
    if (!shape) continue;
    const sql = tableSql(t, shape);
    for (const [side, n] of [["the snapshot's db", count(db, sql.snapRows, sid)], ["the live db", count(db, sql.liveRows, sid)]] as const) {
      if (n > maxRows) throw new RepoError(`table ${t.table} of ${side} holds ${n} rows of session ${sid}, more than the ${maxRows} a merge reads`, "input");
    }
    const foreign = count(db, sql.foreign, sid);
    if (foreign) throw new RepoError(`table ${t.table}: ${foreign} row(s) of session ${sid} in the snapshot have keys that belong to other rows in the live db; nothing was written`, "input");
    const discarded = (db.prepare(sql.discarded).raw().all({ sid }) as unknown as unknown[][]).map((k) => JSON.stringify(k));
    tables.push({ table: t.table, added: count(db, sql.added, sid), replaced: count(db, sql.changed, sid), deleted: count(db, sql.deleted, sid), unchanged: count(db, sql.same, sid), discarded });
  }
  const shared = (spec.shared ?? [])
    .filter((s) => shapes.has(s.table) && shapes.has(s.from.table))
    .map((s) => ({ table: s.table, added: count(db, sharedSql(s, shapes.get(s.table)!, fromTable(spec, s.from.table)).added, sid) }));
  const tooMany = shared.find((s) => s.added > maxRows);
  if (tooMany) throw new RepoError(`table ${tooMany.table} of the snapshot's db holds ${tooMany.added} shared rows named by session ${sid}, more than the ${maxRows} a merge reads`, "input");
  const first = spec.tables[0];
  if (first && !absentDeletes && count(db, tableSql(first, shapes.get(first.table)!).snapRows, sid) === 0) {
    throw new RepoError(`session ${sid} has no row in table ${first.table} of the snapshot's db: nothing to restore`, "not-found");
  }
  return { tables, shared };
}

function fromTable(spec: SessionRows, table: string): SessionRowsTable {
  const t = spec.tables.find((x) => x.table === table);
  if (!t) throw new Error(`session rows: shared rows named by ${table}, which is not a table of the description`);
  return t;
}

/** The tables whose foreign keys the merge may break: its own, and every table referring to one of them. */
function fkTables(db: Database, touched: Set<string>): string[] {
  const all = db.prepare("SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' LIMIT 10000").pluck().all() as unknown as string[];
  return all.filter((t) => touched.has(t) || (db.prepare(`PRAGMA main.foreign_key_list(${q(t)})`).all() as { table: string }[]).some((fk) => touched.has(fk.table)));
}

/** Foreign-key violations per table (counted up to a bound: only an increase matters). */
function fkViolations(db: Database, tables: string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of tables) {
    let n = 0;
    for (const _ of db.prepare(`PRAGMA main.foreign_key_check(${q(t)})`).iterate()) if (++n > 1_000_000) break;
    out.set(t, n);
  }
  return out;
}

function writeRows(db: Database, spec: SessionRows, shapes: Map<string, TableShape>, sid: string, planned: ReturnType<typeof plan>): void {
  const run = (sql: string) => db.prepare(sql).run({ sid }).changes;
  const present = spec.tables.filter((t) => shapes.has(t.table));
  const fks = fkTables(db, new Set([...present.map((t) => t.table), ...planned.shared.map((s) => s.table)]));
  const before = fkViolations(db, fks);
  // Children before parents when deleting, parents (and the shared rows they name) first when adding.
  for (const t of [...present].reverse()) run(tableSql(t, shapes.get(t.table)!).doDelete);
  for (const s of spec.shared ?? []) if (shapes.has(s.table) && shapes.has(s.from.table)) run(sharedSql(s, shapes.get(s.table)!, fromTable(spec, s.from.table)).doAdd);
  for (const t of present) {
    const sql = tableSql(t, shapes.get(t.table)!);
    if (sql.doReplace) run(sql.doReplace);
    run(sql.doAdd);
  }
  const after = plan(db, spec, shapes, sid, Number.MAX_SAFE_INTEGER, true);
  const off = after.tables.find((t) => t.added || t.replaced || t.deleted);
  if (off) throw new RepoError(`table ${off.table} still differs from the snapshot after the merge (a trigger of the live db changed ${off.added + off.replaced + off.deleted} row(s)); nothing was written`, "io");
  const now = fkViolations(db, fks);
  const broken = fks.find((t) => (now.get(t) ?? 0) > (before.get(t) ?? 0));
  if (broken) throw new RepoError(`the merged rows break a foreign key of table ${broken} (${now.get(broken)} violation(s), ${before.get(broken)} before); nothing was written`, "input");
}

/** The live db as `main` (read-only or read-write) with the snapshot's copy attached as `snap`. */
function openBoth(opts: SqliteMergeOptions, write: boolean, busyMs: number): Database {
  const db = new (sqlite())(opts.live, { fileMustExist: true, readonly: !write, timeout: busyMs });
  try {
    db.pragma("foreign_keys = OFF");
    db.prepare("ATTACH DATABASE ? AS snap").run(opts.snapshotCopy);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/** One pass over the two dbs in one transaction: read-only (check and count), or the write. */
function pass(db: Database, opts: SqliteMergeOptions, write: boolean): SqliteMergeReport {
  const { rows: spec, live, sessionId: sid } = opts;
  db.exec(write ? "BEGIN IMMEDIATE" : "BEGIN");
  try {
    const notes: string[] = [];
    const shapes = checkSchemas(db, spec, notes);
    const planned = plan(db, spec, shapes, sid, opts.maxRows ?? MAX_SESSION_ROWS, opts.absentDeletes);
    if (write) writeRows(db, spec, shapes, sid, planned);
    db.exec(write ? "COMMIT" : "ROLLBACK");
    return { live, sessionId: sid, dryRun: !write, ...planned, notes };
  } catch (err) {
    if (db.inTransaction) db.exec("ROLLBACK");
    throw err;
  }
}

/**
 * Makes the live db hold exactly the snapshot's rows of one session (see the file's comment), or
 * with `dryRun` counts what that would do. Throws RepoError, one line, when the schemas differ
 * unsafely ("input"), the live db stays locked past the busy timeout ("locked"), the copy is not a
 * database ("input"), or the snapshot has no such session ("not-found"); then nothing is written.
 *
 * A read-only connection checks and counts first, and stays open until the end: the read-write one,
 * opened for the write alone, is then never the last connection to close, and SQLite's
 * checkpoint-on-last-close (which rewrites the db file from the WAL, even after a refusal rolled
 * everything back) does not run; the WAL is left as the agent leaves it.
 */
export function mergeSessionRows(opts: SqliteMergeOptions): SqliteMergeReport {
  const { snapshotCopy, live, sessionId: sid } = opts;
  const busyMs = opts.busyTimeoutMs ?? DEFAULT_MERGE_BUSY_MS;
  const prefix = `merge of session ${sid} into ${live}`;
  const madeSideFiles = SIDE_SUFFIXES.map((s) => snapshotCopy + s).filter((f) => !existsSync(f));
  try {
    checkCopy(snapshotCopy);
    if (!lstatSync(live, { throwIfNoEntry: false })?.isFile()) throw new RepoError(`the live db is not there`, "not-found");
    const reader = openBoth(opts, false, busyMs);
    try {
      const counted = pass(reader, opts, false);
      if (opts.dryRun) return counted;
      const writer = openBoth(opts, true, busyMs);
      try {
        return pass(writer, opts, true);
      } finally {
        writer.close();
      }
    } finally {
      reader.close();
    }
  } catch (err) {
    if (err instanceof RepoError) throw new RepoError(`${prefix}: ${err.message}`, err.kind);
    const code = sqliteCode(err);
    const msg = String((err as Error).message).split("\n")[0];
    if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) {
      throw new RepoError(`${prefix}: the live db stayed locked by another writer for ${busyMs} ms (is the agent running?); nothing was written`, "locked");
    }
    if (/^SQLITE_(NOTADB|CORRUPT)/.test(code)) throw new RepoError(`${prefix}: the live db or the snapshot's copy is unreadable (${msg}); nothing was written`, "corrupt");
    if (code.startsWith("SQLITE_")) throw new RepoError(`${prefix}: ${msg}; nothing was written`, "io");
    throw err;
  } finally {
    for (const f of madeSideFiles) rmSync(f, { force: true });
  }
}

/**
 * A digest of one session's rows in `db` (each table of the description in order, rows by primary
 * key): what a restore journal records right after a merge, so that `restore --undo` can tell
 * whether the agent changed that session since. Read-only; bounded as a merge is.
 */
export function sessionRowsDigest(spec: SessionRows, db: string, sid: string, maxRows = MAX_SESSION_ROWS): string {
  const conn = new (sqlite())(db, { fileMustExist: true, readonly: true });
  try {
    const hash = createHash("sha256");
    for (const t of spec.tables) {
      const cols = conn.prepare(`PRAGMA table_info(${q(t.table)})`).all() as { name: string; pk: number }[];
      if (!cols.length) continue;
      const pk = cols.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => q(c.name));
      hash.update(`\0table ${t.table}\n`);
      let n = 0;
      const rows = conn.prepare(`SELECT * FROM ${q(t.table)} WHERE ${q(t.column)} = ? ORDER BY ${pk.length ? pk.join(", ") : "rowid"}`).raw().iterate(sid) as Iterable<unknown[]>;
      for (const row of rows) {
        if (++n > maxRows) throw new RepoError(`table ${t.table} of ${db} holds more than ${maxRows} rows of session ${sid}`, "input");
        hash.update(JSON.stringify(row.map((v) => (Buffer.isBuffer(v) ? { b64: v.toString("base64") } : typeof v === "bigint" ? String(v) : v))) + "\n");
      }
    }
    return hash.digest("hex");
  } finally {
    conn.close();
  }
}
