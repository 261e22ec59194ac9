// Session files in snapshots, for the catalog. Two caches under <dataDir>/catalog/<repo id>/, both
// rebuildable from the repository:
// - snapshots/<snapshot id>.json: one snapshot's session files with their blob lists. A snapshot
//   never changes, so this is written once; only a new snapshot costs a walk of its tree.
// - history.json: for each session file, the snapshots holding it and its newest copy, valid for
//   the exact set of snapshot names it records. Comparing names needs no key, so when nothing
//   changed the repository is not unlocked at all. New snapshots extend the history; a removed
//   snapshot (or a new one older than the newest known) rebuilds it from the per-snapshot lists.

import { createHash } from "node:crypto";
import path from "node:path";
import type { SnapshotRoot, TreeNode } from "../repo/format.js";
import { isRepoError } from "../repo/errors.js";
import type { SnapshotReader } from "../restore/snapshot-reader.js";
import { readJsonCache, writeJsonCache } from "./cache.js";
import { META_ROOT_NAME } from "./meta.js";
import type { RepositorySource } from "./source.js";
import { compareStrings } from "../compare.js";

export interface SnapshotSessionFile {
  root: string;
  path: string;
  size: number;
  mtimeMs: number;
  content: string[];
}

/** What the catalog keeps of a snapshot: enough to list it and to walk its tree again. */
export interface SnapshotMeta {
  id: string;
  time: string;
  host: string;
  tags: string[];
  roots: SnapshotRoot[];
  tree: string[];
}

/** One session file path across all snapshots. */
export interface FileHistory {
  root: string;
  path: string;
  /** [index into SnapshotHistory.snapshots, size] for each snapshot holding the file, oldest first. */
  presences: [number, number][];
  /** Index of the newest snapshot holding it. */
  newest: number;
  /** Names the newest copy's exact bytes (a hash of its size and blob ids). */
  contentKey: string;
  /** The session id when it had to be read from the header (file names that are not pi's). */
  headerId?: string;
}

export interface SnapshotHistory {
  /** Readable snapshots, oldest first. */
  snapshots: SnapshotMeta[];
  /** Snapshot objects that could not be decrypted or parsed (check reports them). */
  unreadable: { id: string; error: string }[];
  files: FileHistory[];
}

/** Session files: .jsonl under the agent dir's sessions/ (any depth), or in any other root but pi-guard's own metadata. */
export function isSessionNode(node: TreeNode): boolean {
  if (node.type !== "file" || !node.path.endsWith(".jsonl") || node.root === META_ROOT_NAME) return false;
  return node.root !== "agent" || node.path.startsWith("sessions/");
}

export const contentKey = (f: Pick<SnapshotSessionFile, "size" | "content">): string =>
  createHash("sha256").update(`${f.size}:${f.content.join(",")}`).digest("hex");

/** Where a snapshot file lived on the machine it came from. */
export function originalPath(meta: Pick<SnapshotMeta, "roots">, f: Pick<SnapshotSessionFile, "root" | "path">): string {
  const root = meta.roots.find((r) => r.name === f.root);
  return root ? path.join(root.path, f.path) : `${f.root}:${f.path}`;
}

export function treeNodeOf(f: SnapshotSessionFile): TreeNode {
  return { root: f.root, path: f.path, type: "file", mode: 0o644, mtimeMs: f.mtimeMs, size: f.size, content: f.content };
}

const sameIds = (a: readonly SnapshotMeta[], b: readonly SnapshotMeta[]): boolean => a.length <= b.length && a.every((m, i) => m.id === b[i].id);

export class SnapshotFiles {
  constructor(
    private readonly cacheDir: string,
    private readonly source: RepositorySource,
    private readonly reader: () => Promise<SnapshotReader>,
  ) {}

  private get historyFile(): string {
    return path.join(this.cacheDir, "history.json");
  }

  /** The history, brought in line with `ids`, the snapshot names in the repository now. */
  async history(ids: readonly string[]): Promise<SnapshotHistory> {
    const old = (await readJsonCache<SnapshotHistory>(this.historyFile)) ?? { snapshots: [], unreadable: [], files: [] };
    const present = new Set(ids);
    const known = new Set([...old.snapshots.map((m) => m.id), ...old.unreadable.map((u) => u.id)]);
    const added = ids.filter((id) => !known.has(id));
    const removed = [...known].some((id) => !present.has(id));
    if (!added.length && !removed) return old;

    const snapshots = old.snapshots.filter((m) => present.has(m.id));
    const unreadable = old.unreadable.filter((u) => present.has(u.id));
    if (added.length) {
      const repo = await this.source.open();
      for (const id of added) {
        try {
          const s = await repo.loadSnapshot(id);
          snapshots.push({ id, time: s.time, host: s.host, tags: s.tags ?? [], roots: s.roots, tree: s.tree });
        } catch (err) {
          if (!isRepoError(err)) throw err;
          unreadable.push({ id, error: err.message });
        }
      }
      snapshots.sort((a, b) => compareStrings(a.time, b.time) || compareStrings(a.id, b.id));
    }
    // Only new snapshots after every known one: extend. Anything else: rebuild from the lists.
    const extend = !removed && sameIds(old.snapshots, snapshots);
    const history: SnapshotHistory = { snapshots, unreadable, files: extend ? old.files : [] };
    const byKey = new Map(history.files.map((f) => [`${f.root}\0${f.path}`, f]));
    const headerIds = new Map(old.files.filter((f) => f.headerId).map((f) => [f.contentKey, f.headerId!]));
    for (let i = extend ? old.snapshots.length : 0; i < snapshots.length; i++) {
      for (const f of await this.filesOf(snapshots[i])) {
        const key = `${f.root}\0${f.path}`;
        const h = byKey.get(key);
        const ck = contentKey(f);
        if (h) {
          h.presences.push([i, f.size]);
          h.newest = i;
          if (h.contentKey !== ck) delete h.headerId; // another file may now live at this path
          h.contentKey = ck;
        } else {
          const fresh: FileHistory = { root: f.root, path: f.path, presences: [[i, f.size]], newest: i, contentKey: ck, headerId: headerIds.get(ck) };
          if (!fresh.headerId) delete fresh.headerId;
          byKey.set(key, fresh);
          history.files.push(fresh);
        }
      }
    }
    await this.save(history);
    return history;
  }

  /** Write the history back (after the catalog filled in header ids). */
  save(history: SnapshotHistory): Promise<void> {
    return writeJsonCache(this.historyFile, history);
  }

  /** One snapshot's session files, from the cache or by walking its tree once. */
  async filesOf(meta: SnapshotMeta): Promise<SnapshotSessionFile[]> {
    const file = path.join(this.cacheDir, "snapshots", `${meta.id}.json`);
    const cached = await readJsonCache<SnapshotSessionFile[]>(file);
    if (Array.isArray(cached)) return cached;
    const out: SnapshotSessionFile[] = [];
    for await (const node of (await this.reader()).files(meta.tree)) {
      if (isSessionNode(node)) out.push({ root: node.root, path: node.path, size: node.size ?? 0, mtimeMs: node.mtimeMs, content: node.content ?? [] });
    }
    await writeJsonCache(file, out);
    return out;
  }

  /** The newest copy of a file, with its blob list. */
  async newestCopy(history: SnapshotHistory, h: FileHistory): Promise<SnapshotSessionFile> {
    const found = (await this.filesOf(history.snapshots[h.newest])).find((f) => f.root === h.root && f.path === h.path);
    if (!found) throw new Error(`snapshot ${history.snapshots[h.newest].id.slice(0, 8)} no longer lists ${h.root}:${h.path}`);
    return found;
  }
}
