// The session files inside each snapshot. A snapshot never changes once written, so its list of
// session files is cached forever under <dataDir>/catalog/<repo id>/snapshots/<id>.json; only
// new snapshots cost a walk of their tree.

import path from "node:path";
import type { TreeNode } from "../repo/format.js";
import type { SnapshotRecord } from "../repo/repository.js";
import type { SnapshotReader } from "../restore/snapshot-reader.js";
import { readJsonCache, writeJsonCache } from "./cache.js";
import { META_ROOT_NAME } from "./meta.js";

export interface SnapshotSessionFile {
  root: string;
  path: string;
  size: number;
  mtimeMs: number;
  content: string[];
}

/** Session files: .jsonl under the agent dir's sessions/ (any depth), or in any other root but pi-guard's own metadata. */
export function isSessionNode(node: TreeNode): boolean {
  if (node.type !== "file" || !node.path.endsWith(".jsonl") || node.root === META_ROOT_NAME) return false;
  return node.root !== "agent" || node.path.startsWith("sessions/");
}

export async function snapshotSessionFiles(
  cacheDir: string,
  record: SnapshotRecord,
  reader: () => Promise<SnapshotReader>,
): Promise<SnapshotSessionFile[]> {
  const file = path.join(cacheDir, "snapshots", `${record.id}.json`);
  const cached = await readJsonCache<SnapshotSessionFile[]>(file);
  if (Array.isArray(cached)) return cached;
  const out: SnapshotSessionFile[] = [];
  for await (const node of (await reader()).files(record)) {
    if (isSessionNode(node)) out.push({ root: node.root, path: node.path, size: node.size ?? 0, mtimeMs: node.mtimeMs, content: node.content ?? [] });
  }
  await writeJsonCache(file, out);
  return out;
}

/** Where a snapshot file lived on the machine it came from. */
export function originalPath(record: SnapshotRecord, f: Pick<SnapshotSessionFile, "root" | "path">): string {
  const root = record.snapshot.roots.find((r) => r.name === f.root);
  return root ? path.join(root.path, f.path) : `${f.root}:${f.path}`;
}

export function treeNodeOf(f: SnapshotSessionFile): TreeNode {
  return { root: f.root, path: f.path, type: "file", mode: 0o644, mtimeMs: f.mtimeMs, size: f.size, content: f.content };
}
