// The full-text index behind `sessions search`: SQLite FTS5 (better-sqlite3) in
// <dataDir>/search/index.sqlite. It holds text derived from the catalog's newest version of each
// session, so it is never the only copy of anything: delete it and the next search rebuilds it.
// Each session is recorded with the catalog's version key; only sessions whose key changed are
// read and indexed again, each in its own transaction, so an interrupted run keeps what it did.
// A session that only grew (pi appends) has just its new lines indexed, as a new segment.

import type BetterSqlite3 from "better-sqlite3";
import { createHash } from "node:crypto";
import { chmodSync, closeSync, openSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { makeDirs } from "../fs-safe.js";
import { RepoError } from "../repo/errors.js";
import type { SessionCatalog } from "./catalog.js";
import type { IndexedEntry } from "./search-text.js";

// Loaded as CommonJS: importing it from ESM would first scan its source for named exports.
const Database = createRequire(import.meta.url)("better-sqlite3") as typeof BetterSqlite3;
type Database = BetterSqlite3;

/** Bump when the schema or the indexed text changes: an older index is dropped and rebuilt. */
const SCHEMA_VERSION = "6";

/**
 * Entries are indexed in segments: all of a session's entries when it is (re)indexed, or just the
 * lines it gained. An entry's rowid is its segment's sid times ENTRY_SLOTS plus its position, so
 * a ranked rowid names its session without a join, and a segment is one rowid range. Every new
 * segment takes the largest sid, so higher rowids are newer entries.
 */
export const ENTRY_BITS = 20;
export const ENTRY_SLOTS = 2 ** ENTRY_BITS;

/** Bytes at each end of the indexed part of a file that must be unchanged for an append. */
const EDGE_BYTES = 4096;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (session_id TEXT PRIMARY KEY, agent TEXT NOT NULL, version_key TEXT NOT NULL, indexed_bytes INTEGER NOT NULL, edge_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS segments (sid INTEGER PRIMARY KEY, session_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS segments_session ON segments(session_id);
CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, entry_id TEXT NOT NULL, kind TEXT NOT NULL, ts TEXT NOT NULL, text TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(text, content='entries', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS entries_ai AFTER INSERT ON entries BEGIN INSERT INTO fts(rowid, text) VALUES (new.id, new.text); END;
CREATE TRIGGER IF NOT EXISTS entries_ad AFTER DELETE ON entries BEGIN INSERT INTO fts(fts, rowid, text) VALUES ('delete', old.id, old.text); END;
`;

export interface SyncReport {
  sessions: number;
  /** Sessions read and indexed in this run... */
  indexed: number;
  /** ...of which this many had only grown, so only their new lines were indexed. */
  appended: number;
  removed: number;
  ms: number;
  /** What reading the indexed sessions found that the user must hear (entries indexed in part). */
  warnings: string[];
}

/** What the index knows of a session's indexed version. */
interface DocState {
  /** The catalog's version key. */
  key: string;
  /** Length of the indexed version when it ended with a whole line, else 0 (no appends then). */
  bytes: number;
  /** SHA-256 of its first and last EDGE_BYTES: unchanged means the file only grew since. */
  edge: string;
}

function edgeHash(bytes: Uint8Array, length: number): string {
  return createHash("sha256")
    .update(bytes.subarray(0, Math.min(EDGE_BYTES, length)))
    .update(bytes.subarray(Math.max(0, length - EDGE_BYTES), length))
    .digest("hex");
}

/**
 * Warnings about one session, named; `before` is the part of the file an append skipped (the
 * lines of `warnings` count from the header, so they move down by its lines but the header).
 */
function sessionWarnings(id: string, warnings: string[], before: Uint8Array | undefined): string[] {
  let skipped = 0;
  if (before) for (let i = before.indexOf(0x0a); i !== -1; i = before.indexOf(0x0a, i + 1)) skipped++;
  const moved = (w: string) => (skipped > 1 ? w.replace(/^line (\d+):/, (_, n: string) => `line ${Number(n) === 1 ? 1 : Number(n) + skipped - 1}:`) : w);
  return warnings.map((w) => `session ${id}: ${moved(w)}`);
}

export function searchIndexFile(dataDir: string): string {
  return path.join(dataDir, "search", "index.sqlite");
}

export class SearchIndex {
  private docs?: Map<string, DocState>;
  private segments?: Map<number, string>;

  private constructor(readonly db: Database) {}

  /** Open (or create) the index in `dataDir`. SQLite errors are left to `withSearchIndex`. */
  static async open(dataDir: string): Promise<SearchIndex> {
    const file = searchIndexFile(dataDir);
    try {
      await makeDirs(path.dirname(file), 0o700);
      // The index holds session text: private like the sessions (SQLite copies this mode to -wal and -shm).
      closeSync(openSync(file, "a", 0o600));
      chmodSync(file, 0o600);
    } catch (err) {
      throw new RepoError(`cannot create the search index ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, "io");
    }
    const db = new Database(file);
    try {
      db.pragma("journal_mode = WAL");
      db.pragma("busy_timeout = 10000");
      db.pragma("synchronous = NORMAL");
      const version = tableExists(db, "info") ? db.prepare("SELECT value FROM info WHERE key = 'schema'").get()?.value : undefined;
      if (version !== SCHEMA_VERSION) {
        // Derived data only: an index of another shape is dropped, not migrated.
        db.exec("DROP TABLE IF EXISTS fts; DROP TABLE IF EXISTS entries; DROP TABLE IF EXISTS segments; DROP TABLE IF EXISTS docs; DROP TABLE IF EXISTS info;");
        db.exec(SCHEMA);
        db.prepare("INSERT INTO info (key, value) VALUES ('schema', ?)").run(SCHEMA_VERSION);
      }
      return new SearchIndex(db);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Session id by segment sid, for every indexed session. */
  get sessionsBySid(): Map<number, string> {
    this.segments ??= new Map(this.db.prepare("SELECT sid, session_id FROM segments").all().map((r) => [Number(r.sid), String(r.session_id)]));
    return this.segments;
  }

  /** What is indexed of each session; read only when the catalog changed (sync). */
  private get docState(): Map<string, DocState> {
    if (!this.docs) {
      this.docs = new Map();
      for (const r of this.db.prepare("SELECT session_id, version_key, indexed_bytes, edge_hash FROM docs").all()) {
        this.docs.set(String(r.session_id), { key: String(r.version_key), bytes: Number(r.indexed_bytes), edge: String(r.edge_hash) });
      }
    }
    return this.docs;
  }

  /**
   * Bring the index in line with the catalog. With `prune`, sessions the catalog no longer has
   * are dropped (not when the catalog was built from live files only, which hides snapshots).
   */
  async sync(catalog: SessionCatalog, prune: boolean): Promise<SyncReport> {
    const started = performance.now();
    // The catalog's fingerprint names all of its inputs: the same one as after the last complete
    // sync means every version key is unchanged, so there is nothing to compare.
    const stamp = `${catalog.fingerprint} ${prune ? "prune" : "keep"}`;
    const synced = this.db.prepare("SELECT value FROM info WHERE key = 'synced'").get()?.value;
    const report: SyncReport = { sessions: catalog.size, indexed: 0, appended: 0, removed: 0, ms: 0, warnings: [] };
    if (synced !== stamp) {
      const docs = this.docState;
      let unread = 0;
      // Oldest activity first, so sids (and rowids) grow with recency: a query's rank cap keeps the newest.
      for (const s of [...catalog.sessions].reverse()) {
        const key = catalog.versionKey(s.id);
        const doc = docs.get(s.id);
        if (doc?.key === key) continue;
        const bytes = await catalog.readBytes(s.id).catch(() => undefined);
        if (!bytes) {
          unread++; // vanished since the catalog was built; the next run picks it up
          continue;
        }
        // pi only appends to a version 3 file: when the indexed part is unchanged, read the rest.
        const appendFrom = doc && doc.bytes > 0 && s.version === 3 && bytes.length > doc.bytes && edgeHash(bytes, doc.bytes) === doc.edge ? doc.bytes : 0;
        // The parser loads only when a session changed: a warm search never needs it.
        const [{ loadSessionBytes }, { indexedEntry }] = await Promise.all([import("./read.js"), import("./search-text.js")]);
        const text = appendFrom ? Buffer.concat([bytes.subarray(0, bytes.indexOf(0x0a) + 1), bytes.subarray(appendFrom)]) : bytes;
        const loaded = loadSessionBytes(text, s.id);
        const entries = loaded.entries.map(indexedEntry).filter((e) => e !== undefined);
        if (loaded.warnings.length) report.warnings.push(...sessionWarnings(s.id, loaded.warnings, appendFrom ? bytes.subarray(0, appendFrom) : undefined));
        // Appends continue only from a version that ended with a whole line.
        const indexedBytes = bytes[bytes.length - 1] === 0x0a ? bytes.length : 0;
        if (!this.index(s.id, s.agent, { key, bytes: indexedBytes, edge: edgeHash(bytes, indexedBytes) }, entries, appendFrom ? doc!.key : undefined)) {
          unread++; // another search indexed this session meanwhile; the next run compares again
          continue;
        }
        report.indexed++;
        if (appendFrom) report.appended++;
      }
      if (prune) {
        const present = new Set(catalog.sessions.map((s) => s.id));
        for (const id of [...docs.keys()]) {
          if (present.has(id)) continue;
          this.inTransaction(() => this.drop(id));
          report.removed++;
        }
      }
      if (!unread) this.db.prepare("INSERT INTO info (key, value) VALUES ('synced', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(stamp);
    }
    report.ms = Math.round(performance.now() - started);
    return report;
  }

  /**
   * Store a session's entries as a new segment (the largest sid), in one transaction: all of them
   * (its older segments are dropped first), or, when `appendTo` names the version they extend,
   * only the lines it gained. Returns false, changing nothing, when another process changed the
   * session's row since this one read it (writers are serialised, so the check is exact).
   */
  private index(sessionId: string, agent: string, doc: DocState, entries: IndexedEntry[], appendTo: string | undefined): boolean {
    const [docs, segments] = [this.docState, this.sessionsBySid];
    let done = false;
    this.inTransaction(() => {
      const current = this.db.prepare("SELECT version_key FROM docs WHERE session_id = ?").get(sessionId)?.version_key;
      if (current === doc.key || (appendTo !== undefined && current !== appendTo)) return;
      if (appendTo === undefined) this.drop(sessionId);
      this.db
        .prepare("INSERT INTO docs (session_id, agent, version_key, indexed_bytes, edge_hash) VALUES (?, ?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET agent = excluded.agent, version_key = excluded.version_key, indexed_bytes = excluded.indexed_bytes, edge_hash = excluded.edge_hash")
        .run(sessionId, agent, doc.key, doc.bytes, doc.edge);
      done = true;
      if (!entries.length) return;
      const sid = Number(this.db.prepare("SELECT coalesce(max(sid), 0) + 1 AS sid FROM segments").get()!.sid);
      this.db.prepare("INSERT INTO segments (sid, session_id) VALUES (?, ?)").run(sid, sessionId);
      segments.set(sid, sessionId);
      const insert = this.db.prepare("INSERT INTO entries (id, entry_id, kind, ts, text) VALUES (?, ?, ?, ?, ?)");
      // A segment of more entries than ENTRY_SLOTS (far beyond any session seen) is cut there.
      entries.slice(0, ENTRY_SLOTS).forEach((e, i) => insert.run(sid * ENTRY_SLOTS + i, e.entryId, e.kind, e.timestamp, e.text));
    });
    if (done) docs.set(sessionId, doc);
    else this.docs = this.segments = undefined; // read again: the other process added segments
    return done;
  }

  /** Remove a session: its entries, its segments and its doc row (inside a transaction). */
  private drop(sessionId: string): void {
    const [docs, segments] = [this.docState, this.sessionsBySid];
    for (const r of this.db.prepare("SELECT sid FROM segments WHERE session_id = ?").all(sessionId)) {
      const sid = Number(r.sid);
      this.db.prepare("DELETE FROM entries WHERE id >= ? AND id < ?").run(sid * ENTRY_SLOTS, (sid + 1) * ENTRY_SLOTS);
      segments.delete(sid);
    }
    this.db.prepare("DELETE FROM segments WHERE session_id = ?").run(sessionId);
    this.db.prepare("DELETE FROM docs WHERE session_id = ?").run(sessionId);
    docs.delete(sessionId);
  }

  private inTransaction(fn: () => void): void {
    this.db.exec("BEGIN IMMEDIATE");
    try {
      fn();
      this.db.exec("COMMIT");
    } catch (err) {
      this.db.exec("ROLLBACK");
      throw err;
    }
  }

  close(): void {
    this.db.close();
  }
}

const sqliteCode = (err: unknown): string | undefined => {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_") ? code : undefined;
};

/** SQLite's word for a file that is not (or no longer) a sound database. */
const isDamaged = (err: unknown): boolean => /^SQLITE_(CORRUPT|NOTADB)/.test(sqliteCode(err) ?? "");

/**
 * Run `fn` with the index open, and close it. The index is derived data, so a damaged one is
 * deleted and rebuilt (once) instead of failing the search; other SQLite errors name the file.
 */
export async function withSearchIndex<T>(dataDir: string, fn: (index: SearchIndex) => Promise<T>): Promise<T> {
  const file = searchIndexFile(dataDir);
  for (let attempt = 0; ; attempt++) {
    let index: SearchIndex | undefined;
    try {
      index = await SearchIndex.open(dataDir);
      return await fn(index);
    } catch (err) {
      if (attempt === 0 && isDamaged(err)) {
        index?.close();
        index = undefined;
        for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
        continue;
      }
      if (!sqliteCode(err)) throw err;
      throw new RepoError(`the search index ${file} failed: ${(err as Error).message} (it is rebuildable: delete it and retry)`, "io");
    } finally {
      index?.close();
    }
  }
}

function tableExists(db: Database, name: string): boolean {
  return !!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name);
}
