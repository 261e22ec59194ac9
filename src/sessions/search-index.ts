// The full-text index behind `sessions search`: SQLite FTS5 (better-sqlite3) in
// <dataDir>/search/index.sqlite. It holds text derived from the catalog's newest version of each
// session, so it is never the only copy of anything: delete it and the next search rebuilds it.
// The FTS5 table is contentless (content=''): it keeps the words and their positions (so terms,
// prefixes, phrases and BM25 work as with a stored copy) but not the text, which is already on
// disk in the live files and the repository. Snippets are built from the text of the few hits
// shown, read again from there (entryTexts): an entry records where its line lies in the file.
// Each session is recorded with the catalog's version key; only sessions whose key changed are
// read and indexed again, in batched transactions, so an interrupted run keeps what it did.
// A session that only grew (pi appends) has just its new lines indexed, as a new segment.

import type BetterSqlite3 from "better-sqlite3";
import { sqlite } from "../sqlite.js";
import { createHash } from "node:crypto";
import { chmodSync, closeSync, existsSync, openSync, rmSync } from "node:fs";
import path from "node:path";
import { makeDirs } from "../fs-safe.js";
import { RepoError } from "../repo/errors.js";
import type { SessionCatalog } from "./catalog.js";
import { NotWarm } from "./not-warm.js";
import type { IndexedEntry } from "./search-text.js";

type Database = BetterSqlite3;
type Statement = ReturnType<Database["prepare"]>;

/** Bump when the schema or the indexed text changes: an older index is dropped and rebuilt. */
const SCHEMA_VERSION = "7";

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

/**
 * Sessions read are indexed in one transaction once they hold this many bytes (and at the end).
 * The parsed entries of a batch are alive until it is stored: on the cold 1 GiB build 2 MiB
 * peaked at 131-144 MB where 4 MiB peaked at 137-147 MB, for the same CPU time (bench/README.md).
 */
const BATCH_BYTES = 2 * 1024 * 1024;

/**
 * A version 3 session larger than this is parsed this many bytes of lines at a time, each slice
 * indexed before the next is parsed: the parsed objects of a whole multi-MB session were the
 * cold build's largest allocation (its peak RSS).
 */
const SLICE_BYTES = 1024 * 1024;

export const TOKENIZE = "tokenize='porter unicode61 remove_diacritics 2'";

// segments.from_bytes: where in the file the segment's lines begin (0: the whole file).
// entries.line_at / line_len: the byte range of the entry's line in the file, or -1 when the
// session was migrated from an older format (its entries are found by parsing the segment again).
// texts: the text of the entries of sessions found only in snapshots (deleted from disk), so that
// their snippets need no repository key and no decryption; every other text is read again.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (session_id TEXT PRIMARY KEY, agent TEXT NOT NULL, version_key TEXT NOT NULL, indexed_bytes INTEGER NOT NULL, edge_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS segments (sid INTEGER PRIMARY KEY, session_id TEXT NOT NULL, from_bytes INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS segments_session ON segments(session_id);
CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, entry_id TEXT NOT NULL, kind TEXT NOT NULL, ts TEXT NOT NULL, line_at INTEGER NOT NULL, line_len INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS texts (id INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(text, content='', contentless_delete=1, ${TOKENIZE});
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

/** An entry as indexed: what is shown of it, its text, and where its line is in the file. */
interface StoredEntry extends IndexedEntry {
  lineAt: number;
  lineLen: number;
}

/** A session read and parsed (or, when large, to be parsed as it is stored), waiting for its batch's transaction. */
interface PendingSession {
  id: string;
  agent: string;
  doc: DocState;
  entries: Iterable<StoredEntry>;
  /** Where the new segment's lines begin in the file (0: all of it). */
  from: number;
  /** The version key this one extends, for an append. */
  appendTo: string | undefined;
  /** Store the entries' text too (the session is only in snapshots). */
  keepText: boolean;
}

/** Reads a session's newest bytes: the catalog. */
export interface SessionBytes {
  readBytes(id: string): Promise<Uint8Array>;
  /** Just these [start, length) ranges of those bytes, when that is cheaper; else undefined. */
  readRanges?(id: string, ranges: [number, number][]): Promise<Uint8Array[] | undefined>;
}

/** Bytes read to find a session's first line (its header) when only some lines are read. */
const HEADER_PEEK = 64 * 1024;

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

/** The text a segment is parsed from: the file up to `to`, or its first line and the lines from `from` up to `to`. */
function segmentText(bytes: Uint8Array, from: number, to: number): Uint8Array {
  return from ? Buffer.concat([bytes.subarray(0, bytes.indexOf(0x0a) + 1), bytes.subarray(from, to)]) : bytes.subarray(0, to);
}

/** The session parser and the indexed text of an entry, loaded only when a session is read. */
interface Parser {
  loadSessionBytes: typeof import("./read.js").loadSessionBytes;
  indexedEntry: typeof import("./search-text.js").indexedEntry;
}

async function loadParser(): Promise<Parser> {
  const [{ loadSessionBytes }, { indexedEntry }] = await Promise.all([import("./read.js"), import("./search-text.js")]);
  return { loadSessionBytes, indexedEntry };
}

/**
 * Parse a segment (the lines from `from` up to `to`) and keep the entries the index holds, in
 * rowid order. Each entry also gets the byte range of its line in the file, when lines and
 * entries correspond one to one (a version 3 file: nothing migrated); otherwise -1.
 */
function segmentEntries({ loadSessionBytes, indexedEntry }: Parser, bytes: Uint8Array, from: number, id: string, to = bytes.length): { entries: StoredEntry[]; warnings: string[] } {
  const text = segmentText(bytes, from, to);
  const loaded = loadSessionBytes(text, id);
  const direct = loaded.fromVersion === 3 && loaded.entryLines.length === loaded.entries.length;
  // Line starts in `text`, found once; a line in `text` past the first lies at shift + its start in the file.
  const starts: number[] = [0];
  if (direct) for (let i = text.indexOf(0x0a); i !== -1 && i + 1 < text.length; i = text.indexOf(0x0a, i + 1)) starts.push(i + 1);
  const shift = from ? from - (bytes.indexOf(0x0a) + 1) : 0;
  const entries: StoredEntry[] = [];
  loaded.entries.forEach((e, i) => {
    const ix = indexedEntry(e);
    if (!ix) return;
    let lineAt = -1;
    let lineLen = -1;
    const line = loaded.entryLines[i];
    if (direct && line >= 2 && line <= starts.length) {
      const start = starts[line - 1];
      const end = text.indexOf(0x0a, start);
      lineAt = start + shift;
      lineLen = (end === -1 ? text.length : end) - start;
    }
    entries.push({ ...ix, lineAt, lineLen });
  });
  return { entries, warnings: loaded.warnings };
}

/** Whether the file's first line is a version 3 header, so that its lines parse alone (appends and slices rely on it). */
function hasV3Header(bytes: Uint8Array): boolean {
  const end = bytes.indexOf(0x0a);
  if (end < 1 || end > HEADER_PEEK) return false;
  try {
    const h = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, end).toString("utf8")) as { type?: unknown; version?: unknown };
    return h?.type === "session" && h.version === 3;
  } catch {
    return false;
  }
}

/**
 * The entries of a large version 3 session, parsed a slice of whole lines at a time as they are
 * consumed: the same entries, in the same order, as parsing the file at once (each line of a
 * version 3 file parses alone, after its header). Warnings go to `warnings` as slices are parsed.
 */
function* slicedEntries(parser: Parser, bytes: Uint8Array, id: string, warnings: string[]): Generator<StoredEntry> {
  for (let at = bytes.indexOf(0x0a) + 1; at > 0 && at < bytes.length; ) {
    const nl = at + SLICE_BYTES < bytes.length ? bytes.indexOf(0x0a, at + SLICE_BYTES) : -1;
    const end = nl === -1 ? bytes.length : nl + 1;
    const slice = segmentEntries(parser, bytes, at, id, end);
    if (slice.warnings.length) warnings.push(...sessionWarnings(id, slice.warnings, bytes.subarray(0, at)));
    yield* slice.entries;
    at = end;
  }
}

export function searchIndexFile(dataDir: string): string {
  return path.join(dataDir, "search", "index.sqlite");
}

export class SearchIndex {
  private docs?: Map<string, DocState>;
  private segments?: Map<number, string>;
  private readonly statements = new Map<string, Statement>();

  private constructor(readonly db: Database) {}

  /**
   * Open (or create) the index in `dataDir`. SQLite errors are left to `withSearchIndex`.
   * `warmOnly`: an index of this schema that exists already, else NotWarm (nothing created or dropped).
   */
  static async open(dataDir: string, warmOnly = false): Promise<SearchIndex> {
    const file = searchIndexFile(dataDir);
    if (warmOnly && !existsSync(file)) throw new NotWarm("there is no search index yet");
    try {
      await makeDirs(path.dirname(file), 0o700);
      // The index holds session text: private like the sessions (SQLite copies this mode to -wal and -shm).
      closeSync(openSync(file, "a", 0o600));
      chmodSync(file, 0o600);
    } catch (err) {
      throw new RepoError(`cannot create the search index ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, "io");
    }
    const Sqlite = sqlite();
    const db = new Sqlite(file);
    try {
      db.pragma("journal_mode = WAL");
      db.pragma("busy_timeout = 10000");
      db.pragma("synchronous = NORMAL");
      db.pragma("temp_store = MEMORY"); // the snippet table (entryTexts) never touches the disk
      // better-sqlite3 builds SQLite with a 16 MB page cache per connection; the index's pages are
      // in the OS's cache anyway, and on a cold 1 GiB build those 16 MB were a tenth of the peak
      // RSS (166-171 MB with it, 147-153 MB with 256 KiB, at the same wall time and total CPU).
      db.pragma("cache_size = -256");
      const version = tableExists(db, "info") ? db.prepare("SELECT value FROM info WHERE key = 'schema'").get()?.value : undefined;
      if (version !== SCHEMA_VERSION) {
        if (warmOnly) throw new NotWarm("the search index has another schema");
        // Derived data only: an index of another shape (an older schema) is dropped and rebuilt,
        // and VACUUM gives its pages back (a schema 6 index held a copy of all the text).
        db.exec("DROP TABLE IF EXISTS fts; DROP TABLE IF EXISTS entries; DROP TABLE IF EXISTS segments; DROP TABLE IF EXISTS docs; DROP TABLE IF EXISTS info;");
        if (version !== undefined) db.exec("VACUUM");
        db.exec(SCHEMA);
        db.prepare("INSERT INTO info (key, value) VALUES ('schema', ?)").run(SCHEMA_VERSION);
      }
      return new SearchIndex(db);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** A statement prepared once per connection. */
  private stmt(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = this.db.prepare(sql)));
    return s;
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
   * `warmOnly`: NotWarm unless it is in line already.
   */
  async sync(catalog: SessionCatalog, prune: boolean, warmOnly = false): Promise<SyncReport> {
    const started = process.hrtime.bigint(); // not performance.now(): see searchCatalog
    // The catalog's fingerprint names all of its inputs: the same one as after the last complete
    // sync means every version key is unchanged, so there is nothing to compare.
    const stamp = `${catalog.fingerprint} ${prune ? "prune" : "keep"}`;
    const synced = this.db.prepare("SELECT value FROM info WHERE key = 'synced'").get()?.value;
    const report: SyncReport = { sessions: catalog.size, indexed: 0, appended: 0, removed: 0, ms: 0, warnings: [] };
    if (synced !== stamp) {
      if (warmOnly) throw new NotWarm("the search index is behind the catalog");
      const docs = this.docState;
      let parser: Parser | undefined;
      let unread = 0;
      let pending: PendingSession[] = [];
      let pendingBytes = 0;
      const flush = () => {
        this.indexBatch(pending).forEach((stored, i) => {
          if (!stored) unread++; // another search indexed this session meanwhile; the next run compares again
          else {
            report.indexed++;
            if (pending[i].appendTo !== undefined) report.appended++;
          }
        });
        pending = [];
        pendingBytes = 0;
      };
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
        parser ??= await loadParser();
        // Appends continue only from a version that ended with a whole line.
        const indexedBytes = bytes[bytes.length - 1] === 0x0a ? bytes.length : 0;
        const next = { id: s.id, agent: s.agent, doc: { key, bytes: indexedBytes, edge: edgeHash(bytes, indexedBytes) }, from: appendFrom, appendTo: appendFrom ? doc!.key : undefined, keepText: key.startsWith("snapshot:") };
        if (!appendFrom && bytes.length > SLICE_BYTES && hasV3Header(bytes)) {
          // A large session is a batch of its own, parsed slice by slice inside its transaction.
          if (pending.length) flush();
          pending.push({ ...next, entries: slicedEntries(parser, bytes, s.id, report.warnings) });
          flush();
          continue;
        }
        const { entries, warnings } = segmentEntries(parser, bytes, appendFrom, s.id);
        if (warnings.length) report.warnings.push(...sessionWarnings(s.id, warnings, appendFrom ? bytes.subarray(0, appendFrom) : undefined));
        pending.push({ ...next, entries });
        pendingBytes += bytes.length - appendFrom;
        if (pendingBytes >= BATCH_BYTES) flush();
      }
      if (pending.length) flush();
      if (prune) {
        const present = new Set(catalog.sessions.map((s) => s.id));
        const gone = [...docs.keys()].filter((id) => !present.has(id));
        if (gone.length) this.inTransaction(() => gone.forEach((id) => this.drop(id)));
        report.removed += gone.length;
      }
      if (!unread) this.db.prepare("INSERT INTO info (key, value) VALUES ('synced', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(stamp);
    }
    report.ms = Math.round(Number(process.hrtime.bigint() - started) / 1e6);
    return report;
  }

  /**
   * Store each session's entries as a new segment (the largest sid), all in one transaction: all
   * of them (its older segments are dropped first), or, when `appendTo` names the version they
   * extend, only the lines it gained. A session is skipped, changing nothing, when another process
   * changed its row since this one read it (writers are serialised, so the check is exact).
   * Returns, per session, whether it was stored.
   */
  private indexBatch(batch: PendingSession[]): boolean[] {
    const [docs, segments] = [this.docState, this.sessionsBySid];
    let stored: boolean[] = [];
    let added: [number, string][] = [];
    this.inTransaction(() => {
      [stored, added] = [[], []];
      let sid = Number(this.stmt("SELECT coalesce(max(sid), 0) AS sid FROM segments").get()!.sid);
      const current = this.stmt("SELECT version_key FROM docs WHERE session_id = ?");
      const upsert = this.stmt("INSERT INTO docs (session_id, agent, version_key, indexed_bytes, edge_hash) VALUES (?, ?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET agent = excluded.agent, version_key = excluded.version_key, indexed_bytes = excluded.indexed_bytes, edge_hash = excluded.edge_hash");
      const segment = this.stmt("INSERT INTO segments (sid, session_id, from_bytes) VALUES (?, ?, ?)");
      const entry = this.stmt("INSERT INTO entries (id, entry_id, kind, ts, line_at, line_len) VALUES (?, ?, ?, ?, ?, ?)");
      const words = this.stmt("INSERT INTO fts (rowid, text) VALUES (?, ?)");
      const kept = this.stmt("INSERT INTO texts (id, text) VALUES (?, ?)");
      for (const p of batch) {
        const now = current.get(p.id)?.version_key;
        const ok = now !== p.doc.key && (p.appendTo === undefined || now === p.appendTo);
        stored.push(ok);
        if (!ok) continue;
        if (p.appendTo === undefined) this.drop(p.id);
        upsert.run(p.id, p.agent, p.doc.key, p.doc.bytes, p.doc.edge);
        let i = 0;
        for (const e of p.entries) {
          if (i === ENTRY_SLOTS) break;
          if (i === 0) {
            // A segment only for a session with entries.
            segment.run(++sid, p.id, p.from);
            added.push([sid, p.id]);
          }
          entry.run(sid * ENTRY_SLOTS + i, e.entryId, e.kind, e.timestamp, e.lineAt, e.lineLen);
          words.run(sid * ENTRY_SLOTS + i, e.text);
          if (p.keepText) kept.run(sid * ENTRY_SLOTS + i, e.text);
          i++;
        }
      }
    });
    // Committed: the in-memory maps follow, or are read again when another process added segments.
    if (stored.includes(false)) this.docs = this.segments = undefined;
    else {
      for (const [sid, id] of added) segments.set(sid, id);
      batch.forEach((p) => docs.set(p.id, p.doc));
    }
    return stored;
  }

  /** Remove a session: its words, its entries, its segments and its doc row (inside a transaction). */
  private drop(sessionId: string): void {
    const [docs, segments] = [this.docState, this.sessionsBySid];
    for (const { sid } of this.stmt("SELECT sid FROM segments WHERE session_id = ?").all(sessionId) as { sid: number }[]) {
      const range = [sid * ENTRY_SLOTS, (sid + 1) * ENTRY_SLOTS];
      this.stmt("DELETE FROM fts WHERE rowid >= ? AND rowid < ?").run(...range);
      this.stmt("DELETE FROM entries WHERE id >= ? AND id < ?").run(...range);
      this.stmt("DELETE FROM texts WHERE id >= ? AND id < ?").run(...range);
      segments.delete(sid);
    }
    this.stmt("DELETE FROM segments WHERE session_id = ?").run(sessionId);
    this.stmt("DELETE FROM docs WHERE session_id = ?").run(sessionId);
    docs.delete(sessionId);
  }

  /**
   * The indexed text of the entries `rids`: kept in the index for sessions found only in
   * snapshots, else read again from the sessions (the index keeps only words): each entry's line is cut from the file and parsed alone, else (a migrated session,
   * or a line that no longer holds that entry) its segment is parsed again. An entry whose text
   * cannot be found as it was indexed (its session changed or vanished since) is left out.
   */
  async entryTexts(source: SessionBytes, rids: number[]): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    if (!rids.length) return out;
    for (const r of this.stmt("SELECT id, text FROM texts WHERE id IN (SELECT value FROM json_each(?))").all(JSON.stringify(rids))) out.set(Number(r.id), String(r.text));
    rids = rids.filter((rid) => !out.has(rid));
    if (!rids.length) return out;
    const rows = this.db
      .prepare("SELECT e.id, e.entry_id, e.line_at, e.line_len, s.session_id, s.from_bytes FROM entries e JOIN segments s ON s.sid = (e.id >> " + ENTRY_BITS + ") WHERE e.id IN (SELECT value FROM json_each(?))")
      .all(JSON.stringify(rids)) as { id: number; entry_id: string; line_at: number; line_len: number; session_id: string; from_bytes: number }[];
    const bySession = new Map<string, typeof rows>();
    for (const r of rows) bySession.set(r.session_id, [...(bySession.get(r.session_id) ?? []), r]);
    const parser = await loadParser();
    const { loadSessionBytes, indexedEntry } = parser;
    for (const [id, list] of bySession) {
      let whole: Uint8Array | undefined;
      const wholeBytes = async () => (whole ??= await source.readBytes(id).catch(() => undefined));
      // The header and each entry's line: only those bytes of a live file are read.
      const direct = list.filter((r) => r.line_at > 0);
      const ranges: [number, number][] = [[0, HEADER_PEEK], ...direct.map((r): [number, number] => [r.line_at, r.line_len])];
      let parts = direct.length && source.readRanges ? await source.readRanges(id, ranges).catch(() => undefined) : undefined;
      if (!parts || parts[0].indexOf(0x0a) === -1) {
        const bytes = await wholeBytes();
        parts = bytes ? ranges.map(([at, len], i) => bytes.subarray(at, i ? at + len : bytes.indexOf(0x0a) + 1)) : undefined;
      }
      const header = parts ? parts[0].subarray(0, parts[0].indexOf(0x0a) + 1) : undefined;
      const reparse = new Map<number, typeof rows>();
      for (const r of list) {
        let text: string | undefined;
        const line = header?.length ? parts![direct.indexOf(r) + 1] : undefined;
        if (line && r.line_at >= header!.length && line.length === r.line_len) {
          const one = loadSessionBytes(Buffer.concat([header!, line]), id);
          const e = one.fromVersion === 3 && one.entries.length === 1 && one.entries[0].id === r.entry_id ? indexedEntry(one.entries[0]) : undefined;
          text = e?.text;
        }
        if (text !== undefined) out.set(r.id, text);
        else reparse.set(r.from_bytes, [...(reparse.get(r.from_bytes) ?? []), r]);
      }
      const bytes = reparse.size ? await wholeBytes() : undefined;
      for (const [from, wanted] of bytes ? reparse : []) {
        if (from > bytes!.length) continue;
        const { entries } = segmentEntries(parser, bytes!, from, id);
        for (const r of wanted) {
          const e = entries[r.id % ENTRY_SLOTS];
          if (e && e.entryId === r.entry_id) out.set(r.id, e.text);
        }
      }
    }
    return out;
  }

  /**
   * FTS5's snippet() for each of `texts` (rowid to text) against the query `match`, from a
   * temporary in-memory FTS5 table of the same tokenizer: snippet() weighs only the row's own
   * words, so the snippets are those of an index that stored the text. The table is dropped
   * afterwards, not emptied: deleting a row of an FTS5 table tokenises its text once more (a
   * third of the snippets' time).
   */
  snippets(match: string, texts: Map<number, string>): Map<number, string> {
    const out = new Map<number, string>();
    if (!texts.size) return out;
    this.db.exec(`DROP TABLE IF EXISTS temp.snip; CREATE VIRTUAL TABLE temp.snip USING fts5(text, ${TOKENIZE})`);
    try {
      const insert = this.db.prepare("INSERT INTO temp.snip (rowid, text) VALUES (?, ?)");
      this.db.transaction(() => {
        for (const [rid, text] of texts) insert.run(rid, text);
      })();
      for (const r of this.db.prepare("SELECT rowid AS rid, snippet(snip, 0, char(2), char(3), '…', 16) AS snip FROM temp.snip WHERE snip MATCH ?").all(match)) {
        out.set(Number(r.rid), String(r.snip ?? ""));
      }
    } finally {
      this.db.exec("DROP TABLE temp.snip");
    }
    return out;
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
 * `warmOnly` (SearchIndex.open): an error is passed on as it is, and nothing is deleted.
 */
export async function withSearchIndex<T>(dataDir: string, fn: (index: SearchIndex) => Promise<T>, warmOnly = false): Promise<T> {
  const file = searchIndexFile(dataDir);
  for (let attempt = 0; ; attempt++) {
    let index: SearchIndex | undefined;
    try {
      index = await SearchIndex.open(dataDir, warmOnly);
      return await fn(index);
    } catch (err) {
      if (warmOnly) throw err;
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
