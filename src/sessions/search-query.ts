// Running a query against the search index: the user's words become an FTS5 query (every word
// must occur; "quoted phrases" stay phrases; word* is a prefix), matches are ranked with FTS5's
// BM25, and hits are grouped by session, best session first.

import { RepoError } from "../repo/errors.js";
import type { SessionRecord } from "./catalog.js";
import type { SearchIndex } from "./search-index.js";

/** Marks around matched words in snippets (JSON and NO_COLOR output). */
export const MARK_OPEN = "«";
export const MARK_CLOSE = "»";

export interface SearchHit {
  entryId: string;
  kind: string;
  timestamp: string;
  snippet: string;
  score: number;
}

export interface SearchResult {
  session: SessionRecord;
  /** BM25 of the best hit, made positive: higher is better. */
  score: number;
  matches: number;
  hits: SearchHit[];
}

/** The user's text as an FTS5 query; only words and phrases survive, never FTS5 syntax. */
export function ftsQuery(text: string): string {
  const terms: string[] = [];
  for (const m of text.matchAll(/"([^"]*)"|(\S+)/g)) {
    if (m[1] !== undefined) {
      const words = m[1].match(/[\p{L}\p{N}_]+/gu);
      if (words) terms.push(`"${words.join(" ")}"`);
      continue;
    }
    const prefix = m[2].endsWith("*");
    for (const w of m[2].match(/[\p{L}\p{N}_]+/gu) ?? []) terms.push(`"${w}"`);
    if (prefix && terms.length) terms[terms.length - 1] += "*";
  }
  if (terms.length === 0) throw new RepoError(`nothing to search for in "${text}": give at least one word`, "usage");
  return terms.join(" ");
}

export interface QueryOptions {
  /** Only these sessions (the list filters); undefined: all. */
  sessions: readonly SessionRecord[];
  filtered: boolean;
  limit: number;
  hitsPerSession: number;
}

// Enough ranked rows to fill `limit` sessions in practice, without scoring the whole corpus twice.
const ROWS_PER_RESULT = 50;

/**
 * Two steps, because snippet() costs far more than bm25(): rank matching entries by BM25 (only
 * rowids and scores), group them by session, and only then build snippets for the hits shown.
 */
export function runQuery(index: SearchIndex, text: string, opts: QueryOptions): SearchResult[] {
  const match = ftsQuery(text);
  const byId = new Map(opts.sessions.map((s) => [s.id, s]));
  const rowLimit = Math.max(opts.limit, 1) * ROWS_PER_RESULT;
  const ranked = opts.filtered
    ? `SELECT fts.rowid AS rid, bm25(fts) AS score FROM fts JOIN entries e ON e.id = fts.rowid JOIN docs d ON d.sid = e.sid
         WHERE fts MATCH ? AND d.session_id IN (SELECT value FROM json_each(?)) ORDER BY score LIMIT ?`
    : "SELECT rowid AS rid, bm25(fts) AS score FROM fts WHERE fts MATCH ? ORDER BY score LIMIT ?";
  const sql = `SELECT r.rid AS rid, r.score AS score, d.session_id AS session_id, e.entry_id AS entry_id, e.kind AS kind, e.ts AS ts
    FROM (${ranked}) r JOIN entries e ON e.id = r.rid JOIN docs d ON d.sid = e.sid ORDER BY r.score`;
  const params: unknown[] = opts.filtered ? [match, JSON.stringify([...byId.keys()]), rowLimit] : [match, rowLimit];
  let rows: Record<string, unknown>[];
  try {
    rows = index.db.prepare(sql).all(...params);
  } catch (err) {
    throw new RepoError(`cannot search for "${text}": ${(err as Error).message}`, "usage");
  }
  const results = new Map<string, SearchResult & { rowids: number[] }>();
  for (const r of rows) {
    const session = byId.get(String(r.session_id));
    if (!session) continue; // indexed but outside this run's catalog (e.g. --live)
    const hit: SearchHit = { entryId: String(r.entry_id), kind: String(r.kind), timestamp: String(r.ts), snippet: "", score: -Number(r.score) };
    const res = results.get(session.id);
    if (!res) {
      if (results.size >= opts.limit) continue;
      results.set(session.id, { session, score: hit.score, matches: 1, hits: [hit], rowids: [Number(r.rid)] });
    } else {
      res.matches++;
      if (res.hits.length < opts.hitsPerSession) {
        res.hits.push(hit);
        res.rowids.push(Number(r.rid));
      }
    }
  }
  // Rows come best first, so each session's first hit is its best and the map is in rank order.
  const snippet = index.db.prepare("SELECT snippet(fts, 0, char(2), char(3), '…', 16) AS snip FROM fts WHERE fts MATCH ? AND rowid = ?");
  return [...results.values()].map(({ rowids, ...res }) => {
    res.hits.forEach((h, i) => {
      const snip = String(snippet.get(match, rowids[i])?.snip ?? "");
      h.snippet = snip.replace(/\s+/g, " ").replaceAll("\u0002", MARK_OPEN).replaceAll("\u0003", MARK_CLOSE);
    });
    return res;
  });
}
