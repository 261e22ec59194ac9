// The full-text index behind `sessions search`: SQLite FTS5 (better-sqlite3) in
// <dataDir>/search/index.sqlite. It holds text derived from the catalog's newest version of each
// session, so it is never the only copy of anything: delete it and the next search rebuilds it.
// Each session is recorded with the catalog's version key; only sessions whose key changed are
// read and indexed again, each in its own transaction, so an interrupted run keeps what it did.

import type BetterSqlite3 from "better-sqlite3";
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
const SCHEMA_VERSION = "3";

/**
 * An entry's rowid is its session's sid times ENTRY_SLOTS plus its position, so a ranked rowid
 * names its session without a join, and a session's entries are one rowid range. A session is
 * given a new sid (the largest) whenever it is indexed again, so higher rowids are newer.
 */
export const ENTRY_BITS = 20;
export const ENTRY_SLOTS = 2 ** ENTRY_BITS;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (sid INTEGER PRIMARY KEY, session_id TEXT NOT NULL UNIQUE, version_key TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, entry_id TEXT NOT NULL, kind TEXT NOT NULL, ts TEXT NOT NULL, text TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(text, content='entries', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS entries_ai AFTER INSERT ON entries BEGIN INSERT INTO fts(rowid, text) VALUES (new.id, new.text); END;
CREATE TRIGGER IF NOT EXISTS entries_ad AFTER DELETE ON entries BEGIN INSERT INTO fts(fts, rowid, text) VALUES ('delete', old.id, old.text); END;
`;

export interface SyncReport {
  sessions: number;
  indexed: number;
  removed: number;
  ms: number;
}

export function searchIndexFile(dataDir: string): string {
  return path.join(dataDir, "search", "index.sqlite");
}

export class SearchIndex {
  private docs?: Map<string, { sid: number; key: string }>;

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
        db.exec("DROP TABLE IF EXISTS fts; DROP TABLE IF EXISTS entries; DROP TABLE IF EXISTS docs; DROP TABLE IF EXISTS info;");
        db.exec(SCHEMA);
        db.prepare("INSERT INTO info (key, value) VALUES ('schema', ?)").run(SCHEMA_VERSION);
      }
      return new SearchIndex(db);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Session id by sid, for every indexed session. */
  get sessionsBySid(): Map<number, string> {
    this.docs ??= this.readDocs();
    return new Map([...this.docs].map(([id, d]) => [d.sid, id]));
  }

  private readDocs(): Map<string, { sid: number; key: string }> {
    const docs = new Map<string, { sid: number; key: string }>();
    for (const row of this.db.prepare("SELECT sid, session_id, version_key FROM docs").all()) {
      docs.set(String(row.session_id), { sid: Number(row.sid), key: String(row.version_key) });
    }
    return docs;
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
    if (synced === stamp) return { sessions: catalog.sessions.length, indexed: 0, removed: 0, ms: Math.round(performance.now() - started) };
    const docs = (this.docs ??= this.readDocs());
    let indexed = 0;
    let unread = 0;
    // Oldest activity first, so sids (and rowids) grow with recency: a query's rank cap keeps the newest.
    for (const s of [...catalog.sessions].reverse()) {
      const key = catalog.versionKey(s.id);
      if (docs.get(s.id)?.key === key) continue;
      const bytes = await catalog.readBytes(s.id).catch(() => undefined);
      if (!bytes) {
        unread++; // vanished since the catalog was built; the next run picks it up
        continue;
      }
      // The parser loads only when a session changed: a warm search never needs it.
      const [{ loadSessionBytes }, { indexedEntry }] = await Promise.all([import("./read.js"), import("./search-text.js")]);
      const entries = loadSessionBytes(bytes, s.id).entries.map(indexedEntry).filter((e) => e !== undefined);
      docs.set(s.id, { sid: this.replace(s.id, key, entries), key });
      indexed++;
    }
    let removed = 0;
    if (prune) {
      const present = new Set(catalog.sessions.map((s) => s.id));
      for (const [id, doc] of docs) {
        if (present.has(id)) continue;
        this.inTransaction(() => this.drop(doc.sid));
        docs.delete(id);
        removed++;
      }
    }
    if (!unread) this.db.prepare("INSERT INTO info (key, value) VALUES ('synced', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(stamp);
    return { sessions: catalog.sessions.length, indexed, removed, ms: Math.round(performance.now() - started) };
  }

  /** Index a session's entries under a new sid, in one transaction; returns the sid. */
  private replace(sessionId: string, key: string, entries: IndexedEntry[]): number {
    let sid = 0;
    this.inTransaction(() => {
      const old = this.db.prepare("SELECT sid FROM docs WHERE session_id = ?").get(sessionId);
      if (old) this.drop(Number(old.sid));
      sid = Number(this.db.prepare("SELECT coalesce(max(sid), 0) + 1 AS sid FROM docs").get()!.sid);
      this.db.prepare("INSERT INTO docs (sid, session_id, version_key) VALUES (?, ?, ?)").run(sid, sessionId, key);
      const insert = this.db.prepare("INSERT INTO entries (id, entry_id, kind, ts, text) VALUES (?, ?, ?, ?, ?)");
      // A session with more entries than ENTRY_SLOTS (far beyond any seen) is indexed up to there.
      entries.slice(0, ENTRY_SLOTS).forEach((e, i) => insert.run(sid * ENTRY_SLOTS + i, e.entryId, e.kind, e.timestamp, e.text));
    });
    return sid;
  }

  private drop(sid: number): void {
    this.db.prepare("DELETE FROM entries WHERE id >= ? AND id < ?").run(sid * ENTRY_SLOTS, (sid + 1) * ENTRY_SLOTS);
    this.db.prepare("DELETE FROM docs WHERE sid = ?").run(sid);
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
