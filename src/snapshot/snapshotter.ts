import { promises as fs } from "node:fs";
import os from "node:os";
import { BlobReader } from "../repo/blob-reader.js";
import { BlobWriter } from "../repo/blob-writer.js";
import { BlobType, INCOMPLETE_TAG, type SkippedPath, type Snapshot, type SnapshotSummary, type TreeNode } from "../repo/format.js";
import { acquireLock } from "../repo/lock.js";
import { RepoError } from "../repo/errors.js";
import { removeWriterTempFiles } from "../repo/repair-index.js";
import { canBeParent } from "../repo/parent-heads.js";
import { ObjectNotFound } from "../targets/target.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { SealPool } from "../repo/seal-pool.js";
import { ContentChunker } from "./content-chunker.js";
import { isPathError, scanSources, type ScannedEntry, type SourceFilter, type SourceRoot } from "./scan.js";
import { nodeKey, readTree, TreeWriter } from "./tree.js";
import { PROGRAM } from "../version.js";

export interface SnapshotOptions {
  roots: SourceRoot[];
  filter: SourceFilter;
  tags?: string[];
  host?: string;
  /** A snapshot id to diff against, or undefined for the newest snapshot of the same host and roots. */
  parent?: string;
  lockWaitMs?: number;
  onProgress?: (p: SnapshotProgress) => void;
}

export interface SnapshotProgress {
  files: number;
  bytes: number;
  current: string;
}

export interface SnapshotResult {
  id: string;
  snapshot: Snapshot;
}

type FileOutcome = "new" | "changed" | "unchanged";

const READ_BLOCK = 1024 * 1024;

/** Take a snapshot of `opts.roots` into `repo`, holding the exclusive repository lock throughout. */
export function createSnapshot(repo: Repository, opts: SnapshotOptions): Promise<SnapshotResult> {
  return withSnapshotBuilder(repo, { command: "snapshot", lockWaitMs: opts.lockWaitMs, onProgress: opts.onProgress }, async (builder) => {
    const host = opts.host ?? os.hostname();
    let parent = await findParent(repo, opts.parent, host, opts.roots);
    if (parent) {
      try {
        await builder.loadParent(parent);
      } catch (err) {
        // A damaged parent must not stop every later backup: compare with nothing and read all.
        if (!(err instanceof RepoError) || err.kind !== "corrupt") throw err;
        repo.onWarning(`parent snapshot ${parent.id.slice(0, 8)} is unreadable (${err.message}); reading every file in full`);
        await builder.forgetParent(parent);
        parent = undefined;
      }
    }
    const skip = (root: string, rel: string, err: NodeJS.ErrnoException) => builder.skip(root, rel, err);
    for await (const entry of scanSources(opts.roots, opts.filter, skip)) await builder.addEntry(entry);
    return builder.commit({ host, roots: opts.roots, tags: opts.tags ?? [], parent: parent?.id });
  });
}

/**
 * The life of every snapshot writer (disk scan, tar import): exclusive lock, leftovers of killed
 * writers cleaned, fresh index, a builder whose staging files are removed if `build` fails.
 */
export async function withSnapshotBuilder(
  repo: Repository,
  opts: { command: string; lockWaitMs?: number; onProgress?: (p: SnapshotProgress) => void },
  build: (builder: SnapshotBuilder) => Promise<SnapshotResult>,
): Promise<SnapshotResult> {
  const lock = await acquireLock(repo, { exclusive: true, command: opts.command, waitMs: opts.lockWaitMs ?? 60_000 });
  const pool = new SealPool();
  let builder: SnapshotBuilder | undefined;
  try {
    // Holding the exclusive lock, every temp file of a writer is a dead writer's (docs/FORMAT.md §9).
    await removeWriterTempFiles(repo.target);
    await repo.loadIndex(true);
    builder = new SnapshotBuilder(repo, pool, opts.onProgress, lock.signal);
    return await build(builder);
  } catch (err) {
    await builder?.abort();
    throw err;
  } finally {
    await pool.close();
    await lock.release();
  }
}

async function findParent(repo: Repository, parentId: string | undefined, host: string, roots: SourceRoot[]): Promise<SnapshotRecord | undefined> {
  if (parentId) {
    try {
      return { id: parentId, snapshot: await repo.loadSnapshot(parentId) };
    } catch (err) {
      if (err instanceof RepoError || err instanceof ObjectNotFound) return undefined;
      throw err;
    }
  }
  // Without listing snapshots/: the newest one this machine recorded for these roots, if it is still there.
  const recorded = await repo.latestSnapshotFor(host, roots);
  if (recorded) return recorded;
  const all = await repo.listSnapshots();
  await repo.rememberParents(all);
  const sameRoots = (s: Snapshot) => JSON.stringify(s.roots) === JSON.stringify(roots);
  // Never an import (its tree came from an archive, its time is the archive's), never a suspect loss.
  return all.filter((r) => r.snapshot.host === host && sameRoots(r.snapshot) && canBeParent(r.snapshot)).at(-1);
}

/**
 * Builds one snapshot. Files are compared with the parent snapshot:
 * - same inode, size and mtime: the parent's chunk list is reused without reading the file;
 * - same inode, grown, and the old last chunk still has the same bytes: only the tail is read,
 *   re-chunked from the start of the old last chunk (identical to a full re-chunk, see chunker.ts);
 * - anything else (new inode, shrunk, changed last chunk): the whole file is re-chunked.
 */
export class SnapshotBuilder {
  private readonly writer: BlobWriter;
  private readonly tree: TreeWriter;
  private readonly content: ContentChunker;
  private readonly parentNodes = new Map<string, TreeNode>();
  /** Paths that could not be read; the snapshot still takes everything else. */
  private readonly skipped: SkippedPath[] = [];
  private readonly started = Date.now();
  private readonly counts = { files: 0, dirs: 0, bytesTotal: 0, filesNew: 0, filesChanged: 0, filesUnchanged: 0 };
  private lastProgress = 0;

  constructor(
    private readonly repo: Repository,
    pool: SealPool,
    private readonly onProgress?: (p: SnapshotProgress) => void,
    /** The repository lock's: once it is lost, no further entry is stored and nothing is committed. */
    private readonly lockLost?: AbortSignal,
  ) {
    this.writer = new BlobWriter(repo, pool);
    this.tree = new TreeWriter(repo, this.writer);
    this.content = new ContentChunker(repo, this.writer, repo.dataChunker, BlobType.Data);
  }

  /** Tree blobs of an unreadable parent that are damaged: the new file list must not reuse them. */
  private damagedTree = new Set<string>();

  async forgetParent(parent: SnapshotRecord): Promise<void> {
    this.parentNodes.clear();
    const reader = new BlobReader(this.repo, new SealPool(0));
    for (const id of parent.snapshot.tree) {
      await reader.read([id]).catch((err: unknown) => {
        if (err instanceof RepoError) this.damagedTree.add(id);
      });
    }
  }

  async loadParent(parent: SnapshotRecord): Promise<void> {
    // Inline: the parent's tree is a few MB at most, less work than starting a worker thread.
    const inline = new SealPool(0);
    for await (const node of readTree(new BlobReader(this.repo, inline), parent.snapshot.tree)) {
      if (node.type === "file") this.parentNodes.set(nodeKey(node.root, node.pathBytes ?? node.path), node);
    }
  }

  async addEntry(entry: ScannedEntry): Promise<void> {
    this.lockLost?.throwIfAborted();
    const base: Pick<TreeNode, "root" | "path" | "pathBytes" | "mode" | "mtimeMs"> = { root: entry.root, path: entry.path, mode: entry.stat.mode & 0o7777, mtimeMs: entry.stat.mtimeMs };
    if (entry.pathBytes) base.pathBytes = entry.pathBytes;
    if (entry.type === "dir") {
      this.counts.dirs++;
      await this.tree.add({ ...base, type: "dir" });
    } else if (entry.type === "symlink") {
      const target = await fs.readlink(entry.abs).catch((err: NodeJS.ErrnoException) => {
        if (isPathError(err)) this.skip(entry.root, entry.path, err);
        return undefined;
      });
      if (target !== undefined) await this.tree.add({ ...base, type: "symlink", target });
    } else {
      const node = await this.storeFile(entry);
      if (node) await this.tree.add({ ...base, ...node, type: "file" });
    }
  }

  /** Import path for non-disk sources (tar archives): content arrives as a stream. */
  async addStreamedFile(node: Omit<TreeNode, "content" | "size" | "type">, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    let size = 0;
    for await (const chunk of chunks) {
      size += chunk.length;
      await this.content.push(chunk);
    }
    const { ids } = await this.content.end();
    this.count("new", size, node.path);
    await this.tree.add({ ...node, type: "file", size, content: ids });
  }

  async addNode(node: TreeNode): Promise<void> {
    if (node.type === "dir") this.counts.dirs++;
    await this.tree.add(node);
  }

  private async storeFile(entry: ScannedEntry): Promise<Pick<TreeNode, "size" | "ino" | "content" | "mtimeMs"> | undefined> {
    const { stat } = entry;
    const prev = this.parentNodes.get(nodeKey(entry.root, entry.pathBytes ?? entry.path));
    if (prev && prev.ino === stat.ino && prev.size === stat.size && prev.mtimeMs === stat.mtimeMs && prev.content) {
      this.count("unchanged", stat.size, entry.path);
      return { size: stat.size, ino: stat.ino, content: prev.content, mtimeMs: stat.mtimeMs };
    }
    let handle;
    try {
      handle = await fs.open(entry.abs, "r");
    } catch (err) {
      // Deleted between scan and read: the next snapshot will not list it either.
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      if (isPathError(err)) {
        this.skip(entry.root, entry.path, err as NodeJS.ErrnoException);
        return undefined;
      }
      throw err;
    }
    try {
      const st = await handle.stat();
      const resumeAt = prev && st.ino === prev.ino && st.size > (prev.size ?? 0) ? await this.appendPoint(handle, prev) : undefined;
      const kept = resumeAt ? prev!.content!.slice(0, -1) : [];
      const end = st.size;
      let pos = resumeAt?.offset ?? 0;
      while (pos < end) {
        const space = this.content.space;
        const want = Math.min(space.length, READ_BLOCK, end - pos);
        const { bytesRead } = await handle.read(space, 0, want, pos);
        if (bytesRead === 0) break; // truncated while we read: keep what was there
        pos += bytesRead;
        await this.content.filled(bytesRead);
      }
      const { ids } = await this.content.end();
      this.count(prev ? "changed" : "new", pos, entry.path);
      return { size: pos, ino: st.ino, content: [...kept, ...ids], mtimeMs: st.mtimeMs };
    } finally {
      await handle.close();
    }
  }

  /**
   * Where to resume chunking a grown file: the start of the parent's last chunk, if those bytes are
   * still exactly the parent's last chunk. A mismatch means the file was rewritten, not appended to.
   */
  private async appendPoint(handle: fs.FileHandle, prev: TreeNode): Promise<{ offset: number } | undefined> {
    const content = prev.content ?? [];
    const last = content.at(-1);
    if (!last) return undefined;
    const loc = this.repo.index.get(last);
    if (!loc) return undefined;
    const offset = (prev.size ?? 0) - loc.rawLength;
    if (offset < 0) return undefined;
    const buf = Buffer.allocUnsafe(loc.rawLength);
    const { bytesRead } = await handle.read(buf, 0, loc.rawLength, offset);
    if (bytesRead !== loc.rawLength || this.repo.blobId(buf) !== last) return undefined;
    return { offset };
  }

  private count(outcome: FileOutcome, size: number, current: string): void {
    this.counts.files++;
    this.counts.bytesTotal += size;
    if (outcome === "new") this.counts.filesNew++;
    else if (outcome === "changed") this.counts.filesChanged++;
    else this.counts.filesUnchanged++;
    const now = Date.now();
    if (this.onProgress && now - this.lastProgress > 100) {
      this.lastProgress = now;
      this.onProgress({ files: this.counts.files, bytes: this.counts.bytesTotal, current });
    }
  }

  skip(root: string, path: string, err: NodeJS.ErrnoException): void {
    // "EACCES: permission denied, open '/abs/path'": the path is already in `path`.
    this.skipped.push({ root, path, error: err.message.split(", ")[0] || String(err.code) });
  }

  abort(): Promise<void> {
    return this.writer.abort();
  }

  /** Write the tree, the index, then the snapshot object: only the last makes the snapshot visible. */
  async commit(meta: { host: string; roots: SourceRoot[]; tags: string[]; parent?: string; time?: string; imported?: string }): Promise<SnapshotResult> {
    const tree = await this.tree.finish();
    // Deduplication would point this file list at the parent's damaged bytes: refuse rather than
    // save a snapshot that cannot be read back.
    const reused = tree.filter((id) => this.damagedTree.has(id));
    if (reused.length) {
      throw new RepoError(
        `this snapshot's file list would reuse ${reused.length} damaged tree blob(s) of an earlier snapshot; nothing was saved (run \`pi-guard check --read-data\`)`,
        "corrupt",
      );
    }
    await this.writer.finish();
    const summary: SnapshotSummary = {
      ...this.counts,
      bytesNew: this.writer.bytesNew,
      bytesStored: this.writer.bytesStored,
      durationMs: Date.now() - this.started,
    };
    const snapshot: Snapshot = {
      version: 1,
      time: meta.time ?? new Date().toISOString(),
      host: meta.host,
      user: os.userInfo().username,
      tags: this.skipped.length ? [...new Set([...meta.tags, INCOMPLETE_TAG])] : meta.tags,
      roots: meta.roots,
      tree,
      parent: meta.parent,
      imported: meta.imported,
      skipped: this.skipped.length ? this.skipped : undefined,
      program: PROGRAM,
      summary,
    };
    this.lockLost?.throwIfAborted();
    const id = await this.repo.saveSnapshot(snapshot);
    if (!this.lockLost?.aborted) {
      // The snapshot is committed: keeping index/ small must not turn it into a failure.
      await this.repo.consolidateIndex().catch((err: unknown) => this.repo.onWarning(`index consolidation skipped: ${err instanceof Error ? err.message : String(err)}`));
    }
    return { id, snapshot };
  }
}
