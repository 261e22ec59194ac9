/**
 * `pi-guard verify`: the live files against a snapshot, byte for byte. Each live file is read in
 * the lengths of the snapshot's blobs and every piece hashed with the repository's blob id key
 * (HMAC-SHA-256, docs/FORMAT.md §4): a piece matches only if it is the blob's bytes, so the whole
 * file matches only if it is exactly what a restore would write. Only the index and the tree are
 * read from the repository (under a shared lock); that the repository can deliver the blobs is
 * `check --read-data`'s job. The sources are only read.
 *
 * It finds what change detection cannot: a same-length rewrite in place before a grown file's tail
 * inside the append window (docs/FORMAT.md §10), a rewrite that kept inode, size, mtime and ctime.
 */
import { constants, promises as fs } from "node:fs";
import type { Config } from "../config/config.js";
import { chooseSnapshotAt } from "../engine.js";
import { BlobReader } from "../repo/blob-reader.js";
import type { SnapshotRoot, SpecialPath, TreeNode } from "../repo/format.js";
import { withLock } from "../repo/lock.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { SealPool } from "../repo/seal-pool.js";
import { scanSources, type ScannedEntry } from "./scan.js";
import { readAt } from "./snapshotter.js";
import { nodeKey, readTree } from "./tree.js";

export interface VerifyOptions {
  /** Which snapshot, as restore takes it: "latest" (the default), an id, a time. */
  when?: string;
  /** Choose among this host's snapshots (as restore does). */
  host?: string;
  lockWaitMs?: number;
  onProgress?: (p: { files: number; bytes: number; current: string }) => void;
}

/**
 * changed: other bytes, another link target, or another type; missing: in the snapshot, not on
 * disk; new: on disk, not in the snapshot; unreadable: on disk but not readable (permissions);
 * damaged: the snapshot's own record of the file cannot be located in the repository.
 */
export type DifferenceStatus = "changed" | "missing" | "new" | "unreadable" | "damaged";

export interface Difference {
  root: string;
  path: string;
  status: DifferenceStatus;
  /** What the snapshot has ("file", "symlink"), or for `new` what is on disk. */
  type: string;
  /** changed files: where the first blob that differs starts (the snapshot's size when its bytes are all the start of the live file). */
  from?: number;
  snapshotSize?: number;
  liveSize?: number;
  /** What is on disk, when it is not the snapshot's type. */
  liveType?: string;
  error?: string;
}

export interface VerifyReport {
  snapshot: SnapshotRecord;
  identical: boolean;
  /** Files and symlinks of the snapshot compared with the disk. */
  files: number;
  same: number;
  /** Live bytes read. */
  bytes: number;
  differences: Difference[];
  /** FIFOs, sockets and devices on disk: not compared (a snapshot holds none, docs/FORMAT.md §7). */
  special: SpecialPath[];
  /** Roots of the snapshot that the configuration no longer has: nothing of them was compared. */
  rootsNotConfigured: SnapshotRoot[];
  durationMs: number;
}

type LiveEntry = Pick<ScannedEntry, "abs" | "type">;

const READ_BLOCK = 1024 * 1024;

/** A file's bytes in order, `next(n)` at a time, read from the disk a block at a time (not a read per blob). */
class BlockReader {
  bytesRead = 0;
  private start = 0;
  private end = 0;
  private offset = 0;

  constructor(
    private readonly handle: fs.FileHandle,
    private readonly buf: Buffer,
  ) {}

  /** The next `n` bytes (valid until the next call), or undefined at the end of the file. */
  async next(n: number): Promise<Buffer | undefined> {
    if (this.end - this.start < n) {
      this.buf.copy(this.buf, 0, this.start, this.end);
      this.end -= this.start;
      this.start = 0;
      const got = await readAt(this.handle, this.buf.subarray(this.end), this.offset);
      this.offset += got;
      this.end += got;
      this.bytesRead += got;
      if (this.end < n) return undefined;
    }
    const out = this.buf.subarray(this.start, this.start + n);
    this.start += n;
    return out;
  }
}

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

export async function verifySnapshot(config: Config, repo: Repository, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const started = Date.now();
  return withLock(repo, { exclusive: false, command: "verify", waitMs: opts.lockWaitMs ?? 60_000 }, async () => {
    const { record } = await chooseSnapshotAt(repo, opts.when ?? "latest", { host: opts.host });
    await repo.loadIndex();
    const configured = new Set(config.roots.map((r) => r.name));
    const rootsNotConfigured = record.snapshot.roots.filter((r) => !configured.has(r.name));
    const differences: Difference[] = [];
    const special: SpecialPath[] = [];
    const live = new Map<string, LiveEntry & { root: string; path: string }>();
    const onUnreadable = (root: string, path: string, err: NodeJS.ErrnoException) =>
      differences.push({ root, path, status: "unreadable", type: "unknown", error: err.message.split(", ")[0] || String(err.code) });
    for await (const e of scanSources(config.roots, config.filter, onUnreadable)) {
      if (e.type === "special") special.push({ root: e.root, path: e.path, kind: e.kind! });
      else live.set(nodeKey(e.root, e.pathBytes ?? e.path), { root: e.root, path: e.path, abs: e.abs, type: e.type });
    }

    const compare = new FileComparer(repo, opts.onProgress);
    const report = { files: 0, same: 0 };
    for await (const node of readTree(new BlobReader(repo, new SealPool(0)), record.snapshot)) {
      // The tree is untrusted: a line that is not a node of a known root is not compared.
      if (!node || typeof node.root !== "string" || typeof node.path !== "string" || !configured.has(node.root)) continue;
      const key = nodeKey(node.root, node.pathBytes ?? node.path);
      const here = live.get(key);
      live.delete(key);
      if (node.type === "dir" && here && here.type !== "dir") differences.push({ root: node.root, path: node.path, status: "changed", type: "dir", liveType: here.type });
      // Folders are not compared otherwise: their files are.
      if (node.type !== "file" && node.type !== "symlink") continue;
      report.files++;
      const diff = here ? await compare.entry(node, here) : { root: node.root, path: node.path, status: "missing" as const, type: node.type };
      if (diff) differences.push(diff);
      else report.same++;
    }
    for (const e of live.values()) if (e.type !== "dir") differences.push({ root: e.root, path: e.path, status: "new", type: e.type });
    return {
      snapshot: record,
      identical: differences.length === 0 && rootsNotConfigured.length === 0,
      ...report,
      bytes: compare.bytes,
      differences,
      special,
      rootsNotConfigured,
      durationMs: Date.now() - started,
    };
  });
}

/** Compares one node with what is on disk at its path. */
class FileComparer {
  bytes = 0;
  private files = 0;
  private lastProgress = 0;
  /** Read a block at a time; a blob (no data blob is longer than the chunker's maximum) always fits. */
  private readonly buf: Buffer;

  constructor(
    private readonly repo: Repository,
    private readonly onProgress?: VerifyOptions["onProgress"],
  ) {
    this.buf = Buffer.allocUnsafe(READ_BLOCK + repo.dataChunker.params.max);
  }

  private get maxBlob(): number {
    return this.repo.dataChunker.params.max;
  }

  /** Undefined when the same. */
  async entry(node: TreeNode, here: LiveEntry): Promise<Difference | undefined> {
    const base = { root: node.root, path: node.path, type: node.type };
    this.progress(node.path);
    if (here.type !== node.type) return { ...base, status: "changed", liveType: here.type };
    try {
      if (node.type === "symlink") return (await fs.readlink(here.abs, "utf8")) === node.target ? undefined : { ...base, status: "changed" };
      return await this.file(node, here.abs, base);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Gone since the scan: as good as missing.
      if (code === "ENOENT") return { ...base, status: "missing" };
      if (code === "ELOOP") return { ...base, status: "changed", liveType: "symlink" };
      if (code === "EACCES" || code === "EPERM" || code === "EIO") return { ...base, status: "unreadable", error: (err as Error).message.split(", ")[0] };
      throw err;
    }
  }

  private async file(node: TreeNode, abs: string | Buffer, base: Pick<Difference, "root" | "path" | "type">): Promise<Difference | undefined> {
    const content = Array.isArray(node.content) ? node.content : [];
    const lengths: number[] = [];
    for (const id of content) {
      const len = typeof id === "string" ? this.repo.index.get(id)?.rawLength : undefined;
      if (len === undefined || len > this.maxBlob) return { ...base, status: "damaged", error: `blob ${String(id).slice(0, 8)} of the snapshot is not in the repository's index` };
      lengths.push(len);
    }
    const snapshotSize = lengths.reduce((a, b) => a + b, 0);
    if (snapshotSize !== node.size) return { ...base, status: "damaged", error: `its blobs hold ${snapshotSize} bytes, its node says ${String(node.size)}` };
    const handle = await fs.open(abs, OPEN_FLAGS);
    try {
      const st = await handle.stat();
      // Replaced since the scan by something that is not a file (opened without blocking, not read).
      if (!st.isFile()) return { ...base, status: "changed", liveType: "special" };
      const liveSize = st.size;
      const input = new BlockReader(handle, this.buf);
      let pos = 0;
      let from: number | undefined;
      for (const [i, id] of content.entries()) {
        const len = lengths[i];
        const piece = pos + len <= liveSize ? await input.next(len) : undefined;
        if (!piece || this.repo.blobId(piece) !== id) {
          from = pos;
          break;
        }
        pos += len;
      }
      this.bytes += input.bytesRead;
      if (from === undefined && pos !== liveSize) from = pos;
      return from === undefined ? undefined : { ...base, status: "changed", from, snapshotSize, liveSize };
    } finally {
      await handle.close();
    }
  }

  private progress(current: string): void {
    this.files++;
    const now = Date.now();
    if (this.onProgress && now - this.lastProgress > 100) {
      this.lastProgress = now;
      this.onProgress({ files: this.files, bytes: this.bytes, current });
    }
  }
}
