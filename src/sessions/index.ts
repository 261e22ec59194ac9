// Sessions across live files and every snapshot: the library behind `pi-guard sessions`,
// `export` and `stats`. The CLI only parses flags and prints what these return.

import type { Config } from "../config/config.js";
import type { RepositorySource } from "./source.js";
import { SessionCatalog, type SessionRecord } from "./catalog.js";
import { loadSessionBytes, type LoadedSession } from "./read.js";

export { SessionCatalog, type SessionRecord, type SnapshotRef, type SnapshotVersion } from "./catalog.js";
export { filterSessions, resolveSession, type SessionFilter } from "./query.js";
export { sessionView, resolveEntry, type SessionView } from "./view.js";
export { loadSessionBytes, type LoadedSession } from "./read.js";
export { lazyRepository, openedRepository, type RepositorySource } from "./source.js";
export { renderSession, treeOutline } from "./render-terminal.js";

export async function buildCatalog(config: Config, repo: RepositorySource | null): Promise<SessionCatalog> {
  return SessionCatalog.build({ config, repo });
}

/** Parse a catalogued session into the v3 model (v1/v2 migrated in memory, stable ids). */
export async function loadSession(catalog: SessionCatalog, record: SessionRecord): Promise<LoadedSession> {
  return loadSessionBytes(await catalog.readBytes(record.id), record.id);
}

/**
 * The entry keys of every session whose copies `stats` must check (the older origins of forks
 * and merges), read once each: see attributeCopies in stats.ts.
 */
export async function statsOriginKeys(catalog: SessionCatalog): Promise<Map<string, Set<string>>> {
  const [{ originKeysNeeded }, { entryKey }] = await Promise.all([import("./stats.js"), import("./summary.js")]);
  const out = new Map<string, Set<string>>();
  for (const id of originKeysNeeded(catalog.sessions)) {
    const record = catalog.record(id);
    if (record) out.set(id, new Set((await loadSession(catalog, record)).entries.map(entryKey)));
  }
  return out;
}
