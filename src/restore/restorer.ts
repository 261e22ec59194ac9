import { makeDirs } from "../fs-safe.js";
import { parseSessionFileName } from "../pi/writer.js";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import picomatch from "picomatch";
import { BlobReader } from "../repo/blob-reader.js";
import { RepoError } from "../repo/errors.js";
import { BlobType, type TreeNode } from "../repo/format.js";
import { ContentChunker } from "../snapshot/content-chunker.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { SealPool } from "../repo/seal-pool.js";
import { syncDir } from "../fs-safe.js";
import { readTree } from "../snapshot/tree.js";

export interface RestoreOptions {
  /** Where each snapshot root goes (root name -> directory). */
  destinations: Record<string, string>;
  /** Globs relative to the root; only matching files are restored. */
  paths?: string[];
  /** A session id (or prefix): restore only that session's file(s). */
  session?: string;
  dryRun?: boolean;
  /** Delete files under the restored scope that the snapshot does not have. Off by default. */
  deleteExtra?: boolean;
  /** Which paths a snapshot would have taken: --delete never touches anything outside it. */
  scope?: (rel: string) => boolean;
  /**
   * fsync each file before it is renamed into place. On for in-place restores, which replace the
   * user's files; a restore into a fresh target folder replaces nothing and skips it.
   */
  durable?: boolean;
  onProgress?: (p: { files: number; bytes: number; current: string }) => void;
  /** The repository lock's: the restore stops (throws its reason) once the lock is lost. */
  signal?: AbortSignal;
}

export type FileAction = "create" | "replace" | "unchanged" | "delete";

export interface RestoreReport {
  snapshotId: string;
  files: { path: string; root: string; action: FileAction; size: number; dest: string }[];
  failed: { path: string; error: string }[];
  bytesWritten: number;
  durationMs: number;
}

const BATCH_BYTES = 2 * 1024 * 1024;
/** Files restored at once: overlaps one file's disk writes with the next one's decryption. */
const PARALLEL_FILES = 2;

/** Matches files pi named `<time>_<session id>.jsonl` whose id starts with `session`. */
export function sessionMatcher(session: string): (rel: string) => boolean {
  const prefix = session.toLowerCase();
  return (rel) => parseSessionFileName(rel)?.id.toLowerCase().startsWith(prefix) ?? false;
}

/** Write the files of a snapshot into their destinations. Each file lands atomically (temp + rename). */
export async function restoreSnapshot(repo: Repository, record: SnapshotRecord, opts: RestoreOptions): Promise<RestoreReport> {
  const started = Date.now();
  await repo.loadIndex();
  // Restore is decryption-bound and the main thread mostly waits, so it decrypts too.
  const pool = new SealPool(Math.max(1, Math.min(3, os.availableParallelism() - 1)), true);
  const reader = new BlobReader(repo, pool);
  const wantPath = opts.paths?.length ? picomatch(opts.paths, { dot: true }) : () => true;
  const wantSession = opts.session ? sessionMatcher(opts.session) : () => true;
  const report: RestoreReport = { snapshotId: record.id, files: [], failed: [], bytesWritten: 0, durationMs: 0 };
  const kept = new Map<string, Set<string>>();
  const filtered = !!(opts.paths?.length || opts.session);
  const running = new Set<Promise<void>>();
  try {
    for await (const node of readTree(reader, record.snapshot.tree)) {
      opts.signal?.throwIfAborted();
      const destRoot = opts.destinations[node.root];
      if (!destRoot) continue;
      const dest = path.join(destRoot, ...node.path.split("/"));
      if (node.type === "dir") {
        if (!filtered && !opts.dryRun) await ensureDir(dest, node.mode);
        continue;
      }
      if (!wantPath(node.path) || !wantSession(node.path)) continue;
      if (!kept.has(node.root)) kept.set(node.root, new Set());
      kept.get(node.root)!.add(node.path);
      if (node.type === "symlink") {
        if (!opts.dryRun) await restoreSymlink(dest, node.target ?? "");
        continue;
      }
      const action = await plannedAction(repo, dest, node);
      report.files.push({ path: node.path, root: node.root, action, size: node.size ?? 0, dest });
      if (opts.dryRun || action === "unchanged") continue;
      const job = writeFileAtomically(reader, dest, node, !!opts.durable).then(
        () => {
          report.bytesWritten += node.size ?? 0;
          opts.onProgress?.({ files: report.files.length, bytes: report.bytesWritten, current: node.path });
        },
        (err: unknown) => {
          if (err instanceof RepoError && err.kind === "corrupt") report.failed.push({ path: node.path, error: err.message });
          else throw describeFsError(err, dest);
        },
      );
      running.add(job);
      void job.finally(() => running.delete(job)).catch(() => undefined);
      if (running.size >= PARALLEL_FILES) await Promise.race(running);
    }
    await Promise.all(running);
    opts.signal?.throwIfAborted();
    if (opts.deleteExtra) await planDeletes(opts, kept, report, wantPath, wantSession);
  } finally {
    await Promise.allSettled(running);
    await pool.close();
  }
  report.files.sort((a, b) => a.root.localeCompare(b.root) || a.path.localeCompare(b.path));
  report.durationMs = Date.now() - started;
  return report;
}

async function ensureDir(dir: string, mode: number): Promise<void> {
  try {
    await makeDirs(dir, mode || 0o755);
  } catch (err) {
    throw describeFsError(err, dir);
  }
}

export function describeFsError(err: unknown, where: string): Error {
  const code = (err as NodeJS.ErrnoException)?.code;
  const reasons: Record<string, string> = {
    EACCES: "permission denied",
    EPERM: "operation not permitted",
    EROFS: "read-only file system",
    ENOTDIR: "a parent is not a directory",
    ENOSPC: "no space left on device",
    EEXIST: "already exists",
    EISDIR: "is a directory",
    ENOENT: "it does not exist and cannot be created",
  };
  if (code && reasons[code]) return new RepoError(`cannot write ${where}: ${reasons[code]}`, "io");
  return err as Error;
}

/** "unchanged" only when the file on disk has exactly the snapshot's chunks (same bytes) and mode. */
async function plannedAction(repo: Repository, dest: string, node: TreeNode): Promise<FileAction> {
  const st = await fs.lstat(dest).catch(() => undefined);
  if (!st) return "create";
  if (!st.isFile() || st.size !== node.size || (st.mode & 0o7777) !== node.mode) return "replace";
  const handle = await fs.open(dest, "r").catch(() => undefined);
  if (!handle) return "replace";
  try {
    const chunker = new ContentChunker(repo, undefined, repo.dataChunker, BlobType.Data);
    for (let pos = 0; ; ) {
      const { bytesRead } = await handle.read(chunker.space, 0, chunker.space.length, pos);
      if (bytesRead === 0) break;
      pos += bytesRead;
      await chunker.filled(bytesRead);
    }
    const { ids } = await chunker.end();
    const want = node.content ?? [];
    return ids.length === want.length && ids.every((id, i) => id === want[i]) ? "unchanged" : "replace";
  } finally {
    await handle.close();
  }
}

async function writeFileAtomically(reader: BlobReader, dest: string, node: TreeNode, durable: boolean): Promise<void> {
  const dir = path.dirname(dest);
  await makeDirs(dir);
  const tmp = path.join(dir, `.${path.basename(dest)}.pi-guard-${randomBytes(4).toString("hex")}`);
  const handle = await fs.open(tmp, "wx", node.mode & 0o777);
  let ok = false;
  try {
    for await (const parts of reader.batches(node.content ?? [], BATCH_BYTES)) await handle.writev(parts);
    await handle.chmod(node.mode & 0o7777);
    if (durable) await handle.sync();
    ok = true;
  } finally {
    await handle.close();
    if (!ok) await fs.unlink(tmp).catch(() => undefined);
  }
  const mtime = new Date(node.mtimeMs);
  await fs.utimes(tmp, mtime, mtime);
  await fs.rename(tmp, dest);
  if (durable) await syncDir(dir);
}

async function restoreSymlink(dest: string, target: string): Promise<void> {
  await makeDirs(path.dirname(dest));
  const current = await fs.readlink(dest).catch(() => undefined);
  if (current === target) return;
  const tmp = `${dest}.pi-guard-${randomBytes(4).toString("hex")}`;
  await fs.symlink(target, tmp);
  await fs.rename(tmp, dest);
}

async function planDeletes(
  opts: RestoreOptions,
  kept: Map<string, Set<string>>,
  report: RestoreReport,
  wantPath: (p: string) => boolean,
  wantSession: (p: string) => boolean,
): Promise<void> {
  for (const [root, dir] of Object.entries(opts.destinations)) {
    const keep = kept.get(root) ?? new Set<string>();
    for (const rel of await listFiles(dir)) {
      if (keep.has(rel) || !wantPath(rel) || !wantSession(rel) || !(opts.scope?.(rel) ?? true)) continue;
      const dest = path.join(dir, rel);
      report.files.push({ path: rel, root, action: "delete", size: 0, dest });
      if (!opts.dryRun) await fs.unlink(dest);
    }
  }
}

async function listFiles(dir: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  const entries = await fs.readdir(path.join(dir, rel), { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(dir, r)));
    else out.push(r);
  }
  return out;
}
