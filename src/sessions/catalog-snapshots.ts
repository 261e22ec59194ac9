// The snapshots side of the session catalog (catalog.ts), whatever engine holds them: the
// history of every session file across the snapshots, the bytes of a file's newest copy, and one
// snapshot's files for the agents' adapters. pi-guard's own repositories are read here through
// their trees (snapshot-files.ts); a restic repository through restic (src/restic/catalog.ts).

import type { FileReader } from "../agents/types.js";
import type { SnapshotReader } from "../restore/snapshot-reader.js";
import { SnapshotFiles, treeNodeOf, type FileHistory, type SnapshotHistory, type SnapshotMeta } from "./snapshot-files.js";
import type { RepositorySource } from "./source.js";

export interface CatalogSnapshots {
  /** Names the catalog's cache files for this repository. */
  readonly id: string;
  /** How a source in these snapshots is named: "snapshot <id>", "restic snapshot <id>". */
  readonly label: string;
  /** The snapshot names now (native: object names, nothing decrypted). */
  snapshotIds(): Promise<string[]>;
  /** Every session file's history across the snapshots `ids` names. */
  history(ids: readonly string[]): Promise<SnapshotHistory>;
  /** Keep the history (after the catalog filled in header ids). */
  save(history: SnapshotHistory): Promise<void>;
  /** The newest copy of `h`, streamed. */
  stream(history: SnapshotHistory, h: FileHistory): Promise<AsyncIterable<Uint8Array>>;
  /** The newest copy of `h`, whole and checked. */
  read(history: SnapshotHistory, h: FileHistory): Promise<Buffer>;
  /** One snapshot's files, for the agents' session readers. */
  files(snap: SnapshotMeta): Promise<FileReader>;
  close(): Promise<void>;
}

/** A native repository's snapshots: unlocked (and its reader opened) only when something must be decrypted. */
export function nativeSnapshots(cacheDir: string, repo: RepositorySource): CatalogSnapshots {
  let reader: Promise<SnapshotReader> | undefined;
  const open = () => (reader ??= Promise.all([repo.open(), import("../restore/snapshot-reader.js")]).then(([r, m]) => m.SnapshotReader.open(r)));
  const files = new SnapshotFiles(cacheDir, repo, open);
  return {
    id: repo.id,
    label: "snapshot",
    snapshotIds: () => repo.snapshotIds(),
    history: (ids) => files.history(ids),
    save: (history) => files.save(history),
    async stream(history, h) {
      const node = treeNodeOf(await files.newestCopy(history, h));
      return (await open()).stream(node);
    },
    async read(history, h) {
      const node = treeNodeOf(await files.newestCopy(history, h));
      return (await open()).read(node);
    },
    async files(snap) {
      const { snapshotFiles } = await import("../agents/files.js");
      return snapshotFiles(await open(), snap);
    },
    async close() {
      if (reader) await (await reader).close();
    },
  };
}
