import { constants, promises as fs, type Stats } from "node:fs";
import os from "node:os";
import { BlobReader } from "../repo/blob-reader.js";
import { BlobWriter } from "../repo/blob-writer.js";
import { BlobType, type ChangedWhileRead, type CleanupRecord, INCOMPLETE_TAG, SNAPSHOT_VERSION, type SkippedPath, type Snapshot, type SnapshotSummary, type SpecialPath, type TreeNode } from "../repo/format.js";
import { acquireLock } from "../repo/lock.js";
import { RepoError } from "../repo/errors.js";
import { removeWriterTempFiles } from "../repo/repair-index.js";
import { agentRootPath } from "../repo/parent-heads.js";
import { ObjectNotFound } from "../targets/target.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { SealPool } from "../repo/seal-pool.js";
import { ContentChunker } from "./content-chunker.js";
import { isPathError, scanSources, type ScannedEntry, type SourceFilter, type SourceRoot } from "./scan.js";
import { nodeKey, readTree, treeLeaves, treeLine, TreeWriter } from "./tree.js";
import { DEFAULT_FULL_READ_INTERVAL_MS } from "./sources.js";
import { placeIn, rootPathsOf, ScanPlaces } from "./loss-guard.js";
import { PROGRAM } from "../version.js";
import type { CopyKind, FileRef } from "../agents/types.js";
import { copySqlite, SqliteBusy, sqliteDbOf } from "./sqlite-copy.js";
import { hostName } from "../host.js";

export interface SnapshotOptions {
  roots: SourceRoot[];
  /** Which agent each root belongs to, by root name (the manifest's `agents`, docs/FORMAT.md §7). */
  rootAgents?: Record<string, string>;
  filter: SourceFilter;
  tags?: string[];
  host?: string;
  /** A snapshot id to diff against, or undefined for the newest snapshot of the same host and roots. */
  parent?: string;
  lockWaitMs?: number;
  onProgress?: (p: SnapshotProgress) => void;
  /** Abandon the snapshot between files (a stopping watcher): staging is removed, nothing is committed. */
  signal?: AbortSignal;
  /**
   * More tags, decided once the scan is done and before the snapshot is written (the suspect-loss
   * guard): `parentFiles` are the files of `baseline`, the last whole snapshot (findBases), each
   * marked found or not by this scan.
   */
  tagsAtCommit?: (scan: { files: number; parent?: SnapshotRecord; baseline?: SnapshotRecord; parentFiles: () => ParentFile[]; newFiles: () => readonly FileRef[] }) => string[];
  /** Called after tagsAtCommit: an agent's age-based cleanup the guard recognised, recorded in the snapshot (`cleanup`). */
  cleanupAtCommit?: () => CleanupRecord | undefined;
  /**
   * A grown file whose last full read is older than this is read in full instead of from its tail
   * (config `snapshot.fullReadIntervalMs`; default one hour; 0 reads every grown file in full).
   */
  fullReadIntervalMs?: number;
  /**
   * Read every file in full, trusting nothing of the parent, not even an unchanged stat
   * (`snapshot --full-read`: what to do when `verify` found a difference).
   */
  readAll?: boolean;
  /**
   * How the agent writes each file (its adapter's copy rules, agents/types.ts CopyRule): a
   * `sqlite-wal` file is stored as a consistent copy (sqlite-copy.ts) under its own path, and its
   * `-wal`/`-shm`/`-journal` are not stored at all. Undefined: every file is read as bytes.
   */
  copyKind?: (root: string, path: string) => CopyKind | undefined;
  /** A `sqlite-wal` db's key table (CopyRule.keyTable): its rows are counted in the copy and recorded in the node (`rows`). */
  keyTable?: (root: string, path: string) => string | undefined;
  /** A long-running process's memory of its last snapshot's files (a watcher): see LastFiles. */
  lastFiles?: LastFiles;
}

/**
 * The file nodes of the last snapshot a long-running process (the watcher) committed, kept in
 * memory so that the next snapshot, when that one is its parent, does not read and parse the
 * parent's tree again (most of an append-only snapshot's work and garbage at 1 GiB). Keyed by
 * snapshot id: when another process wrote a newer snapshot, or a prune forgot this one, findBases
 * finds another parent and that one is read from the repository as before. createSnapshot
 * replaces it after each commit.
 */
export interface LastFiles {
  id?: string;
  files?: ReadonlyMap<string, TreeNode>;
  /**
   * Each remembered node's line in the tree stream: a file that did not change gets a node equal
   * to its parent's, and its line is reused rather than serialised again (most of a large tree).
   */
  lines?: WeakMap<TreeNode, Buffer>;
}

/** How much of the parent a snapshot may trust instead of reading, and how files are copied (SnapshotOptions). */
export type ReadPolicy = Pick<SnapshotOptions, "fullReadIntervalMs" | "readAll" | "copyKind" | "keyTable">;

/** A file of the last whole snapshot (mostly the parent), and whether this snapshot's scan found it again. */
export interface ParentFile {
  root: string;
  path: string;
  found: boolean;
  /** Its mtime as that snapshot recorded it (the age-based cleanup verdict reads it); absent when unknown. */
  mtimeMs?: number;
  /** A SQLite db's key-table rows, as that snapshot recorded them and as this one counted them (both present, same table, or neither). */
  rows?: { table: string; before: number; now: number };
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
/**
 * At most this many end-of-file pieces per file before they are merged into one blob: bounds the
 * reads a restore of the file makes and the length of its node, whatever the size of the appends.
 */
export const MAX_TAIL_PIECES = 64;

/**
 * How many times a file that changes while it is read is read before it is stored as last read and
 * named in `changedWhileRead`: a file rewritten once mid-read is read again, and one rewritten
 * without pause costs at most this many reads.
 */
const MAX_READS = 3;

/**
 * File times advance in clock ticks (a few ms on Linux), so a change made within one tick of the
 * previous one can leave ctime as it was (git's "racy" files). A file whose ctime is younger than
 * this is read only once it is this old: any change during the read, or after it, then shows in
 * ctime. One that changes again meanwhile (or whose ctime is ahead of the clock, which then went
 * back) gets no ctimeMs, so that the next snapshot does not take it for unchanged.
 */
const RACY_MS = 20;
/** A ctime ahead of the clock by more than this (the clock went back) is not waited for. */
const AHEAD_MS = 1000;

/** What a file node records about its bytes (the node is built in addEntry). */
type StoredFile = Required<Pick<TreeNode, "ino" | "content" | "size" | "mtimeMs">> & Pick<TreeNode, "tail" | "fullReadMs" | "ctimeMs" | "rows">;

/** What reading a file's bytes gives: the blob list, before the stat fields are added. */
type StoredBytes = Pick<StoredFile, "content" | "size" | "tail">;

/** The fields that show a change: inode, size, mtime and ctime (restic and borg compare ctime too). */
const sameStat = (a: Pick<TreeNode, "ino" | "size" | "mtimeMs" | "ctimeMs">, b: Stats): boolean =>
  a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;

/**
 * Whether the append path may still trust a grown file's old bytes: its last full read is less than
 * `intervalMs` ago. A tree is untrusted and clocks go back, so a time that is not a finite number
 * in the past means "read it all".
 */
function prefixTrusted(fullReadMs: unknown, now: number, intervalMs: number): boolean {
  return typeof fullReadMs === "number" && Number.isFinite(fullReadMs) && fullReadMs <= now && now - fullReadMs < intervalMs;
}

/** The `tail` field: absent when it is 1, the value every node without it has. */
const tailField = (count: number): number | undefined => (count > 1 ? count : undefined);

/** Read into all of `buf` from `offset`, stopping early only at the end of the file. */
export async function readAt(handle: fs.FileHandle, buf: Buffer, offset: number): Promise<number> {
  let have = 0;
  while (have < buf.length) {
    const { bytesRead } = await handle.read(buf, have, buf.length - have, offset + have);
    if (bytesRead === 0) break;
    have += bytesRead;
  }
  return have;
}

/**
 * Open for reading without blocking on a FIFO or following a symlink that replaced the file since
 * the scan: such a path is no longer the regular file the scan saw.
 */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Take a snapshot of `opts.roots` into `repo`, holding an append lock throughout (docs/FORMAT.md §9). */
export function createSnapshot(repo: Repository, opts: SnapshotOptions): Promise<SnapshotResult> {
  const reading = { fullReadIntervalMs: opts.fullReadIntervalMs, readAll: opts.readAll, copyKind: opts.copyKind, keyTable: opts.keyTable };
  const settings = { command: "snapshot", lockWaitMs: opts.lockWaitMs, onProgress: opts.onProgress, signal: opts.signal, reading };
  return withSnapshotBuilder(repo, settings, async (builder) => {
    const host = opts.host ?? hostName();
    let { parent, baseline } = await findBases(repo, opts.parent, host, opts.roots);
    const last = opts.lastFiles;
    const remembered = parent && last?.id === parent.id ? last.files : undefined;
    const lines = last?.lines;
    if (last) {
      // Whatever happens to this snapshot, these nodes are no use to the next one but as its parent.
      last.id = undefined;
      last.files = undefined;
      last.lines = undefined;
      builder.keepFiles();
    }
    if (remembered) builder.useParentFiles(remembered, lines);
    else if (parent) {
      try {
        await builder.loadParent(parent);
      } catch (err) {
        // A damaged parent must not stop every later backup: compare with nothing and read all.
        if (!(err instanceof RepoError) || err.kind !== "corrupt") throw err;
        repo.onWarning(`parent snapshot ${parent.id.slice(0, 8)} is unreadable (${err.message}); reading every file in full`);
        await builder.forgetParent(parent);
        if (baseline?.id === parent.id) baseline = undefined;
        parent = undefined;
      }
    }
    if (baseline && baseline.id !== parent?.id) {
      try {
        await builder.loadBaseline(baseline, opts.roots);
      } catch (err) {
        if (!(err instanceof RepoError) || err.kind !== "corrupt") throw err;
        repo.onWarning(`snapshot ${baseline.id.slice(0, 8)}, the last whole state, is unreadable (${err.message}); no loss can be judged against it`);
        baseline = undefined;
      }
    }
    const skip = (root: string, rel: string, err: NodeJS.ErrnoException) => builder.skip(root, rel, err);
    for await (const entry of scanSources(opts.roots, opts.filter, skip)) await builder.addEntry(entry);
    const extra = opts.tagsAtCommit?.({ files: builder.files, parent, baseline, parentFiles: () => builder.parentFiles(), newFiles: () => builder.newFiles }) ?? [];
    const cleanup = opts.cleanupAtCommit?.();
    const result = await builder.commit({ host, roots: opts.roots, rootAgents: opts.rootAgents, tags: [...(opts.tags ?? []), ...extra], parent: parent?.id, cleanup });
    if (last) {
      last.id = result.id;
      ({ files: last.files, lines: last.lines } = builder.keptFiles());
    }
    return result;
  });
}

/**
 * The life of every snapshot writer (disk scan, tar import): an append lock (other snapshots may
 * run beside it; prune and repair wait), leftovers of dead writers cleaned, fresh index, a builder
 * whose staging files are removed if `build` fails and that confirms the lock before it commits.
 */
export async function withSnapshotBuilder(
  repo: Repository,
  opts: { command: string; lockWaitMs?: number; onProgress?: (p: SnapshotProgress) => void; signal?: AbortSignal; reading?: ReadPolicy },
  build: (builder: SnapshotBuilder) => Promise<SnapshotResult>,
): Promise<SnapshotResult> {
  opts.signal?.throwIfAborted();
  const lock = await acquireLock(repo, { mode: "append", command: opts.command, waitMs: opts.lockWaitMs ?? 60_000 });
  const pool = new SealPool(undefined, "when-behind");
  let builder: SnapshotBuilder | undefined;
  try {
    // Other appenders may be writing: only files of writers known to be dead go (docs/FORMAT.md §9).
    await removeWriterTempFiles(repo.target, repo.stagingDir, "dead");
    await repo.loadIndex(true);
    builder = new SnapshotBuilder(repo, pool, opts.onProgress, opts.signal ? AbortSignal.any([lock.signal, opts.signal]) : lock.signal, () => lock.confirm(), opts.reading);
    return await build(builder);
  } catch (err) {
    await builder?.abort();
    throw err;
  } finally {
    await pool.close();
    await lock.release();
  }
}

/**
 * What a new snapshot of `roots` is compared with, two things that are mostly one:
 * - `parent`, for dedup: `parentId`, else the newest snapshot of `host` with exactly these roots
 *   that can be a parent (a node is reused by its root name and path, which mean the same file
 *   only under the same roots);
 * - `baseline`, for the suspect-loss guard: the last whole state, the newest snapshot of `host`
 *   with the same agent root that can be a parent, whatever its other roots (a newer one than the
 *   parent when a sessions symlink or sessionDir came or went). Undefined when there is none.
 * In the usual case both are the newest snapshot of these roots, found from the metadata cache
 * without listing snapshots/ (parent-heads.ts), and the baseline costs nothing more.
 */
export async function findBases(repo: Repository, parentId: string | undefined, host: string, roots: SourceRoot[]): Promise<{ parent?: SnapshotRecord; baseline?: SnapshotRecord }> {
  const agent = agentRootPath(roots);
  if (parentId) {
    try {
      const parent = { id: parentId, snapshot: await repo.loadSnapshot(parentId) };
      return { parent, baseline: parent };
    } catch (err) {
      if (err instanceof RepoError || err instanceof ObjectNotFound) return {};
      throw err;
    }
  }
  // Without listing snapshots/: the newest one this machine recorded for these roots, if it is still there.
  const recorded = await repo.latestSnapshotFor(host, roots);
  if (recorded) {
    const newer = agent === undefined ? null : await repo.newerSnapshotOfAgent(host, agent, recorded);
    return { parent: recorded, baseline: newer ?? recorded };
  }
  // Never an import (its tree came from an archive, its time is the archive's), never a suspect loss.
  const { parent: newestId, baseline: baselineId } = await repo.listParentHeads(host, roots, agent);
  // Only these two are read in full, from the repository; one forgotten since the listing is no base.
  const full = async (id: string | undefined): Promise<SnapshotRecord | undefined> => {
    if (id === undefined) return undefined;
    try {
      return { id, snapshot: await repo.loadSnapshotFromTarget(id) };
    } catch (err) {
      if (err instanceof RepoError || err instanceof ObjectNotFound) return undefined;
      throw err;
    }
  };
  const parent = await full(newestId);
  return { parent, baseline: baselineId === newestId ? parent : await full(baselineId) };
}

/** New files a builder remembers for the loss guard: enough to see that a new session began, bounded on a first snapshot. */
const MAX_NEW_FILES = 1000;

/** A tree node's recorded mtime, when it is a finite number (a tree is untrusted). */
const mtimeOf = (n: { mtimeMs?: unknown }): { mtimeMs?: number } => (typeof n.mtimeMs === "number" && Number.isFinite(n.mtimeMs) ? { mtimeMs: n.mtimeMs } : {});

/**
 * A file's node with the fields that change on an append (the end of `content`, `tail`, `size`,
 * `mtimeMs`, `ctimeMs`) last and together, so that an append changes one stretch of the tree
 * stream, mostly one tree blob, however long the content list is. `fullReadMs` changes only when
 * the file is read in full, and goes before `content`.
 */
function fileNode(base: Pick<TreeNode, "root" | "path" | "pathBytes" | "mode">, f: StoredFile): TreeNode {
  return {
    root: base.root,
    path: base.path,
    ...(base.pathBytes !== undefined ? { pathBytes: base.pathBytes } : {}),
    type: "file",
    mode: base.mode,
    ino: f.ino,
    ...(f.fullReadMs !== undefined ? { fullReadMs: f.fullReadMs } : {}),
    ...(f.rows ? { rows: f.rows } : {}),
    content: f.content,
    ...(tailField(f.tail ?? 1) ? { tail: f.tail } : {}),
    size: f.size,
    mtimeMs: f.mtimeMs,
    ...(f.ctimeMs !== undefined ? { ctimeMs: f.ctimeMs } : {}),
  };
}

/**
 * Whether two nodes serialise alike: the same fields in the same order, each the same value (the
 * content list the same array), so JSON.stringify gives the same line for both.
 */
function sameFields(a: TreeNode, b: TreeNode): boolean {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i] || a[ka[i] as keyof TreeNode] !== b[kb[i] as keyof TreeNode]) return false;
  }
  return true;
}

/**
 * Builds one snapshot. Files are compared with the parent snapshot:
 * - same inode, size, mtime and ctime: the parent's chunk list is reused without reading the file;
 * - same inode, grown, last read in full less than fullReadIntervalMs ago, and the parent's bytes
 *   near both ends unchanged: only the bytes after the parent's last content-defined cut are read,
 *   and about the appended bytes stored (storeAppend);
 * - anything else (new inode, shrunk, changed bytes, a node without ctime): the whole file is re-chunked.
 * A file whose stat changes while it is read is read again (MAX_READS).
 */
export class SnapshotBuilder {
  private readonly writer: BlobWriter;
  private readonly tree: TreeWriter;
  private readonly content: ContentChunker;
  private readonly parentNodes = new Map<string, TreeNode>();
  /** Paths that could not be read; the snapshot still takes everything else. */
  private readonly skipped: SkippedPath[] = [];
  private readonly changedWhileRead: ChangedWhileRead[] = [];
  private readonly special: SpecialPath[] = [];
  private readonly started = Date.now();
  private readonly counts = { files: 0, dirs: 0, bytesTotal: 0, filesNew: 0, filesChanged: 0, filesUnchanged: 0, bytesRead: 0 };
  private lastProgress = 0;

  constructor(
    private readonly repo: Repository,
    pool: SealPool,
    private readonly onProgress?: (p: SnapshotProgress) => void,
    /** The repository lock's: once it is lost, no further entry is stored and nothing is committed. */
    private readonly lockLost?: AbortSignal,
    /** Throws unless the lock object is still there: checked before the index and the snapshot are written. */
    private readonly confirmLock?: () => Promise<void>,
    private readonly reading: ReadPolicy = {},
  ) {
    this.writer = new BlobWriter(repo, pool);
    this.tree = new TreeWriter(repo, this.writer);
    this.content = new ContentChunker(repo, this.writer, repo.dataChunker, BlobType.Data);
  }

  /** Files taken so far. */
  get files(): number {
    return this.counts.files;
  }

  private readonly parentFound = new Set<string>();

  /** Files of this scan the parent lacks (the first MAX_NEW_FILES): a session started since (the age-based cleanup verdict). */
  readonly newFiles: FileRef[] = [];

  /** The last whole snapshot when it is not the parent (its roots differ): its files, and where this scan found files. */
  private baseline?: { files: { root: string; path: string; place?: string; mtimeMs?: number }[]; scanned: ScanPlaces };

  /** The files the loss guard judges: the baseline's when one was loaded, else the parent's. */
  parentFiles(): ParentFile[] {
    const b = this.baseline;
    if (b) return b.files.map((f) => ({ root: f.root, path: f.path, found: b.scanned.has(f.place, f.path), ...mtimeOf(f) }));
    return [...this.parentNodes].map(([key, n]) => ({ root: n.root, path: n.path, found: this.parentFound.has(key), ...mtimeOf(n), ...this.rowsOf(key, n) }));
  }

  /** The key-table rows the parent recorded for a db and the ones this scan counted, when both are there for the same table. */
  private rowsOf(key: string, n: TreeNode): { rows?: ParentFile["rows"] } {
    const was: unknown = n.rows;
    const now = this.rowsNow.get(key);
    if (!now || typeof was !== "object" || was === null) return {};
    const { table, count } = was as { table?: unknown; count?: unknown };
    return table === now.table && Number.isSafeInteger(count) && (count as number) >= 0 ? { rows: { table: now.table, before: count as number, now: now.count } } : {};
  }

  /** Judge this scan against `baseline` (of other roots than `roots`, this snapshot's) instead of the parent. */
  async loadBaseline(baseline: SnapshotRecord, roots: readonly SourceRoot[]): Promise<void> {
    const rootPaths = rootPathsOf(baseline.snapshot.roots);
    const files: { root: string; path: string; place?: string; mtimeMs?: number }[] = [];
    for await (const node of readTree(new BlobReader(this.repo, new SealPool(0)), baseline.snapshot)) {
      if (node.type === "file" && typeof node.root === "string" && typeof node.path === "string") files.push({ root: node.root, path: node.path, place: placeIn(rootPaths, node.root, node.path), ...mtimeOf(node) });
    }
    this.baseline = { files, scanned: new ScanPlaces(roots) };
  }

  /** Tree blobs of an unreadable parent that are damaged: the new file list must not reuse them. */
  private damagedTree = new Set<string>();

  async forgetParent(parent: SnapshotRecord): Promise<void> {
    this.parentNodes.clear();
    const reader = new BlobReader(this.repo, new SealPool(0));
    const readable = async (id: string) =>
      reader.read([id]).then(
        () => true,
        (err: unknown) => {
          if (!(err instanceof RepoError)) throw err;
          this.damagedTree.add(id);
          return false;
        },
      );
    for (const id of parent.snapshot.treeList ?? []) await readable(id);
    const leaves = await treeLeaves(reader, parent.snapshot).catch((err: unknown) => {
      if (err instanceof RepoError) return [];
      throw err;
    });
    for (const id of leaves) await readable(id);
  }

  /** The parent's file nodes as this process committed them (LastFiles): no tree to read. */
  useParentFiles(files: ReadonlyMap<string, TreeNode>, lines?: WeakMap<TreeNode, Buffer>): void {
    for (const [key, node] of files) this.parentNodes.set(key, node);
    this.parentLines = lines;
  }

  /** The remembered parent's lines in the tree stream (LastFiles.lines). */
  private parentLines?: WeakMap<TreeNode, Buffer>;

  /** The file nodes this snapshot stores, by node key, and their lines, when keepFiles() was called first. */
  private kept?: { files: Map<string, TreeNode>; lines: WeakMap<TreeNode, Buffer> };

  keepFiles(): void {
    this.kept = { files: new Map(), lines: new WeakMap() };
  }

  keptFiles(): { files?: ReadonlyMap<string, TreeNode>; lines?: WeakMap<TreeNode, Buffer> } {
    return this.kept ?? {};
  }

  async loadParent(parent: SnapshotRecord): Promise<void> {
    // Inline: the parent's tree is a few MB at most, less work than starting a worker thread.
    const inline = new SealPool(0);
    for await (const node of readTree(new BlobReader(this.repo, inline), parent.snapshot)) {
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
    } else if (entry.type === "special") {
      this.special.push({ root: entry.root, path: entry.path, kind: entry.kind! });
    } else {
      // Found, as for the parent: a file that vanishes between the scan and its read was there.
      this.baseline?.scanned.add(entry.root, entry.path);
      if (this.newFiles.length < MAX_NEW_FILES && !this.parentNodes.has(nodeKey(entry.root, entry.pathBytes ?? entry.path))) this.newFiles.push({ root: entry.root, path: entry.path });
      // A SQLite db's side files are in its consistent copy (scanned in path order, the db comes first).
      const db = sqliteDbOf(entry.path);
      if (db !== undefined && (this.sqliteStored.has(nodeKey(entry.root, db)) || this.sqliteSkipped.has(nodeKey(entry.root, db)))) return;
      // A side file whose db is not there (or not SQLite) is only bytes: it is never opened as a database.
      const sqlite = db === undefined && !entry.pathBytes && this.reading.copyKind?.(entry.root, entry.path) === "sqlite-wal";
      const stored = sqlite ? await this.storeSqlite(entry) : await this.storeFile(entry);
      if (stored) {
        const key = nodeKey(entry.root, entry.pathBytes ?? entry.path);
        const node = fileNode(base, stored);
        const prev = this.parentNodes.get(key);
        const prevLine = prev && this.parentLines?.get(prev);
        const line = prevLine && sameFields(prev, node) ? prevLine : treeLine(node);
        await this.tree.addLine(line);
        this.kept?.files.set(key, node);
        this.kept?.lines.set(node, line);
      }
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

  /** The key-table rows of the SQLite dbs this snapshot copied, by node key (for the loss guard). */
  private readonly rowsNow = new Map<string, { table: string; count: number }>();

  /** SQLite dbs stored as consistent copies in this snapshot, and those that could not be (their side files are no use alone), by node key. */
  private readonly sqliteStored = new Set<string>();
  private readonly sqliteSkipped = new Set<string>();

  /**
   * A SQLite db in WAL mode: its consistent copy (sqlite-copy.ts), read whole, under the db's own
   * path. Never "unchanged" by stat (the db's stat does not move while its WAL grows) and never
   * appended to (pages change in place); content-defined chunks still dedup the pages that stayed.
   * The node has no ctimeMs, so no later snapshot takes the live file for this copy.
   */
  private async storeSqlite(entry: ScannedEntry): Promise<StoredFile | undefined> {
    const key = nodeKey(entry.root, entry.path);
    const prev = this.parentNodes.get(key);
    if (prev) this.parentFound.add(key);
    let copy;
    try {
      copy = await copySqlite(entry.abs as string, { stagingDir: this.repo.stagingDir, countRows: this.reading.keyTable?.(entry.root, entry.path) });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      if (err instanceof SqliteBusy) {
        this.sqliteSkipped.add(key);
        this.skipped.push({ root: entry.root, path: entry.path, error: err.message.replace(/^.*?: /, "") });
        return undefined;
      }
      // A db SQLite cannot read (damaged, or not SQLite at all) is still the user's data: it is
      // kept byte for byte, with its side files, and said so. Failing the snapshot would leave
      // every other file unguarded because of one bad file.
      if (err instanceof RepoError && err.kind === "corrupt") {
        this.repo.onWarning(`${entry.root}/${entry.path}: ${err.message.replace(/^.*?: /, "")}; stored as it is, byte for byte, with its side files`);
        return this.storeFile(entry);
      }
      if (err instanceof RepoError) throw new RepoError(`${entry.root}/${entry.path}: ${err.message.replace(/^.*?: /, "")}`, err.kind);
      if (isPathError(err)) {
        this.skip(entry.root, entry.path, err as NodeJS.ErrnoException);
        return undefined;
      }
      throw err;
    }
    try {
      const handle = await fs.open(copy.path, "r");
      try {
        const bytes = await this.storeWhole(handle, 0, copy.size, []);
        this.sqliteStored.add(key);
        this.count(prev ? "changed" : "new", bytes.size, entry.path);
        if (copy.rows) this.rowsNow.set(key, copy.rows);
        return { ino: entry.stat.ino, ...bytes, mtimeMs: entry.stat.mtimeMs, fullReadMs: Date.now(), ...(copy.rows ? { rows: copy.rows } : {}) };
      } finally {
        await handle.close();
      }
    } finally {
      await copy.dispose();
    }
  }

  private async storeFile(entry: ScannedEntry): Promise<StoredFile | undefined> {
    const { stat } = entry;
    const key = nodeKey(entry.root, entry.pathBytes ?? entry.path);
    const prev = this.parentNodes.get(key);
    if (prev) this.parentFound.add(key);
    if (prev && prev.content && !this.reading.readAll && sameStat(prev, stat)) {
      this.count("unchanged", stat.size, entry.path);
      // The tail count is carried over as read; only an integer is worth carrying (appendPoint checks it fully).
      const tail = Number.isInteger(prev.tail) ? prev.tail : undefined;
      return { ino: stat.ino, content: prev.content, tail, size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs, fullReadMs: prev.fullReadMs };
    }
    for (let reads = 1; ; reads++) {
      const read = await this.readFile(entry, prev);
      if (!read) return undefined;
      if (read.steady || reads === MAX_READS) {
        if (!read.steady) {
          // Maybe torn: no ctime and no full read on record, so the next snapshot reads it all again.
          this.changedWhileRead.push({ root: entry.root, path: entry.path, reads });
          delete read.stored.ctimeMs;
          delete read.stored.fullReadMs;
        } else if (!read.settled) delete read.stored.ctimeMs;
        this.count(prev ? "changed" : "new", read.stored.size, entry.path);
        return read.stored;
      }
    }
  }

  /**
   * One read of a file, and whether it held still meanwhile: the same size, mtime and ctime after the
   * read as before it, and the path still naming the same inode. Anything else (a truncation and
   * rewrite, an append, a rename over it) may have mixed bytes of two versions. Undefined when the
   * path no longer names a regular file that can be read.
   */
  private async readFile(entry: ScannedEntry, prev: TreeNode | undefined): Promise<{ stored: StoredFile; steady: boolean; settled: boolean } | undefined> {
    let handle;
    try {
      handle = await fs.open(entry.abs, OPEN_FLAGS);
    } catch (err) {
      // Deleted (or replaced by a link) between scan and read: the next snapshot will see what is there.
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ELOOP") return undefined;
      if (isPathError(err)) {
        this.skip(entry.root, entry.path, err as NodeJS.ErrnoException);
        return undefined;
      }
      throw err;
    }
    try {
      let before = await handle.stat();
      if (!before.isFile()) return undefined;
      // Date.now() is whole milliseconds and a timer may fire a little early, so the age is looked
      // at again after each wait; a ctime just ahead of it (its sub-millisecond part) is waited for too.
      for (let waits = 0; waits < 5; waits++) {
        const age = Date.now() - before.ctimeMs;
        if (age >= RACY_MS || age < -AHEAD_MS) break;
        await new Promise((r) => setTimeout(r, RACY_MS - age + 1));
        before = await handle.stat();
      }
      const now = Date.now();
      // Changed again while we waited, or a ctime ahead of the clock: a change in the same tick could hide.
      const settled = now - before.ctimeMs >= RACY_MS;
      const grown = prev && before.ino === prev.ino && typeof prev.size === "number" && before.size > prev.size;
      const interval = this.reading.readAll ? 0 : (this.reading.fullReadIntervalMs ?? DEFAULT_FULL_READ_INTERVAL_MS);
      this.readBlobs = undefined;
      const appended = grown && prefixTrusted(prev.fullReadMs, now, interval) ? await this.storeAppend(handle, prev, before.size) : undefined;
      const bytes = appended ?? (await this.storeWhole(handle, 0, before.size, []));
      const after = await handle.stat();
      const onPath = await fs.lstat(entry.abs).catch(() => undefined);
      // A short read means it was truncated meanwhile. A path that is gone now is no sign of a torn
      // read: what was read is the file as it was.
      const samePlace = bytes.size === before.size && after.ino === before.ino && (!onPath || onPath.ino === before.ino);
      let steady = samePlace && after.size === before.size && after.mtimeMs === before.mtimeMs && after.ctimeMs === before.ctimeMs;
      // Grown meanwhile (pi appending as it does): what was read is a real state of the file if
      // those bytes are still there, read again. A truncation and rewrite fails that comparison.
      if (!steady && samePlace && after.size >= before.size) steady = await this.sameBytesAgain(handle, before.size);
      const fullReadMs = appended ? prev!.fullReadMs : now;
      return { stored: { ino: before.ino, ...bytes, mtimeMs: before.mtimeMs, ctimeMs: before.ctimeMs, fullReadMs }, steady, settled };
    } finally {
      await handle.close();
    }
  }

  /** Chunk [from, end) of the file after the blobs `kept`, streaming; the result has no pieces. */
  private async storeWhole(handle: fs.FileHandle, from: number, end: number, kept: string[], head?: Buffer): Promise<StoredBytes> {
    let pos = from;
    if (head) {
      await this.content.push(head);
      pos += head.length;
    }
    while (pos < end) {
      const space = this.content.space;
      const want = Math.min(space.length, READ_BLOCK, end - pos);
      const { bytesRead } = await handle.read(space, 0, want, pos);
      if (bytesRead === 0) break; // truncated while we read: keep what was there (the stat after the read shows it)
      pos += bytesRead;
      this.counts.bytesRead += bytesRead;
      await this.content.filled(bytesRead);
    }
    const { ids, lengths } = await this.content.end();
    this.readBlobs = { from, ids, lengths };
    return { content: [...kept, ...ids], size: pos };
  }

  /**
   * A file that grew (same inode, larger): store about the appended bytes. Chunking resumes at the
   * parent's last content-defined cut; what follows it is at most one maximum-size chunk plus the
   * appended bytes. If the chunker finds no cut there, only the appended bytes are stored, as one
   * more end-of-file piece; if it does, the finished chunks are the ones a full re-chunk gives (so a
   * fork still shares them) and the remainder becomes the single tail blob. docs/FORMAT.md §10.
   * Undefined when the parent's bytes are not where they were (a rewrite): chunk the whole file.
   */
  private async storeAppend(handle: fs.FileHandle, prev: TreeNode, end: number): Promise<StoredBytes | undefined> {
    const resume = await this.appendPoint(handle, prev);
    if (!resume) return undefined;
    const oldLength = prev.size! - resume.offset;
    const max = this.repo.dataChunker.params.max;
    const region = Buffer.allocUnsafe(Math.min(end - resume.offset, max));
    const have = await this.readAt(handle, region, resume.offset);
    // The bytes after the cut must still be the parent's tail blobs, one after another.
    if (have < oldLength || !this.sameBlobs(region.subarray(0, oldLength), resume.tail)) return undefined;
    if (resume.offset + have < end && have === region.length) {
      // More than one maximum-size chunk past the cut: there is a cut in it, stream as usual.
      return this.storeWhole(handle, resume.offset, end, resume.kept, region);
    }
    const bytes = region.subarray(0, have);
    const cuts = [...this.repo.dataChunker.split(bytes)];
    const tailLengths = resume.tail.map((id) => this.repo.index.get(id)!.rawLength);
    if (cuts.length === 1 && have > oldLength && resume.tail.length < MAX_TAIL_PIECES) {
      const piece = this.repo.blobId(bytes.subarray(oldLength));
      await this.writer.add(BlobType.Data, bytes, [oldLength, have], [piece]);
      this.readBlobs = { from: resume.offset, ids: [...resume.tail, piece], lengths: [...tailLengths, have - oldLength] };
      return { content: [...resume.kept, ...resume.tail, piece], tail: resume.tail.length + 1, size: resume.offset + have };
    }
    if (have === oldLength) {
      this.readBlobs = { from: resume.offset, ids: resume.tail, lengths: tailLengths };
      return { content: [...resume.kept, ...resume.tail], tail: tailField(resume.tail.length), size: prev.size! };
    }
    // A cut appeared, or the pieces reached their limit: store the region as a full re-chunk does.
    const ranges = cuts.flat();
    const ids = cuts.map(([a, b]) => this.repo.blobId(bytes.subarray(a, b)));
    await this.writer.add(BlobType.Data, bytes, ranges, ids);
    this.readBlobs = { from: resume.offset, ids, lengths: cuts.map(([a, b]) => b - a) };
    return { content: [...resume.kept, ...ids], size: resume.offset + have };
  }

  /**
   * Where to resume chunking a grown file: after the parent's last content-defined cut, which is
   * followed by its `tail` blobs (the last chunk, or the end-of-file pieces of earlier appends).
   * The first blob and the last blob before the cut must still hold their bytes, so that a rewrite
   * near either end shows; the tail blobs are checked by the caller, which reads them anyway.
   */
  private async appendPoint(handle: fs.FileHandle, prev: TreeNode): Promise<{ offset: number; kept: string[]; tail: string[] } | undefined> {
    const content = prev.content ?? [];
    const tailCount = prev.tail ?? 1;
    // A tree is untrusted input: a tail count that does not fit the content means "read it all".
    if (!Array.isArray(content) || !Number.isInteger(tailCount) || tailCount < 1 || tailCount > content.length) return undefined;
    const kept = content.slice(0, content.length - tailCount);
    const tail = content.slice(content.length - tailCount);
    // The blobs must add up to the recorded size, or the pieces would not sit where they claim.
    // A grown file of 80 MB has 2,500 blobs: look each up without allocating (0: not in the index,
    // or empty, which no blob of a file's content list is; either way, read it all).
    let offset = 0;
    let total = 0;
    const index = this.repo.index;
    for (let i = 0; i < content.length; i++) {
      const id: unknown = content[i];
      const raw = typeof id === "string" ? index.rawLengthOf(id) : 0;
      if (raw === 0) return undefined;
      total += raw;
      if (i === kept.length - 1) offset = total;
    }
    if (total !== prev.size) return undefined;
    if (kept.length > 0) {
      const lastKept = this.repo.index.get(kept[kept.length - 1]);
      if (!lastKept || lastKept.rawLength > offset) return undefined;
      if (!(await this.blobAt(handle, kept[kept.length - 1], offset - lastKept.rawLength))) return undefined;
      if (kept.length > 1 && !(await this.blobAt(handle, kept[0], 0))) return undefined;
    }
    return { offset, kept, tail };
  }

  /**
   * The blobs this file's read stored, from `from` on: checked again, blob by blob, when the file
   * grew meanwhile. Their ids are keyed hashes of the bytes read, so no second hash of every byte
   * is needed for the (rare) second look.
   */
  private readBlobs: { from: number; ids: string[]; lengths: number[] } | undefined;

  /** Whether the file still holds, up to `end`, the bytes this read stored. */
  private async sameBytesAgain(handle: fs.FileHandle, end: number): Promise<boolean> {
    const stored = this.readBlobs;
    if (!stored) return true;
    let pos = stored.from;
    for (const [i, len] of stored.lengths.entries()) {
      const buf = Buffer.allocUnsafe(len);
      if ((await this.readAt(handle, buf, pos)) !== len || this.repo.blobId(buf) !== stored.ids[i]) return false;
      pos += len;
    }
    return pos === end;
  }

  /** Whether the file holds blob `id` at `offset`. */
  private async blobAt(handle: fs.FileHandle, id: string, offset: number): Promise<boolean> {
    const loc = this.repo.index.get(id);
    if (!loc) return false;
    const buf = Buffer.allocUnsafe(loc.rawLength);
    return (await this.readAt(handle, buf, offset)) === loc.rawLength && this.repo.blobId(buf) === id;
  }

  /** readAt, counted in the summary's bytesRead. */
  private async readAt(handle: fs.FileHandle, buf: Buffer, offset: number): Promise<number> {
    const n = await readAt(handle, buf, offset);
    this.counts.bytesRead += n;
    return n;
  }

  /** Whether `bytes` are exactly the blobs `ids`, in order. */
  private sameBlobs(bytes: Buffer, ids: string[]): boolean {
    let pos = 0;
    for (const id of ids) {
      const len = this.repo.index.get(id)?.rawLength;
      if (len === undefined || pos + len > bytes.length || this.repo.blobId(bytes.subarray(pos, pos + len)) !== id) return false;
      pos += len;
    }
    return pos === bytes.length;
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
  async commit(meta: { host: string; roots: SourceRoot[]; rootAgents?: Record<string, string>; tags: string[]; parent?: string; time?: string; imported?: string; cleanup?: CleanupRecord }): Promise<SnapshotResult> {
    const { leaves, treeList } = await this.tree.finish();
    // Deduplication would point this file list at the parent's damaged bytes: refuse rather than
    // save a snapshot that cannot be read back.
    const reused = [...leaves, ...treeList].filter((id) => this.damagedTree.has(id));
    if (reused.length) {
      throw new RepoError(
        `this snapshot's file list would reuse ${reused.length} damaged tree blob(s) of an earlier snapshot; nothing was saved (run \`pi-guard check --read-data\`)`,
        "corrupt",
      );
    }
    // An appender whose lock was removed as stale may race a prune that judged its packs unused.
    await this.confirmLock?.();
    await this.writer.finish();
    const summary: SnapshotSummary = {
      ...this.counts,
      bytesNew: this.writer.bytesNew,
      bytesStored: this.writer.bytesStored,
      durationMs: Date.now() - this.started,
    };
    // Either way the snapshot is not a faithful copy of everything it names.
    const incomplete = this.skipped.length > 0 || this.changedWhileRead.length > 0;
    const snapshot: Snapshot = {
      version: SNAPSHOT_VERSION,
      time: meta.time ?? new Date().toISOString(),
      host: meta.host,
      user: os.userInfo().username,
      tags: incomplete ? [...new Set([...meta.tags, INCOMPLETE_TAG])] : meta.tags,
      roots: meta.roots,
      ...(meta.rootAgents && Object.keys(meta.rootAgents).length ? { agents: meta.rootAgents } : {}),
      treeList,
      parent: meta.parent,
      imported: meta.imported,
      skipped: this.skipped.length ? this.skipped : undefined,
      changedWhileRead: this.changedWhileRead.length ? this.changedWhileRead : undefined,
      special: this.special.length ? this.special : undefined,
      ...(meta.cleanup ? { cleanup: meta.cleanup } : {}),
      program: PROGRAM,
      summary,
    };
    this.lockLost?.throwIfAborted();
    await this.confirmLock?.();
    const id = await this.repo.saveSnapshot(snapshot);
    if (!this.lockLost?.aborted) {
      // The snapshot is committed: keeping index/ small must not turn it into a failure.
      await this.repo.consolidateIndex({ listed: true }).catch((err: unknown) => this.repo.onWarning(`index consolidation skipped: ${err instanceof Error ? err.message : String(err)}`));
      await this.repo.consolidateListing({ after: "snapshot" }).catch((err: unknown) => this.repo.onWarning(`snapshot listing skipped: ${err instanceof Error ? err.message : String(err)}`));
    }
    return { id, snapshot };
  }
}
