import os from "node:os";
import { descriptorUse, retryOutOfDescriptors, syncDir, writeFully } from "../fs-safe.js";
import { parseSessionFileName } from "../agents/pi/writer.js";
import { constants, promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import picomatch from "picomatch";
import { BlobReader } from "../repo/blob-reader.js";
import { type BlobSink, PackOrderedRead, readConcurrency } from "../repo/read-pipeline.js";
import { RepoError } from "../repo/errors.js";
import type { TreeNode } from "../repo/format.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { defaultPoolSize, SealPool } from "../repo/seal-pool.js";
import { workersSetting } from "../worker-file.js";
import { readTree } from "../snapshot/tree.js";
import { SQLITE_SIDE_SUFFIXES } from "../snapshot/sqlite-copy.js";
import { type FsPath, joinPath, lstatOrNone, nodeComponents, RefusedPath, resolveDestRoot, showPath, walkDirs, walkToFile } from "./safe-path.js";
import type { AdoptedRoot } from "./sessions-root.js";

export interface RestoreOptions {
  /** Where each snapshot root goes (root name -> directory). */
  destinations: Record<string, string>;
  /**
   * The real folder a root's files go to when its destination does not lead there yet: a sessions
   * symlink this very restore puts back, or one whose folder is gone (sessions-root.ts).
   */
  realRoots?: Record<string, string>;
  /**
   * Roots the current config does not name (sessions-root.ts): only nodes `allows` passes are
   * written, only where nothing is yet; the rest is refused with its `refusal`, and --delete
   * leaves them alone.
   */
  adopted?: Record<string, AdoptedRoot>;
  /** Globs relative to the root; only matching files are restored. */
  paths?: string[];
  /** A session id (or prefix): restore only that session's files, which `units` names (engine.ts resolves the id). */
  session?: string;
  /**
   * The files of the restore units a --path or --session selection grew to (unit-select.ts), as
   * `${root}\0${path}`: restored beside what `paths` matches; with `session`, only these.
   */
  units?: ReadonlySet<string>;
  dryRun?: boolean;
  /** Delete files under the restored scope that the snapshot does not have. Off by default. */
  deleteExtra?: boolean;
  /** Which paths a snapshot would have taken: --delete never touches anything outside it. */
  scope?: (rel: string) => boolean;
  /**
   * Only these paths, by root and tree key (the path, or base64 of its bytes when they are not
   * UTF-8): an undo names exactly the files a restore changed, which globs cannot.
   */
  select?: (root: string, key: string) => boolean;
  /**
   * fsync each file before it is renamed into place. On for in-place restores, which replace the
   * user's files; a restore into a fresh target folder replaces nothing and skips it.
   */
  durable?: boolean;
  onProgress?: (p: { files: number; bytes: number; current: string }) => void;
  /** The repository lock's: the restore stops (throws its reason) once the lock is lost. */
  signal?: AbortSignal;
  /**
   * Temp files kept open at once (default MAX_OPEN, fewer when the open-file limit leaves less);
   * idle ones past it are closed and reopened.
   */
  maxOpenFiles?: number;
}

export type FileAction = "create" | "replace" | "unchanged" | "delete";

/** Why a path was not restored: its data is damaged, restore refused it (unsafe, in the way), or the file system failed. */
export type FailureKind = "damaged" | "refused" | "io";

export interface RestoreFailure {
  path: string;
  root?: string;
  error: string;
  kind: FailureKind;
}

export interface RestoreReport {
  snapshotId: string;
  /** Only what was done (or, in a dry run, would be done): a file that failed is in `failed` only. */
  files: { path: string; root: string; action: FileAction; size: number; dest: string }[];
  failed: RestoreFailure[];
  bytesWritten: number;
  durationMs: number;
}

export interface PlanItem {
  type: "file" | "symlink" | "dir" | "delete";
  node?: TreeNode;
  root: string;
  /** The destination root as a real path; every write walks to it from "/" again. */
  rootDir: string;
  comps: FsPath[];
  rel: string;
  /** The tree's key for the path (see RestoreOptions.select). */
  key: string;
  action: FileAction;
}

export interface RestorePlan {
  record: SnapshotRecord;
  opts: RestoreOptions;
  items: PlanItem[];
  /** Nodes refused while planning (unsafe paths, folders in the way). */
  failed: RestoreFailure[];
  /** Files, links and deletions that would change something on disk. */
  changes: number;
  started: number;
}

/**
 * Matches files pi named `<time>_<session id>.jsonl` whose id starts with `session`: the restic
 * engine's search of its other snapshots for a pi session the chosen one lacks (a session itself
 * is found through the agents on both engines: agents/find-session.ts).
 */
export function sessionMatcher(session: string): (rel: string) => boolean {
  const prefix = session.toLowerCase();
  return (rel) => parseSessionFileName(rel)?.id.toLowerCase().startsWith(prefix) ?? false;
}

/** Plan, then write the files of a snapshot into their destinations. Each file lands atomically (temp + rename). */
export async function restoreSnapshot(repo: Repository, record: SnapshotRecord, opts: RestoreOptions): Promise<RestoreReport> {
  const plan = await planRestore(repo, record, opts);
  return opts.dryRun ? planReport(plan) : applyRestore(repo, plan);
}

const nodeKey = (node: { path: string; pathBytes?: string }): string => node.pathBytes ?? node.path;

/**
 * Read the snapshot's tree and decide, for each node, what restoring it would do. Nothing is
 * written. Unsafe nodes, and nodes whose place is taken by a folder, are listed in `failed`.
 */
export async function planRestore(repo: Repository, record: SnapshotRecord, opts: RestoreOptions): Promise<RestorePlan> {
  const started = Date.now();
  await repo.loadIndex();
  const rootDirs = new Map<string, string>();
  for (const [name, dir] of Object.entries(opts.destinations)) rootDirs.set(name, await resolveDestRoot(opts.realRoots?.[name] ?? dir));
  const pool = new SealPool(0);
  const reader = new BlobReader(repo, pool);
  const wantPath = opts.paths?.length ? picomatch(opts.paths, { dot: true }) : () => true;
  // A session is its units' files; a path selection also brings its units' companions.
  const inUnits = (root: string, rel: string) => opts.units?.has(`${root}\0${rel}`) ?? false;
  const wanted = (root: string, rel: string) => (opts.session ? inUnits(root, rel) : wantPath(rel) || inUnits(root, rel));
  const select = opts.select ?? (() => true);
  const filtered = !!(opts.paths?.length || opts.session || opts.select);
  const plan: RestorePlan = { record, opts, items: [], failed: [], changes: 0, started };
  const kept = new Map<string, Set<string>>();
  // Nothing is written while planning, so each folder is walked once.
  const walkParent = cached((rootDir: string, comps: FsPath[]) => walkDirs(rootDir, comps.slice(0, -1), false));
  try {
    for await (const node of readTreeChecked(reader, record)) {
      if (!node || typeof node !== "object") {
        plan.failed.push({ path: JSON.stringify(node), error: "not a file list entry", kind: "damaged" });
        continue;
      }
      const rootDir = rootDirs.get(node.root);
      if (!rootDir) continue;
      const rel = typeof node.path === "string" ? node.path : JSON.stringify(node.path);
      if (node.type === "dir" ? filtered : !wanted(node.root, rel) || !select(node.root, nodeKey(node))) continue;
      const refuse = (error: string) => plan.failed.push({ path: rel, root: node.root, error, kind: "refused" });
      if (node.type !== "file" && node.type !== "dir" && node.type !== "symlink") {
        refuse(`unknown node type ${JSON.stringify(node.type)}`);
        continue;
      }
      let comps: FsPath[];
      try {
        comps = nodeComponents(node);
      } catch (err) {
        refuse((err as Error).message);
        continue;
      }
      if (node.type !== "dir") {
        if (!kept.has(node.root)) kept.set(node.root, new Set());
        kept.get(node.root)!.add(nodeKey(node));
      }
      try {
        const action = await plannedAction(repo, walkParent(rootDir, comps), comps, node);
        const adopted = opts.adopted?.[node.root];
        if (adopted && action !== "unchanged") {
          // A pi session file that is not there yet, or nothing: replacing would need an undo snapshot of this root.
          const sessionFile = adopted.allows(rel, node.type);
          if (!sessionFile || action === "replace") {
            refuse(adopted.refusal(sessionFile));
            continue;
          }
        }
        plan.items.push({ type: node.type, node, root: node.root, rootDir, comps, rel, key: nodeKey(node), action });
        if (action !== "unchanged" && node.type !== "dir") plan.changes++;
      } catch (err) {
        plan.failed.push(failure(rel, node.root, err));
      }
    }
  } finally {
    await pool.close();
  }
  if (opts.deleteExtra) {
    // A folder that stands where the snapshot has a file is the user's: --delete leaves its contents too.
    const blocked = plan.failed.map((f) => `${f.root}\0${f.path}/`);
    for (const [root, rootDir] of rootDirs) {
      if (opts.adopted?.[root]) continue;
      const keep = kept.get(root) ?? new Set<string>();
      for (const f of await listFiles(rootDir)) {
        if (keep.has(f.key) || !wanted(root, f.rel) || !select(root, f.key) || !(opts.scope?.(f.rel) ?? true)) continue;
        if (blocked.some((b) => `${root}\0${f.rel}`.startsWith(b))) continue;
        plan.items.push({ type: "delete", root, rootDir, comps: f.comps, rel: f.rel, key: f.key, action: "delete" });
        plan.changes++;
      }
    }
  }
  await dropStaleSqliteSides(plan, kept);
  return plan;
}

/**
 * A SQLite db comes back alone: a snapshot stores its consistent copy, a self-contained file
 * (snapshot/sqlite-copy.ts). The -wal, -shm or -journal of the db it replaces would be replayed
 * over it, or make it look corrupt, so each one the snapshot does not hold is deleted with it (the
 * pre-restore snapshot keeps them, as it keeps every file a restore replaces).
 */
async function dropStaleSqliteSides(plan: RestorePlan, kept: Map<string, Set<string>>): Promise<void> {
  const planned = new Set(plan.items.map((i) => `${i.root}\0${i.key}`));
  // One listing per folder, not three lstat calls per file: the side files are rare, and a
  // restore into an empty folder has no folder to list at all. A folder that cannot be listed (no
  // read permission) is checked name by name, as before.
  const namesBeside = cached((rootDir: string, comps: FsPath[]) =>
    fs.readdir(parentOf(rootDir, comps), { encoding: "buffer" }).then(
      (list) => new Set(list.map((n) => n.toString("latin1"))),
      (err: NodeJS.ErrnoException) => (err.code === "ENOENT" || err.code === "ENOTDIR" ? new Set<string>() : undefined),
    ),
  );
  for (const item of [...plan.items]) {
    const name = item.comps.at(-1);
    if (item.type !== "file" || item.action === "unchanged" || typeof name !== "string") continue;
    const dir = parentOf(item.rootDir, item.comps);
    for (const suffix of SQLITE_SIDE_SUFFIXES) {
      const rel = item.rel + suffix;
      if (kept.get(item.root)?.has(rel) || planned.has(`${item.root}\0${rel}`)) continue;
      const names = await namesBeside(item.rootDir, item.comps);
      if (names && !names.has(Buffer.from(name + suffix).toString("latin1"))) continue;
      const comps = [...item.comps.slice(0, -1), name + suffix];
      const st = await fs.lstat(joinPath(dir, name + suffix)).catch(() => undefined);
      if (!st?.isFile()) continue;
      plan.items.push({ type: "delete", root: item.root, rootDir: item.rootDir, comps, rel, key: rel, action: "delete" });
      plan.changes++;
    }
  }
}

/** The tree's nodes; a line that is not JSON is damage, reported as such (exit 3), not a crash. */
async function* readTreeChecked(reader: BlobReader, record: SnapshotRecord): AsyncGenerator<TreeNode> {
  try {
    yield* readTree(reader, record.snapshot);
  } catch (err) {
    if (err instanceof SyntaxError) throw new RepoError(`snapshot ${record.id.slice(0, 8)}: its file list is not valid JSON`, "corrupt");
    throw err;
  }
}

/** What a dry run reports: the plan's actions. */
export function planReport(plan: RestorePlan): RestoreReport {
  const report = emptyReport(plan);
  for (const item of plan.items) if (item.type !== "dir") report.files.push(fileEntry(item));
  return finish(report, plan);
}

/**
 * The threads that decode and write a restore's files. The threads write what they decode, so a
 * local restore runs a worker per core, about 18 MB each, so no more than two; its main thread
 * only plans, pins and counts: taking one job in three, it was the busiest thread and kept the
 * workers waiting for their next jobs (1 GiB, 7 interleaved pairs at load 6: 3.29-3.81 s and
 * 3.28-3.49 s of CPU without its share, 3.81-5.28 s and 3.42-3.65 s with it; a third worker
 * instead took 20 MB more and more CPU). A remote restore keeps one worker, its streams' buffers
 * already take that memory, and its main thread decodes too. A caller that knows a restore will
 * write may start the pool early (earlyRestorePool), so that the threads boot while the main
 * thread plans, and closes it.
 */
function restorePool(repo: Repository): SealPool {
  if (repo.target.localPath === undefined) return new SealPool(defaultPoolSize(3), true);
  return new SealPool(workersSetting() ?? Math.max(1, Math.min(2, os.availableParallelism())), false);
}

/**
 * Descriptors that must be free for a restore's workers to start before it plans: a booting
 * thread opens its modules meanwhile, and under a low `ulimit -n` (64) 30 of them took every
 * descriptor the planning needed (EMFILE listing the snapshots). Below it the pool starts with the
 * first job, when the open-file budget leaves room for the threads.
 */
const EARLY_START_FREE_FDS = 256;

/**
 * Less than this to write is a few decode jobs, which may not need a thread at all (the pool starts
 * one only for a batch of 256 KiB or more): a one-file restore took 0.29-0.33 s and 92 MB with two
 * threads started early, 0.24-0.25 s and 73 MB without.
 */
const EARLY_START_BYTES = 4 * 1024 * 1024;

/**
 * restorePool's, started now, for a restore that will write about `bytes`; undefined when that is
 * little, or when the open-file limit leaves too few descriptors to start threads beside the planning.
 */
export async function earlyRestorePool(repo: Repository, bytes: number): Promise<SealPool | undefined> {
  if (!(bytes >= EARLY_START_BYTES)) return undefined;
  const use = await descriptorUse();
  if (use && use.limit - use.open < EARLY_START_FREE_FDS) return undefined;
  return restorePool(repo).start();
}

/**
 * Carry out a plan. Every file is either restored (and in `files`) or listed in `failed`. With
 * `given`, the files are decoded on that pool (restorePool's), which the caller closes.
 */
export async function applyRestore(repo: Repository, plan: RestorePlan, given?: SealPool): Promise<RestoreReport> {
  const { opts } = plan;
  await repo.loadIndex();
  const pool = given ?? restorePool(repo);
  const workers = pool.threads;
  const report = emptyReport(plan);
  const done = (item: PlanItem) => {
    report.files.push(fileEntry(item));
    opts.onProgress?.({ files: report.files.length, bytes: report.bytesWritten, current: item.rel });
  };
  const failed = (item: PlanItem, err: unknown) => report.failed.push(failure(item.rel, item.root, err));
  // A folder made or checked once in this run is not walked again before writing into it; the
  // check right before each rename is never cached.
  const makeParent = cached((rootDir: string, comps: FsPath[]) => walkDirs(rootDir, comps.slice(0, -1), true));
  const files: PlanItem[] = [];
  const writer = new TempFiles(makeParent, !!opts.durable, await openFileBudget(repo, workers, opts.maxOpenFiles ?? MAX_OPEN));
  try {
    for (const item of plan.items) {
      opts.signal?.throwIfAborted();
      if (item.action === "unchanged") {
        if (item.type !== "dir") report.files.push(fileEntry(item));
        continue;
      }
      if (item.type === "file") {
        files.push(item);
        continue;
      }
      if (item.type === "delete") continue;
      try {
        if (item.type === "dir") await walkDirs(item.rootDir, item.comps, true, item.node!.mode & 0o7777 || 0o755);
        else {
          await restoreSymlink(item, makeParent(item.rootDir, item.comps));
          done(item);
        }
      } catch (err) {
        failed(item, err);
      }
    }
    // Files: each needed pack range is read once, and its blobs are written at their offsets into
    // every file's temp file; a file is renamed into place once all of its bytes are written.
    const contents = files.map((item) => item.node!.content ?? []);
    const settled = new Set<number>();
    const sink = writer.sink(files, (f, err) => {
      settled.add(f);
      if (err !== undefined) return void failed(files[f], err);
      report.bytesWritten += files[f].node!.size ?? 0;
      done(files[f]);
    });
    // A file whose blobs do not add up to its size is damaged: nothing of it is written.
    const checkSize = (f: number, size: number) =>
      size === (files[f].node!.size ?? 0) ? undefined : new RepoError(`its data holds ${size} bytes where the snapshot's file list says ${files[f].node!.size}`, "corrupt");
    await new PackOrderedRead(repo, pool, { signal: opts.signal }).run(contents, sink, checkSize);
    await writer.settled();
    opts.signal?.throwIfAborted();
    files.forEach((item, f) => {
      if (!settled.has(f)) failed(item, new RepoError("not all of its data was read", "corrupt"));
    });
    for (const item of plan.items) {
      if (item.type !== "delete") continue;
      try {
        if (await deleteFile(item)) done(item);
      } catch (err) {
        failed(item, err);
      }
    }
  } finally {
    await writer.abandon();
    if (!given) await pool.close();
  }
  return finish(report, plan);
}

function emptyReport(plan: RestorePlan): RestoreReport {
  return { snapshotId: plan.record.id, files: [], failed: [...plan.failed], bytesWritten: 0, durationMs: 0 };
}

function finish(report: RestoreReport, plan: RestorePlan): RestoreReport {
  report.files.sort((a, b) => a.root.localeCompare(b.root) || a.path.localeCompare(b.path));
  report.durationMs = Date.now() - plan.started;
  return report;
}

function fileEntry(item: PlanItem): RestoreReport["files"][number] {
  const size = item.type === "file" ? (item.node!.size ?? 0) : 0;
  return { path: item.rel, root: item.root, action: item.action, size, dest: showPath(joinPath(item.rootDir, item.rel)) };
}

export function failure(rel: string, root: string, err: unknown): RestoreFailure {
  if (err instanceof RefusedPath) return { path: rel, root, error: err.message, kind: "refused" };
  if (err instanceof RepoError) return { path: rel, root, error: err.message, kind: err.kind === "corrupt" ? "damaged" : "io" };
  return { path: rel, root, error: fsReason(err), kind: "io" };
}

const REASONS: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EROFS: "read-only file system",
  ENOTDIR: "a parent is not a directory",
  ENOSPC: "no space left on device",
  EDQUOT: "disk quota exceeded",
  EFBIG: "file too large (a file size limit is set)",
  EEXIST: "already exists",
  EISDIR: "is a directory",
  ENOENT: "it does not exist and cannot be created",
  EIO: "input/output error",
  EMFILE: "too many open files (the open-file limit, ulimit -n, is reached)",
  ENFILE: "too many open files on the system",
};

function fsReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  return (code && REASONS[code]) || (err as Error)?.message || String(err);
}

export function describeFsError(err: unknown, where: string): Error {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code && REASONS[code]) return new RepoError(`cannot write ${where}: ${REASONS[code]}`, "io");
  return err as Error;
}

/**
 * "unchanged" only when the file on disk has exactly the snapshot's chunks (same bytes) and mode.
 * A folder where a file or link belongs is refused: restore never deletes a user's folder.
 */
async function plannedAction(repo: Repository, parentWalk: Promise<FsPath | undefined>, comps: FsPath[], node: TreeNode): Promise<FileAction> {
  const parent = await parentWalk;
  if (!parent) return "create";
  const dest = joinPath(parent, comps[comps.length - 1]);
  const st = await lstatOrNone(dest);
  if (!st) return "create";
  if (node.type === "dir") {
    if (st.isSymbolicLink()) throw new RefusedPath("a symbolic link is where the snapshot has a folder: not following it");
    if (!st.isDirectory()) throw new RefusedPath("a file is where the snapshot has a folder");
    return "unchanged";
  }
  if (st.isDirectory()) throw new RefusedPath(`a folder is in the way: not replacing a folder with a ${node.type === "file" ? "file" : "link"}`);
  if (node.type === "symlink") {
    if (!st.isSymbolicLink()) return "replace";
    return (await fs.readlink(dest).catch(() => undefined)) === node.target ? "unchanged" : "replace";
  }
  if (!st.isFile() || st.size !== node.size || (st.mode & 0o7777) !== node.mode) return "replace";
  const handle = await fs.open(dest, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
  if (!handle) return "replace";
  try {
    // Compare blob by blob at the node's own boundaries: a grown file's content ends in pieces cut
    // at earlier ends of file, which a fresh re-chunk of the same bytes would not reproduce.
    let pos = 0;
    for (const id of node.content ?? []) {
      const len = repo.index.get(id)?.rawLength;
      if (len === undefined || pos + len > st.size) return "replace";
      const buf = Buffer.allocUnsafe(len);
      let have = 0;
      while (have < len) {
        const { bytesRead } = await handle.read(buf, have, len - have, pos + have);
        if (bytesRead === 0) return "replace";
        have += bytesRead;
      }
      if (repo.blobId(buf) !== id) return "replace";
      pos += len;
    }
    return pos === st.size ? "unchanged" : "replace";
  } finally {
    await handle.close();
  }
}

/** Memoise a walk by (root, parent folder): the result, or the refusal, is the same for every file in it. */
function cached<T>(walk: (rootDir: string, comps: FsPath[]) => Promise<T>) {
  const seen = new Map<string, Promise<T>>();
  return (rootDir: string, comps: FsPath[]): Promise<T> => {
    const key = [rootDir, ...comps.slice(0, -1).map((c) => (typeof c === "string" ? `s${c}` : `b${c.toString("base64")}`))].join("\0");
    let hit = seen.get(key);
    if (!hit) {
      hit = walk(rootDir, comps);
      hit.catch(() => undefined);
      seen.set(key, hit);
    }
    return hit;
  };
}

/** The folder that holds `comps` under `rootDir`, joined as is (not walked). */
function parentOf(rootDir: string, comps: FsPath[]): FsPath {
  return comps.slice(0, -1).reduce<FsPath>((p, c) => joinPath(p, c), rootDir);
}

function tempName(name: FsPath): FsPath {
  const suffix = `.pi-guard-${randomBytes(4).toString("hex")}`;
  return typeof name === "string" ? `.${name}${suffix}` : Buffer.concat([Buffer.from("."), name, Buffer.from(suffix)]);
}

/** Check the folders again right before the rename, and that no folder took the file's place. */
async function recheck(item: PlanItem): Promise<FsPath> {
  const dir = await walkDirs(item.rootDir, item.comps.slice(0, -1), false);
  if (!dir) throw new RefusedPath("its folder disappeared during the restore");
  const dest = joinPath(dir, item.comps[item.comps.length - 1]);
  if ((await lstatOrNone(dest))?.isDirectory()) throw new RefusedPath("a folder is in the way: not replacing a folder");
  return dest;
}

/** Files open at once while a restore writes blobs in pack order; past it, idle ones are closed and reopened later. */
const MAX_OPEN = 128;
/**
 * Descriptors a restore leaves to the rest of the process, besides one per pack read at once and
 * about four per worker thread (its event loop's): the lock's refreshes, modules loaded on the
 * way, a socket or a cached pack handle opened meanwhile.
 */
const FD_SPARE = 12;
const FDS_PER_WORKER = 4;

/**
 * Temp files a restore may hold open: `cap`, or fewer when the process's open-file limit
 * (`ulimit -n`) leaves less beside what is open now and what the rest of the restore opens.
 */
async function openFileBudget(repo: Repository, workers: number, cap: number): Promise<number> {
  const use = await descriptorUse();
  if (!use) return cap;
  const free = use.limit - use.open - FD_SPARE - FDS_PER_WORKER * workers - readConcurrency(repo.target);
  return Math.max(1, Math.min(cap, free));
}

interface TempFile {
  /** Its number in the sink's files. */
  index: number;
  item: PlanItem;
  settle: (err?: unknown) => void;
  chain: Promise<void>;
  dir?: FsPath;
  tmp?: FsPath;
  handle?: FileHandle;
  /** It holds one of the writer's descriptor slots (for its handle, or to sync its folder). */
  slot: boolean;
  /** The temp file we made: a reopen must find this very file again. */
  ino?: number;
  dev?: number;
  /** Bytes written or left as a hole; and the end of the last byte actually written. */
  bytes: number;
  written: number;
  busy: boolean;
  /** Jobs of another thread writing to its descriptor now: it is neither closed nor discarded meanwhile. */
  pins: number;
  /** Called when the last pin is given back (a discard waits for it). */
  unpinned?: () => void;
  failed: boolean;
  renamed: boolean;
}

/**
 * The temp files of a restore, written at offsets in any order. Every file's operations run one
 * after another (open, writes, finish); a file lands atomically (temp, size check, fsync when
 * durable, recheck of its folders, rename) only once all its bytes are written, and a failed one
 * leaves no temp file behind.
 *
 * Descriptors: at most `maxOpen` are held at once (open temp files, and the folder of a file
 * being synced). A file that needs one when none is free takes an idle file's (closed, reopened
 * by its next write) or waits for one; an open that still fails for want of descriptors (others
 * of the process took them) lowers `maxOpen` and is retried, never failing a file for it.
 */
class TempFiles {
  private readonly files = new Map<number, TempFile>();
  /** Files with a handle, least recently used first. */
  private readonly openFiles = new Set<TempFile>();
  private slots = 0;
  /** Files pinned, or about to be, by jobs of other threads: always fewer than `maxOpen`. */
  private pinned = 0;
  private readonly waiting: (() => void)[] = [];
  private abandoned = false;

  constructor(
    private readonly makeParent: (rootDir: string, comps: FsPath[]) => Promise<FsPath | undefined>,
    private readonly durable: boolean,
    private maxOpen: number,
  ) {}

  sink(items: PlanItem[], settle: (file: number, err?: unknown) => void): BlobSink {
    const get = (f: number): TempFile => {
      let t = this.files.get(f);
      if (!t) {
        t = { index: f, item: items[f], settle: (err) => settle(f, err), chain: Promise.resolve(), slot: false, bytes: 0, written: 0, busy: false, pins: 0, failed: false, renamed: false };
        this.files.set(f, t);
      }
      return t;
    };
    return {
      write: (f, pos, parts) =>
        this.enqueue(get(f), async (t) => {
          await this.ensureOpen(t);
          const end = await writeFully(t.handle!, parts, pos);
          t.bytes += end - pos;
          t.written = Math.max(t.written, end);
        }),
      // The temp file was created empty: zeros need no write, and stay a hole.
      hole: (f, _pos, length) => {
        get(f).bytes += length;
      },
      done: (f) =>
        void this.enqueue(get(f), async (t) => {
          await this.ensureOpen(t);
          await this.finish(t);
          t.settle();
        }),
      fail: (f, err) => this.failFile(get(f), err),
      failed: (f) => get(f).failed,
      pin: (fs) => this.pin(fs.map(get)),
      unpin: (f, bytes, end, err) => this.unpin(get(f), bytes, end, err),
    };
  }

  /**
   * Open the files and keep them open for a job of another thread. A pin never waits for a
   * descriptor (a job holding some pins while waiting for more could wait on another job doing
   * the same): when one is not free, the pins taken are given back and the job's blobs go through
   * `write`, as they do when pins would leave no descriptor over.
   */
  private async pin(files: TempFile[]): Promise<Map<number, number> | undefined> {
    if (this.pinned + files.length >= this.maxOpen) return undefined;
    this.pinned += files.length;
    const fds = new Map<number, number>();
    let short = false;
    await Promise.all(
      files.map((t) =>
        this.enqueue(t, async () => {
          if (short || !(await this.ensureOpen(t, false))) return void (short = true);
          t.pins++;
          fds.set(t.index, t.handle!.fd);
        }),
      ),
    );
    this.pinned -= files.length - fds.size;
    if (!short) return fds;
    for (const f of fds.keys()) this.unpin(this.files.get(f)!, 0, 0);
    return undefined;
  }

  private unpin(t: TempFile, bytes: number, end: number, err?: Error): void {
    t.pins--;
    this.pinned--;
    if (err) this.failFile(t, err);
    else {
      t.bytes += bytes;
      t.written = Math.max(t.written, end);
    }
    if (t.pins === 0) {
      t.unpinned?.();
      t.unpinned = undefined;
      // Its descriptor can go to a file waiting for one.
      if (t.handle && this.waiting.length) this.waiting.shift()!();
    }
  }

  /** Every queued operation has run. */
  async settled(): Promise<void> {
    for (;;) {
      const chains = [...this.files.values()].map((t) => t.chain);
      await Promise.all(chains);
      if ([...this.files.values()].every((t, i) => t.chain === chains[i])) return;
    }
  }

  /** After the run (or an abort): no temp file stays behind. */
  async abandon(): Promise<void> {
    this.abandoned = true;
    await this.settled().catch(() => undefined);
    for (const t of this.files.values()) if (!t.renamed) await this.discard(t);
  }

  private enqueue(t: TempFile, op: (t: TempFile) => Promise<void>): Promise<void> {
    const run = t.chain.then(async () => {
      // Once abandoned (an abort), a read that still finishes writes nothing.
      if (t.failed || this.abandoned) return;
      t.busy = true;
      try {
        await op(t);
      } catch (err) {
        this.failFile(t, err);
      } finally {
        t.busy = false;
        // An idle file's descriptor can go to a file waiting for one.
        if (t.handle && this.waiting.length) this.waiting.shift()!();
      }
    });
    t.chain = run;
    return run;
  }

  private failFile(t: TempFile, err: unknown): void {
    if (t.failed) return;
    t.failed = true;
    t.settle(err);
    t.chain = t.chain.then(() => this.discard(t));
  }

  /** A descriptor slot for `t`: a free one, an idle file's, or (`wait`) the next one given back. False: none without waiting. */
  private async takeSlot(t: TempFile, wait = true): Promise<boolean> {
    while (!t.slot) {
      if (this.slots < this.maxOpen) {
        this.slots++;
        t.slot = true;
      } else if (!(await this.closeIdle(t))) {
        if (!wait) return false;
        await new Promise<void>((resolve) => this.waiting.push(resolve));
      }
    }
    return true;
  }

  /** Close the least recently used idle file, its slot going to `to` (or back to the pool). */
  private async closeIdle(to?: TempFile): Promise<boolean> {
    const idle = [...this.openFiles].find((o) => !o.busy && o.pins === 0);
    if (!idle) return false;
    await this.close(idle, to);
    return true;
  }

  private releaseSlot(t: TempFile): void {
    if (!t.slot) return;
    t.slot = false;
    this.freeSlot();
  }

  private freeSlot(): void {
    this.slots--;
    this.waiting.shift()?.();
  }

  /** Open through the budget: a shortage of descriptors frees one of ours, or waits, and opens again. */
  private open(open: () => Promise<FileHandle>): Promise<FileHandle> {
    return retryOutOfDescriptors(open, async () => {
      // Others in the process hold more than the budget allowed for: hold fewer from now on.
      this.maxOpen = Math.max(1, this.slots - 1);
      return this.closeIdle();
    });
  }

  /** Open `t` if it is not; false (`wait` off) when that needs a descriptor only a busy file holds. */
  private async ensureOpen(t: TempFile, wait = true): Promise<boolean> {
    if (t.handle) {
      // Most recently used last: the first ones are closed when too many are open.
      this.openFiles.delete(t);
      this.openFiles.add(t);
      return true;
    }
    if (!(await this.takeSlot(t, wait))) return false;
    try {
      await this.openHandle(t);
    } catch (err) {
      if (t.handle) await this.close(t).catch(() => undefined);
      this.releaseSlot(t);
      throw err;
    }
    this.openFiles.add(t);
    return true;
  }

  private async openHandle(t: TempFile): Promise<void> {
    const node = t.item.node!;
    if (t.tmp === undefined) {
      t.dir = (await this.makeParent(t.item.rootDir, t.item.comps))!;
      const tmp = joinPath(t.dir, tempName(t.item.comps[t.item.comps.length - 1]));
      t.handle = await this.open(() => fs.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, node.mode & 0o777));
      t.tmp = tmp;
      const st = await t.handle.stat();
      t.ino = st.ino;
      t.dev = st.dev;
    } else {
      const handle = await this.open(() => fs.open(t.tmp!, constants.O_WRONLY | constants.O_NOFOLLOW));
      const st = await handle.stat().catch(async (err: unknown) => {
        await handle.close();
        throw err;
      });
      if (st.ino !== t.ino || st.dev !== t.dev) {
        await handle.close();
        t.tmp = undefined; // not ours: never unlinked by us
        throw new RefusedPath("its temp file was replaced during the restore");
      }
      t.handle = handle;
    }
  }

  /** Close `t`'s handle; its slot goes to `to`, or back to the pool (`keep`: stays with `t`). */
  private async close(t: TempFile, to?: TempFile | "keep"): Promise<void> {
    const handle = t.handle;
    if (!handle) return;
    t.handle = undefined;
    this.openFiles.delete(t);
    // Until it is closed, the slot is the closing descriptor's: `t` may reopen meanwhile, with a
    // slot of its own.
    if (to !== "keep") t.slot = false;
    try {
      await handle.close();
    } finally {
      if (to === undefined) this.freeSlot();
      else if (to !== "keep") to.slot = true;
    }
  }

  private async finish(t: TempFile): Promise<void> {
    const node = t.item.node!;
    const handle = t.handle!;
    const size = node.size ?? 0;
    if (t.bytes !== size) throw new RepoError(`its data holds ${t.bytes} bytes where the snapshot's file list says ${node.size}`, "corrupt");
    let onDisk = (await handle.stat()).size;
    if (onDisk < t.written) throw Object.assign(new Error(`short write: ${onDisk} of ${t.written} bytes on disk`), { code: "EIO" });
    // A file that ends in zeros (a hole) is extended to its size.
    if (onDisk < size) {
      await handle.truncate(size);
      onDisk = (await handle.stat()).size;
    }
    if (onDisk !== size) throw Object.assign(new Error(`short write: ${onDisk} of ${size} bytes on disk`), { code: "EIO" });
    await handle.chmod(node.mode & 0o7777);
    const mtime = new Date(node.mtimeMs);
    await handle.utimes(mtime, mtime);
    if (this.durable) await handle.sync();
    // The slot stays with the file until its folder is synced: that takes a descriptor too.
    await this.close(t, "keep");
    try {
      await fs.rename(t.tmp!, await recheck(t.item));
      t.renamed = true;
      if (this.durable) await syncDir(t.dir!);
    } finally {
      this.releaseSlot(t);
    }
  }

  private async discard(t: TempFile): Promise<void> {
    // Another thread may still write through its descriptor: closed now, the number could name a file opened next.
    if (t.pins > 0) await new Promise<void>((resolve) => (t.unpinned = resolve));
    await this.close(t).catch(() => undefined);
    this.releaseSlot(t);
    if (t.tmp !== undefined && !t.renamed) await fs.unlink(t.tmp).catch(() => undefined);
    t.tmp = undefined;
  }
}

/** A link is restored as a link: its target is data, never followed. */
async function restoreSymlink(item: PlanItem, parent: Promise<FsPath | undefined>): Promise<void> {
  const target = item.node!.target;
  if (typeof target !== "string") throw new RefusedPath("a symbolic link without a target");
  const dir = (await parent)!;
  const tmp = joinPath(dir, tempName(item.comps[item.comps.length - 1]));
  await fs.symlink(target, tmp);
  try {
    await fs.rename(tmp, await recheck(item));
  } catch (err) {
    await fs.unlink(tmp).catch(() => undefined);
    throw err;
  }
}

/** true when a file was deleted; a file already gone is not counted. */
export async function deleteFile(item: Pick<PlanItem, "rootDir" | "comps">): Promise<boolean> {
  const dest = await walkToFile(item.rootDir, item.comps);
  if (dest === undefined) return false;
  const st = await lstatOrNone(dest);
  if (!st) return false;
  if (st.isDirectory()) throw new RefusedPath("is a folder now: not deleting it");
  await fs.unlink(dest);
  return true;
}

interface ListedFile {
  rel: string;
  /** The tree's key for it: the path, or base64 of its bytes when they are not UTF-8. */
  key: string;
  comps: FsPath[];
}

/** Files and links under a folder, never following a link. Names are read as bytes. */
async function listFiles(dir: string, comps: FsPath[] = [], raw: Buffer[] = []): Promise<ListedFile[]> {
  const out: ListedFile[] = [];
  const here = comps.reduce<FsPath>((p, c) => joinPath(p, c), dir);
  const entries = await fs.readdir(here, { withFileTypes: true, encoding: "buffer" }).catch(() => []);
  for (const e of entries) {
    const nameBytes = e.name as unknown as Buffer;
    const text = nameBytes.toString("utf8");
    const name: FsPath = Buffer.from(text).equals(nameBytes) ? text : nameBytes;
    const bytes = [...raw, nameBytes];
    if (e.isDirectory()) {
      out.push(...(await listFiles(dir, [...comps, name], bytes)));
      continue;
    }
    const all = [...comps, name];
    const rel = all.map(showPath).join("/");
    const utf8 = all.every((c) => typeof c === "string");
    const key = utf8 ? rel : Buffer.from(bytes.map((b) => b.toString("latin1")).join("/"), "latin1").toString("base64");
    out.push({ rel, key, comps: all });
  }
  return out;
}
