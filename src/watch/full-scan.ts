/**
 * The watcher's backstop for a change no watch event reported (docs/WATCH.md): a stat walk of the
 * roots, with the snapshot's own filter, compared file by file with the file list of the watcher's
 * last snapshot (inode, size, mtime, as the snapshot recorded them; a symlink by its presence).
 * Nothing is read but metadata, so it costs about what a snapshot of an unchanged tree costs.
 */
import path from "node:path";
import { BlobReader } from "../repo/blob-reader.js";
import type { Repository } from "../repo/repository.js";
import { SealPool } from "../repo/seal-pool.js";
import { scanSources, type SourceFilter, type SourceRoot } from "../snapshot/scan.js";
import { nodeKey, readTree } from "../snapshot/tree.js";

export interface FileDifference {
  root: string;
  path: string;
  /** Where the file is on disk (for matching watch events). */
  abs: string;
  what: "new" | "gone" | "changed";
}

export interface TreeComparison {
  /** Files and symlinks on disk. */
  files: number;
  /** The differences, at most `limit` of them. */
  differences: FileDifference[];
  /** How many there are in all. */
  count: number;
}

/** Compare the roots on disk with snapshot `id`'s file list. */
export async function compareWithSnapshot(repo: Repository, id: string, roots: SourceRoot[], filter: SourceFilter, limit = 100): Promise<TreeComparison> {
  const snapshot = await repo.loadSnapshot(id);
  // Up to date, as a snapshot makes it: a prune since may have moved the tree's blobs.
  await repo.loadIndex(true);
  const rootPath = new Map(roots.map((r) => [r.name, r.path]));
  // Paths the snapshot could not read are not differences: they are on disk and never in a list.
  const skipped = new Set((snapshot.skipped ?? []).map((s) => nodeKey(s.root, s.path)));
  const recorded = new Map<string, { root: string; path: string; stamp: string }>();
  for await (const node of readTree(new BlobReader(repo, new SealPool(0)), snapshot)) {
    if (node.type === "file") recorded.set(nodeKey(node.root, node.pathBytes ?? node.path), { root: node.root, path: node.path, stamp: `${node.ino}:${node.size}:${node.mtimeMs}` });
    else if (node.type === "symlink") recorded.set(nodeKey(node.root, node.pathBytes ?? node.path), { root: node.root, path: node.path, stamp: "symlink" });
  }
  const out: TreeComparison = { files: 0, differences: [], count: 0 };
  const differ = (root: string, rel: string, what: FileDifference["what"]) => {
    out.count++;
    if (out.differences.length < limit) out.differences.push({ root, path: rel, abs: path.join(rootPath.get(root) ?? "", rel), what });
  };
  for await (const entry of scanSources(roots, filter, () => undefined)) {
    if (entry.type === "dir") continue;
    out.files++;
    const key = nodeKey(entry.root, entry.pathBytes ?? entry.path);
    const had = recorded.get(key);
    recorded.delete(key);
    if (skipped.has(key)) continue;
    const stamp = entry.type === "symlink" ? "symlink" : `${entry.stat.ino}:${entry.stat.size}:${entry.stat.mtimeMs}`;
    if (!had) differ(entry.root, entry.path, "new");
    else if (had.stamp !== stamp) differ(entry.root, entry.path, "changed");
  }
  for (const [key, gone] of recorded) if (!skipped.has(key)) differ(gone.root, gone.path, "gone");
  return out;
}
