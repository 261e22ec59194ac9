// Session files in snapshots, for the catalog. Two caches under <dataDir>/catalog/<repo id>/, both
// rebuildable from the repository, both growing with the number of file *versions*, not with
// snapshots times files (a watched agent dir gets a snapshot every few seconds):
// - history.json: the snapshot list, and for each session file (root, path) its runs: spans of
//   consecutive snapshots that hold the same bytes. It is valid for the exact set of snapshot
//   names it records; comparing names needs no key, so when nothing changed the repository is
//   not unlocked at all. A new snapshot (after every known one) is walked once and extends the
//   runs; a removed snapshot shortens them; an added snapshot older than the newest known one
//   rebuilds them by walking every snapshot again.
// - content.json: the blob ids of each file's newest copy, so a session that exists only in
//   snapshots can be read without walking a tree.

import { createHash } from "node:crypto";
import { rm } from "node:fs/promises";
import path from "node:path";
import { compareStrings } from "../compare.js";
import { isRepoError } from "../repo/errors.js";
import type { SnapshotRoot, TreeNode, TreeRef } from "../repo/format.js";
import type { SnapshotReader } from "../restore/snapshot-reader.js";
import type { LeafCache } from "../snapshot/tree.js";
import { readJsonCache, writeJsonCache } from "./cache.js";
import { META_ROOT_NAME } from "./meta.js";
import type { RepositorySource } from "./source.js";
import { PI_AGENT } from "./agent-name.js";

/** What the catalog keeps of a snapshot: enough to list it and to walk its tree again. */
export type SnapshotMeta = SnapshotMetaFields & TreeRef;

interface SnapshotMetaFields {
  id: string;
  time: string;
  host: string;
  tags: string[];
  roots: SnapshotRoot[];
  /** Which agent each root belongs to, as the snapshot records it (absent in older snapshots: pi's). */
  agents?: Record<string, string>;
}

/** [first, last] snapshot index (inclusive, every one in between holds it), size, content key. */
export type Run = [first: number, last: number, size: number, contentKey: string];

/** One session file path across all snapshots. */
export interface FileHistory {
  root: string;
  path: string;
  /** Oldest first; the last run is the newest copy. */
  runs: Run[];
  /** The session id when it had to be read from the header (file names that are not pi's). */
  headerId?: string;
  /** Another agent's session file (its registry name); absent: pi's. */
  agent?: string;
}

export interface SnapshotHistory {
  /** Readable snapshots, oldest first. */
  snapshots: SnapshotMeta[];
  /** Snapshot objects that could not be decrypted or parsed (check reports them). */
  unreadable: { id: string; error: string }[];
  files: FileHistory[];
}

/** The bytes of one file version: its blobs in order. */
export interface FileCopy {
  /** As in FileHistory. */
  agent?: string;
  root: string;
  path: string;
  size: number;
  mtimeMs: number;
  content: string[];
}

type ContentMap = Record<string, Omit<FileCopy, "root" | "path" | "agent">>;

/**
 * Whose session file a node is: another agent's when the snapshot gives its root to that agent and
 * the agent's reader claims the file (isSessionFile); pi's for .jsonl under the agent dir's
 * sessions/ (any depth) or in any other root but pi-guard's own metadata; else nobody's.
 */
export function sessionFileAgent(node: Pick<TreeNode, "type" | "root" | "path">, rootAgent: ReadonlyMap<string, string>, claims: (agent: string, node: { root: string; path: string }) => boolean): string | undefined {
  if (node.type !== "file" || node.root === META_ROOT_NAME) return undefined;
  const agent = rootAgent.get(node.root);
  if (agent !== undefined && agent !== PI_AGENT) return claims(agent, node) ? agent : undefined;
  if (!node.path.endsWith(".jsonl")) return undefined;
  return node.root !== "agent" || node.path.startsWith("sessions/") ? PI_AGENT : undefined;
}

/**
 * The keys already made, by blob id list: a walk that reuses the last one's tree nodes
 * (readTreeReusing) hands the same lists again, and hashing each one anew was most of its cost.
 */
const madeKeys = new WeakMap<readonly string[], { size: number; key: string }>();

/** Names a file version's exact bytes: a hash of its size and blob ids. */
function contentKey(f: { size: number; content: readonly string[] }): string {
  const made = madeKeys.get(f.content);
  if (made?.size === f.size) return made.key;
  const key = createHash("sha256").update(`${f.size}:${f.content.join(",")}`).digest("hex");
  madeKeys.set(f.content, { size: f.size, key });
  return key;
}

/** Where a snapshot file lived on the machine it came from. */
export function originalPath(meta: Pick<SnapshotMeta, "roots">, f: { root: string; path: string }): string {
  const root = meta.roots.find((r) => r.name === f.root);
  return root ? path.join(root.path, f.path) : `${f.root}:${f.path}`;
}

export function treeNodeOf(f: FileCopy): TreeNode {
  return { root: f.root, path: f.path, type: "file", mode: 0o644, mtimeMs: f.mtimeMs, size: f.size, content: f.content };
}

export const newestRun = (h: FileHistory): Run => h.runs[h.runs.length - 1];

const fileKey = (f: { root: string; path: string }) => `${f.root}\0${f.path}`;

/** Runs re-indexed after some snapshots were removed: a run keeps the snapshots that remain. */
function remapRuns(runs: Run[], newIndex: Int32Array): Run[] {
  const out: Run[] = [];
  for (const [first, last, size, key] of runs) {
    let a = first;
    while (a <= last && newIndex[a] < 0) a++;
    let b = last;
    while (b >= a && newIndex[b] < 0) b--;
    if (a > last) continue; // every snapshot of the run is gone
    const prev = out[out.length - 1];
    if (prev && prev[3] === key && prev[1] + 1 === newIndex[a]) prev[1] = newIndex[b];
    else out.push([newIndex[a], newIndex[b], size, key]);
  }
  return out;
}

export class SnapshotFiles {
  private content?: ContentMap;
  /** The last walk's leaf tree blobs: consecutive snapshots mostly share them (readTreeReusing). */
  private readonly leaves: LeafCache = { leaves: new Map(), spans: new Map() };

  constructor(
    private readonly cacheDir: string,
    private readonly source: RepositorySource,
    private readonly reader: () => Promise<SnapshotReader>,
  ) {}

  private get historyFile(): string {
    return path.join(this.cacheDir, "history.json");
  }

  private get contentFile(): string {
    return path.join(this.cacheDir, "content.json");
  }

  private async contentMap(): Promise<ContentMap> {
    this.content ??= (await readJsonCache<ContentMap>(this.contentFile)) ?? {};
    return this.content;
  }

  /** The history, brought in line with `ids`, the snapshot names in the repository now. */
  async history(ids: readonly string[]): Promise<SnapshotHistory> {
    const cached = await readJsonCache<SnapshotHistory>(this.historyFile);
    // Before cache version 3 the catalog kept a file list per snapshot here: gone for good.
    if (!cached) await rm(path.join(this.cacheDir, "snapshots"), { recursive: true, force: true });
    const old = cached ?? { snapshots: [], unreadable: [], files: [] };
    const present = new Set(ids);
    // Snapshots that could not be read are tried again: `repair --from` puts back the same names.
    const known = new Set(old.snapshots.map((m) => m.id));
    const added = ids.filter((id) => !known.has(id));
    const removed = [...known].some((id) => !present.has(id));
    if (!added.length && !removed) return old;

    // Removed snapshots: shorten the runs.
    const newIndex = new Int32Array(old.snapshots.length).fill(-1);
    const kept: SnapshotMeta[] = [];
    old.snapshots.forEach((m, i) => {
      if (present.has(m.id)) newIndex[i] = kept.push(m) - 1;
    });
    let files = old.files.map((f) => ({ ...f, runs: remapRuns(f.runs, newIndex) })).filter((f) => f.runs.length > 0);
    const unreadable: SnapshotHistory["unreadable"] = [];

    // Added snapshots: decrypt them (this needs the key) and place them in time order.
    const fresh: SnapshotMeta[] = [];
    if (added.length) {
      const repo = await this.source.open();
      for (const id of added) {
        try {
          const s = await repo.loadSnapshot(id);
          fresh.push({ id, time: s.time, host: s.host, tags: s.tags ?? [], roots: s.roots, ...(s.agents ? { agents: s.agents } : {}), ...(s.treeList ? { treeList: s.treeList } : { tree: s.tree }) } as SnapshotMeta);
        } catch (err) {
          if (!isRepoError(err)) throw err;
          unreadable.push({ id, error: err.message });
        }
      }
    }
    const order = (a: SnapshotMeta, b: SnapshotMeta) => compareStrings(a.time, b.time) || compareStrings(a.id, b.id);
    const snapshots = [...kept, ...fresh].sort(order);
    // Only new snapshots after every kept one: walk just those. Anything else: walk them all.
    const extend = snapshots.slice(0, kept.length).every((m, i) => m === kept[i]);
    const walkFrom = extend ? kept.length : 0;
    if (!extend) files = [];

    const content = await this.contentMap();
    const byKey = new Map(files.map((f) => [fileKey(f), f]));
    for (let i = walkFrom; i < snapshots.length; i++) {
      for (const f of await this.walk(snapshots[i])) {
        const key = contentKey(f);
        content[key] ??= { size: f.size, mtimeMs: f.mtimeMs, content: f.content };
        const h = byKey.get(fileKey(f));
        if (!h) {
          const created: FileHistory = { root: f.root, path: f.path, runs: [[i, i, f.size, key]], ...(f.agent ? { agent: f.agent } : {}) };
          byKey.set(fileKey(f), created);
          files.push(created);
          continue;
        }
        const last = newestRun(h);
        if (last[3] === key && last[1] === i - 1) last[1] = i;
        else {
          if (last[3] !== key) delete h.headerId; // another file may now live at this path
          h.runs.push([i, i, f.size, key]);
        }
      }
    }
    const history: SnapshotHistory = { snapshots, unreadable, files };
    await this.keepNewestContent(history);
    Object.assign(this.leaves, { leaves: new Map(), spans: new Map() });
    await writeJsonCache(this.historyFile, history);
    return history;
  }

  /**
   * Keep the blob ids of every file's newest copy and nothing else. A copy can be missing after
   * snapshots were removed (the newest run is now an older one): its snapshot is walked again.
   */
  private async keepNewestContent(history: SnapshotHistory): Promise<void> {
    const content = await this.contentMap();
    await this.fillMissing(history, history.files);
    const used = new Set(history.files.map((h) => newestRun(h)[3]));
    this.content = Object.fromEntries(Object.entries(content).filter(([key]) => used.has(key)));
    await writeJsonCache(this.contentFile, this.content);
  }

  /** Walk the snapshots holding the newest copies of `files` that content.json lacks. */
  private async fillMissing(history: SnapshotHistory, files: readonly FileHistory[]): Promise<boolean> {
    const content = await this.contentMap();
    const missing = new Map<number, Set<string>>();
    for (const h of files) {
      const [, last, , key] = newestRun(h);
      if (!content[key]) missing.set(last, (missing.get(last) ?? new Set()).add(fileKey(h)));
    }
    for (const [i, wanted] of missing) {
      for (const f of await this.walk(history.snapshots[i])) {
        if (wanted.has(fileKey(f))) content[contentKey(f)] = { size: f.size, mtimeMs: f.mtimeMs, content: f.content };
      }
    }
    return missing.size > 0;
  }

  /** The newest copy of a file, with its blob ids. */
  async newestCopy(history: SnapshotHistory, h: FileHistory): Promise<FileCopy> {
    const key = newestRun(h)[3];
    if (await this.fillMissing(history, [h])) await writeJsonCache(this.contentFile, this.content);
    const c = this.content![key];
    if (!c) throw new Error(`snapshot ${history.snapshots[newestRun(h)[1]].id.slice(0, 8)} no longer lists ${h.root}:${h.path}`);
    return { root: h.root, path: h.path, ...c, ...(h.agent ? { agent: h.agent } : {}) };
  }

  /** Save the history again (after the catalog filled in header ids). */
  save(history: SnapshotHistory): Promise<void> {
    return writeJsonCache(this.historyFile, history);
  }

  /** The session files of one snapshot, from its tree. */
  private async walk(meta: SnapshotMeta): Promise<FileCopy[]> {
    const out: FileCopy[] = [];
    const [{ snapshotRootAgents }, { findAgent }] = await Promise.all([import("../agents/roots.js"), import("../agents/registry.js")]);
    const rootAgent = snapshotRootAgents(meta);
    const claims = (agent: string, node: { root: string; path: string }) => findAgent(agent)?.sessions.isSessionFile({ root: node.root, path: node.path }) ?? false;
    for await (const node of (await this.reader()).filesReusing(meta, this.leaves)) {
      const agent = sessionFileAgent(node, rootAgent, claims);
      if (agent) out.push({ root: node.root, path: node.path, size: node.size ?? 0, mtimeMs: node.mtimeMs, content: node.content ?? [], ...(agent !== PI_AGENT ? { agent } : {}) });
    }
    return out;
  }
}
