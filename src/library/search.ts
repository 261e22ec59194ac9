/**
 * Full-text search over a session catalog, as `sessions search` and the library's search() run
 * it: the index (sessions/search-index.ts) is brought up to date with the catalog first, then
 * queried; with list filters only the records of the matching sessions are read.
 */
import type { Config } from "../config/config.js";
import { NotWarm } from "../sessions/not-warm.js";
import type { SessionCatalog } from "../sessions/catalog.js";
import type { SessionFilter } from "../sessions/query.js";
import type { SyncReport } from "../sessions/search-index.js";
import type { SearchResult } from "../sessions/search-query.js";

export interface SearchOptions {
  filter?: SessionFilter;
  /** At most this many sessions (default 20). */
  limit?: number;
  /** Hits shown per session (default 3). */
  hitsPerSession?: number;
  /** Rank every matching entry, not only the newest 10,000. */
  all?: boolean;
  /** Index the sessions in snapshots too (default true; false for a live-only catalog). */
  snapshots?: boolean;
  /** Hears what the index sync must tell the user (before the query runs). */
  onWarning?: (message: string) => void;
  /** Search an index that is in line with the catalog already, else NotWarm (src/sessions/not-warm.ts) before any work. */
  warmOnly?: boolean;
}

export interface SearchReport {
  index: SyncReport;
  results: SearchResult[];
  capped?: { ranked: number };
  queryMs: number;
}

export async function searchCatalog(config: Pick<Config, "dataDir">, catalog: SessionCatalog, text: string, opts: SearchOptions = {}): Promise<SearchReport> {
  const [{ filterSessions }, { withSearchIndex }, { runQuery, ftsQuery, DEFAULT_RANK_CAP }] = await Promise.all([
    import("../sessions/query.js"),
    import("../sessions/search-index.js"),
    import("../sessions/search-query.js"),
  ]);
  ftsQuery(text);
  const filter = opts.filter ?? {};
  return withSearchIndex(config.dataDir, async (index) => {
    const sync = await index.sync(catalog, opts.snapshots ?? true, opts.warmOnly);
    if (opts.warmOnly && sync.warnings.length) throw new NotWarm("the index sync has warnings to print");
    for (const w of sync.warnings) opts.onWarning?.(w);
    // process.hrtime, not performance.now(): the global `performance` loads perf_hooks (nine modules) on first use.
    const started = process.hrtime.bigint();
    // Without list filters, only the records of the sessions shown are read.
    const filtered = Object.values(filter).some((v) => v !== undefined && v !== false);
    const only = filtered ? new Map(filterSessions(catalog.sessions, filter).map((s) => [s.id, s])) : undefined;
    const allowed = only ? (id: string) => only.has(id) : (id: string) => catalog.has(id);
    const record = only ? (id: string) => only.get(id) : (id: string) => catalog.record(id);
    const { results, capped } = await runQuery(index, text, { allowed, record, source: catalog, limit: opts.limit ?? 20, hitsPerSession: opts.hitsPerSession ?? 3, rankCap: opts.all ? 0 : DEFAULT_RANK_CAP });
    return { index: sync, results, ...(capped && { capped }), queryMs: Math.round(Number(process.hrtime.bigint() - started) / 1e5) / 10 };
  }, opts.warmOnly);
}

/** An empty or unusable query fails here, before any catalog is built. */
export async function assertSearchable(text: string): Promise<void> {
  (await import("../sessions/search-query.js")).ftsQuery(text);
}
