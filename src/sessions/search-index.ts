// The full-text index behind `sessions search`: SQLite FTS5 (better-sqlite3) in
// <dataDir>/search/index.sqlite. It holds text derived from the catalog's newest version of each
// session, so it is never the only copy of anything: delete it and the next search rebuilds it.
// Each session is recorded with the catalog's version key; only sessions whose key changed are
// read and indexed again, each in its own transaction, so an interrupted run keeps what it did.

import Database from "better-sqlite3";
import path from "node:path";
import { makeDirs } from "../fs-safe.js";
import { RepoError } from "../repo/errors.js";
import type { SessionCatalog } from "./catalog.js";
import type { LoadedSession } from "./read.js";

/** Bump when the schema or the indexed text changes: an older index is dropped and rebuilt. */
const SCHEMA_VERSION = "2";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (sid INTEGER PRIMARY KEY, session_id TEXT NOT NULL UNIQUE, version_key TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, sid INTEGER NOT NULL, entry_id TEXT NOT NULL, kind TEXT NOT NULL, ts TEXT NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS entries_sid ON entries(sid);
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
  private constructor(readonly db: Database) {}

  static async open(dataDir: string): Promise<SearchIndex> {
    const file = searchIndexFile(dataDir);
    try {
      await makeDirs(path.dirname(file), 0o700);
      const db = new Database(file);
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
      throw new RepoError(`cannot open the search index ${file}: ${(err as Error).message} (it is rebuildable: delete it and retry)`, "io");
    }
  }

  /**
   * Bring the index in line with the catalog. With `prune`, sessions the catalog no longer has
   * are dropped (not when the catalog was built from live files only, which hides snapshots).
   */
  async sync(catalog: SessionCatalog, prune: boolean): Promise<SyncReport> {
    const started = performance.now();
    const known = new Map<string, { sid: number; key: string }>();
    for (const row of this.db.prepare("SELECT sid, session_id, version_key FROM docs").iterate()) {
      known.set(String(row.session_id), { sid: Number(row.sid), key: String(row.version_key) });
    }
    let indexed = 0;
    // Oldest activity first, so rowids grow with recency (a query's rank cap keeps the newest).
    for (const s of [...catalog.sessions].reverse()) {
      const key = catalog.versionKey(s.id);
      if (known.get(s.id)?.key === key) continue;
      const bytes = await catalog.readBytes(s.id).catch(() => undefined);
      if (!bytes) continue; // vanished since the catalog was built; the next run picks it up
      // The parser loads only when a session changed: a warm search never needs it.
      const [{ loadSessionBytes }, { indexedEntry }] = await Promise.all([import("./read.js"), import("./search-text.js")]);
      this.replace(s.id, key, loadSessionBytes(bytes, s.id).entries, indexedEntry);
      indexed++;
    }
    let removed = 0;
    if (prune) {
      const present = new Set(catalog.sessions.map((s) => s.id));
      for (const [id, doc] of known) {
        if (present.has(id)) continue;
        this.inTransaction(() => {
          this.db.prepare("DELETE FROM entries WHERE sid = ?").run(doc.sid);
          this.db.prepare("DELETE FROM docs WHERE sid = ?").run(doc.sid);
        });
        removed++;
      }
    }
    return { sessions: catalog.sessions.length, indexed, removed, ms: Math.round(performance.now() - started) };
  }

  private replace(sessionId: string, key: string, entries: LoadedSession["entries"], indexedEntry: typeof import("./search-text.js").indexedEntry): void {
    this.inTransaction(() => {
      const old = this.db.prepare("SELECT sid FROM docs WHERE session_id = ?").get(sessionId);
      if (old) this.db.prepare("DELETE FROM entries WHERE sid = ?").run(old.sid);
      this.db.prepare("INSERT INTO docs (session_id, version_key) VALUES (?, ?) ON CONFLICT(session_id) DO UPDATE SET version_key = excluded.version_key").run(sessionId, key);
      const sid = this.db.prepare("SELECT sid FROM docs WHERE session_id = ?").get(sessionId)!.sid;
      const insert = this.db.prepare("INSERT INTO entries (sid, entry_id, kind, ts, text) VALUES (?, ?, ?, ?, ?)");
      for (const e of entries) {
        const doc = indexedEntry(e);
        if (doc) insert.run(sid, doc.entryId, doc.kind, doc.timestamp, doc.text);
      }
    });
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

function tableExists(db: Database, name: string): boolean {
  return !!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name);
}
