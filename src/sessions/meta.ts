// pi-guard's own metadata about sessions (tags; later anything else a user adds by hand) lives
// in <dataDir>/meta, a folder of its own so that a snapshot can take it as one extra root without
// also taking the repository, the caches or the trash that share the data dir.

import path from "node:path";
import type { Config } from "../config/config.js";
import type { SourceRoot } from "../snapshot/sources.js";
import { makeDirs } from "../fs-safe.js";

import { META_ROOT_NAME } from "../config/config.js";

/** The snapshot root name for pi-guard's metadata; snapshot-files.ts never counts it as sessions. */
export { META_ROOT_NAME };

export function metaDir(dataDir: string): string {
  return path.join(dataDir, "meta");
}

/**
 * The config's roots plus the metadata folder, for snapshots taken by the sessions commands
 * (`sessions delete`). The folder is created first so the snapshot always has the root.
 */
export async function rootsWithMeta(config: Config): Promise<SourceRoot[]> {
  const dir = metaDir(config.dataDir);
  await makeDirs(dir, 0o700);
  if (config.roots.some((r) => r.name === META_ROOT_NAME)) return config.roots;
  return [...config.roots, { name: META_ROOT_NAME, path: dir }];
}
