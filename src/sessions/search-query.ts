// Running a query against the search index: the user's words become an FTS5 query (every word
// must occur; "quoted phrases" stay phrases; word* is a prefix), matches are ranked with FTS5's
// BM25, and hits are grouped by session, best session first.

import { RepoError } from "../repo/errors.js";
import type { SessionRecord } from "./catalog.js";
import { ENTRY_BITS, ENTRY_SLOTS, type SearchIndex, type SessionBytes } from "./search-index.js";

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
  /** Whether a session may be shown (it is in the catalog and passes the list filters). */
  allowed(id: string): boolean;
  /** The record of an allowed session; called only for the sessions shown. */
  record(id: string): SessionRecord | undefined;
  limit: number;
  hitsPerSession: number;
  /** Rank at most this many matching entries, the newest; 0: rank every match. */
  rankCap: number;
  /** Where the text of the hits shown is read again for their snippets (the index keeps only words). */
  source: SessionBytes;
}

export interface QueryReport {
  results: SearchResult[];
  /** Set when more entries matched than the cap: only the newest `ranked` were ranked. */
  capped?: { ranked: number };
}

// Enough ranked rows to fill `limit` sessions in practice, without scoring the whole corpus twice.
const ROWS_PER_RESULT = 50;

/**
 * A word in a third of all entries costs BM25 a docsize lookup and a position-list walk per
 * match (about 50 ms per 100,000), and tells little apart. Past this many matches only the newest
 * are ranked: the index adds sessions oldest first and re-indexes a changed session at the top,
 * so higher rowids are newer entries. `--all` ranks every match.
 */
export const DEFAULT_RANK_CAP = 10_000;

/**
 * Three steps, because bm25() is costly per row and snippet() more so:
 * 1. with a cap, find the rowid above which the newest `cap` matches lie (a doclist walk, no scoring);
 * 2. rank the matching entries by BM25, rowids and scores only: a rowid names its session
 *    (search-index.ts), so grouping needs no join;
 * 3. read the details of the hits shown, and their text from the sessions, to build snippets.
 */
export async function runQuery(index: SearchIndex, text: string, opts: QueryOptions): Promise<QueryReport> {
  const match = ftsQuery(text);
  const bySid = index.sessionsBySid;
  const rowLimit = Math.max(opts.limit, 1) * ROWS_PER_RESULT;
  // Indexed sessions that may not be shown (list filters, --live) are left out before ranking.
  // Every query below takes (match[, sids]) first, then its own parameters.
  const allowed = [...bySid].filter(([, id]) => opts.allowed(id)).map(([sid]) => sid);
  const filtered = allowed.length < bySid.size;
  const from = filtered ? `fts WHERE fts MATCH ? AND (fts.rowid >> ${ENTRY_BITS}) IN (SELECT value FROM json_each(?))` : "fts WHERE fts MATCH ?";
  const base: unknown[] = filtered ? [match, JSON.stringify(allowed)] : [match];
  // ftsQuery lets no FTS5 syntax through, so an error here is the index's (withSearchIndex).
  const sql = (q: string, ...params: unknown[]) => index.db.prepare(q).all(...base, ...params);

  let floor = 0;
  let capped: QueryReport["capped"];
  if (opts.rankCap > 0) {
    const edge = sql(`SELECT fts.rowid AS rid FROM ${from} ORDER BY fts.rowid DESC LIMIT 1 OFFSET ?`, opts.rankCap);
    if (edge.length) {
      floor = Number(edge[0].rid) + 1;
      capped = { ranked: opts.rankCap }; // counting them all would cost a full doclist walk
    }
  }
  const rows = sql(`SELECT fts.rowid AS rid, bm25(fts) AS score FROM ${from} AND fts.rowid >= ? ORDER BY score LIMIT ?`, floor, rowLimit);
  const results = new Map<string, SearchResult>();
  const shown = new Map<number, SearchHit>();
  for (const r of rows) {
    const rid = Number(r.rid);
    const id = bySid.get(Math.floor(rid / ENTRY_SLOTS)) ?? "";
    if (!opts.allowed(id)) continue; // indexed since this run's catalog was built
    const hit: SearchHit = { entryId: "", kind: "", timestamp: "", snippet: "", score: -Number(r.score) };
    const res = results.get(id);
    if (!res) {
      const session = results.size < opts.limit ? opts.record(id) : undefined;
      if (!session) continue;
      results.set(id, { session, score: hit.score, matches: 1, hits: [hit] });
      shown.set(rid, hit);
    } else {
      res.matches++;
      if (res.hits.length < opts.hitsPerSession) {
        res.hits.push(hit);
        shown.set(rid, hit);
      }
    }
  }
  // Rows come best first, so each session's first hit is its best and the map is in rank order.
  if (shown.size) {
    const rids = JSON.stringify([...shown.keys()]);
    for (const e of index.db.prepare("SELECT id, entry_id, kind, ts FROM entries WHERE id IN (SELECT value FROM json_each(?))").all(rids)) {
      Object.assign(shown.get(Number(e.id))!, { entryId: String(e.entry_id), kind: String(e.kind), timestamp: String(e.ts) });
    }
    const snippets = index.snippets(match, await index.entryTexts(opts.source, [...shown.keys()]));
    for (const [rid, snip] of snippets) {
      const hit = shown.get(rid);
      if (hit) hit.snippet = snip.replace(/\s+/g, " ").replaceAll("\u0002", MARK_OPEN).replaceAll("\u0003", MARK_CLOSE);
    }
  }
  return { results: [...results.values()], capped };
}
