import { syncDir, writeFully } from "../fs-safe.js";
import { parseSessionFileName } from "../pi/writer.js";
import { constants, promises as fs, type Stats } from "node:fs";
import { randomBytes } from "node:crypto";
import picomatch from "picomatch";
import { BlobReader } from "../repo/blob-reader.js";
import { ReadPipeline } from "../repo/read-pipeline.js";
import { RepoError } from "../repo/errors.js";
import type { TreeNode } from "../repo/format.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { defaultPoolSize, SealPool } from "../repo/seal-pool.js";
import { readTree } from "../snapshot/tree.js";
import { type FsPath, joinPath, nodeComponents, RefusedPath, resolveDestRoot, showPath, walkDirs } from "./safe-path.js";

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

interface PlanItem {
  type: "file" | "symlink" | "dir" | "delete";
  node?: TreeNode;
  root: string;
  /** The destination root as a real path; every write walks to it from "/" again. */
  rootDir: string;
  comps: FsPath[];
  rel: string;
  action: FileAction;
}

export interface RestorePlan {
  record: SnapshotRecord;
  opts: RestoreOptions;
  items: PlanItem[];
  /** Nodes refused while planning (unsafe paths, folders in the way). */
  failed: RestoreFailure[];
  /** With `opts.session`: the ids of the matching sessions in this snapshot. */
  sessionIds: Set<string>;
  /** Files, links and deletions that would change something on disk. */
  changes: number;
  started: number;
}

/** Files restored at once: overlaps one file's disk writes with the next one's decryption. */
const PARALLEL_FILES = 2;

/** Matches files pi named `<time>_<session id>.jsonl` whose id starts with `session`. */
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
  for (const [name, dir] of Object.entries(opts.destinations)) rootDirs.set(name, await resolveDestRoot(dir));
  const pool = new SealPool(0);
  const reader = new BlobReader(repo, pool);
  const wantPath = opts.paths?.length ? picomatch(opts.paths, { dot: true }) : () => true;
  const wantSession = opts.session ? sessionMatcher(opts.session) : () => true;
  const filtered = !!(opts.paths?.length || opts.session);
  const plan: RestorePlan = { record, opts, items: [], failed: [], sessionIds: new Set(), changes: 0, started };
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
      if (node.type === "dir" ? filtered : !wantPath(rel) || !wantSession(rel)) continue;
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
        if (opts.session) plan.sessionIds.add(parseSessionFileName(rel)!.id);
      }
      try {
        const action = await plannedAction(repo, walkParent(rootDir, comps), comps, node);
        plan.items.push({ type: node.type, node, root: node.root, rootDir, comps, rel, action });
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
      const keep = kept.get(root) ?? new Set<string>();
      for (const f of await listFiles(rootDir)) {
        if (keep.has(f.key) || !wantPath(f.rel) || !wantSession(f.rel) || !(opts.scope?.(f.rel) ?? true)) continue;
        if (blocked.some((b) => `${root}\0${f.rel}`.startsWith(b))) continue;
        plan.items.push({ type: "delete", root, rootDir, comps: f.comps, rel: f.rel, action: "delete" });
        plan.changes++;
      }
    }
  }
  return plan;
}

/** The tree's nodes; a line that is not JSON is damage, reported as such (exit 3), not a crash. */
async function* readTreeChecked(reader: BlobReader, record: SnapshotRecord): AsyncGenerator<TreeNode> {
  try {
    yield* readTree(reader, record.snapshot.tree);
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

/** Carry out a plan. Every file is either restored (and in `files`) or listed in `failed`. */
export async function applyRestore(repo: Repository, plan: RestorePlan): Promise<RestoreReport> {
  const { opts } = plan;
  await repo.loadIndex();
  // Restore is decryption-bound and the main thread mostly waits, so it decrypts too.
  const pool = new SealPool(defaultPoolSize(3), true);
  const reader = new ReadPipeline(repo, pool, { signal: opts.signal });
  const report = emptyReport(plan);
  const done = (item: PlanItem) => {
    report.files.push(fileEntry(item));
    opts.onProgress?.({ files: report.files.length, bytes: report.bytesWritten, current: item.rel });
  };
  const failed = (item: PlanItem, err: unknown) => report.failed.push(failure(item.rel, item.root, err));
  const running = new Set<Promise<void>>();
  // A folder made or checked once in this run is not walked again before writing into it; the
  // check right before each rename is never cached.
  const makeParent = cached((rootDir: string, comps: FsPath[]) => walkDirs(rootDir, comps.slice(0, -1), true));
  const fetched = (item: PlanItem) => item.type === "file" && item.action !== "unchanged" && !!item.node!.content;
  reader.prepare(plan.items.filter(fetched).map((item) => item.node!.content!));
  try {
    for (const item of plan.items) {
      opts.signal?.throwIfAborted();
      if (item.action === "unchanged") {
        if (item.type !== "dir") report.files.push(fileEntry(item));
        continue;
      }
      if (item.type === "file") {
        // The job never rejects: its outcome goes into the report either way.
        const job: Promise<void> = writeFileAtomically(reader, item, makeParent(item.rootDir, item.comps), !!opts.durable).then(
          () => {
            report.bytesWritten += item.node!.size ?? 0;
            done(item);
          },
          (err: unknown) => void failed(item, err),
        );
        running.add(job);
        void job.finally(() => {
          running.delete(job);
          if (item.node!.content) reader.forget(item.node!.content);
        });
        if (running.size >= PARALLEL_FILES) await Promise.race(running);
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
    await Promise.all(running);
    opts.signal?.throwIfAborted();
    for (const item of plan.items) {
      if (item.type !== "delete") continue;
      try {
        if (await deleteFile(item)) done(item);
      } catch (err) {
        failed(item, err);
      }
    }
  } finally {
    await Promise.allSettled(running);
    await pool.close();
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

function failure(rel: string, root: string, err: unknown): RestoreFailure {
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

const lstatOrNone = (p: FsPath): Promise<Stats | undefined> =>
  fs.lstat(p).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw err;
  });

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
function cached(walk: (rootDir: string, comps: FsPath[]) => Promise<FsPath | undefined>) {
  const seen = new Map<string, Promise<FsPath | undefined>>();
  return (rootDir: string, comps: FsPath[]): Promise<FsPath | undefined> => {
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

async function writeFileAtomically(reader: ReadPipeline, item: PlanItem, parent: Promise<FsPath | undefined>, durable: boolean): Promise<void> {
  const node = item.node!;
  const dir = (await parent)!;
  const tmp = joinPath(dir, tempName(item.comps[item.comps.length - 1]));
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const handle = await fs.open(tmp, flags, node.mode & 0o777);
  let renamed = false;
  try {
    try {
      let pos = 0;
      for await (const parts of reader.file(node.content ?? [])) pos = await writeFully(handle, parts, pos);
      const size = (await handle.stat()).size;
      if (pos !== (node.size ?? 0)) {
        throw new RepoError(`its data holds ${pos} bytes where the snapshot's file list says ${node.size}`, "corrupt");
      }
      if (size !== pos) throw Object.assign(new Error(`short write: ${size} of ${pos} bytes on disk`), { code: "EIO" });
      await handle.chmod(node.mode & 0o7777);
      const mtime = new Date(node.mtimeMs);
      await handle.utimes(mtime, mtime);
      if (durable) await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, await recheck(item));
    renamed = true;
  } finally {
    if (!renamed) await fs.unlink(tmp).catch(() => undefined);
  }
  if (durable) await syncDir(dir);
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
async function deleteFile(item: PlanItem): Promise<boolean> {
  const dir = await walkDirs(item.rootDir, item.comps.slice(0, -1), false);
  if (!dir) return false;
  const dest = joinPath(dir, item.comps[item.comps.length - 1]);
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
