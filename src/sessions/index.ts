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
