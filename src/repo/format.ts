import { RepoError } from "./errors.js";
import { FORMAT_VERSION } from "./format-version.js";
import { packCoverKey } from "./index-files.js";

/** Object names inside a target. See docs/FORMAT.md, which must change with this file (and format-version.ts). */
export { CONFIG_KEY, FORMAT_VERSION } from "./format-version.js";
export const ID_BYTES = 32;

/**
 * AES-GCM associated data of every sealed object: its type, so bytes sealed as one kind of object
 * never unseal as another (a frame as an index, a lock as a snapshot). Objects whose name is known
 * before sealing (locks, keys: random ids) bind it too; content-addressed objects cannot contain
 * their own name, and are checked against it by SHA-256 instead. docs/FORMAT.md §4 lists them.
 */
export const AAD = {
  frame: Buffer.from("pi-guard v2 frame"),
  packHeader: Buffer.from("pi-guard v2 pack-header"),
  index: Buffer.from("pi-guard v2 index"),
  snapshot: Buffer.from("pi-guard v2 snapshot"),
  lock: (id: string): Buffer => Buffer.from(`pi-guard v2 lock ${id}`),
  key: (id: string): Buffer => Buffer.from(`pi-guard v2 key ${id}`),
} as const;

export const packKey = (id: string): string => `data/${id.slice(0, 2)}/${id}`;
export const indexKey = (id: string): string => `index/${id}`;
export const snapshotKey = (id: string): string => `snapshots/${id}`;
export const keyKey = (id: string): string => `keys/${id}`;
export const lockKey = (id: string): string => `locks/${id}`;

export const enum BlobType {
  Data = 0,
  Tree = 1,
}

export interface BlobRef {
  type: BlobType;
  id: string;
  /** Plaintext length of the chunk. */
  rawLength: number;
}

/**
 * Where a blob is. Blobs are stored in frames: one frame is the zstd-compressed, AES-GCM-sealed
 * concatenation of one or more blobs (consecutive new chunks of one file), so that compression sees
 * more than one 32 KiB chunk at a time. `offset`/`length` locate the sealed frame in the pack;
 * `inFrame` is where the blob starts in the frame's decompressed bytes.
 */
export interface PackedBlob extends BlobRef {
  offset: number;
  length: number;
  inFrame: number;
}

export interface PackEntry {
  id: string;
  size: number;
  blobs: PackedBlob[];
}

export interface IndexFile {
  /** Index files this one replaces (written by consolidation; the old ones may then be deleted). */
  supersedes: string[];
  packs: PackEntry[];
}

export interface FrameRef {
  length: number;
  blobs: BlobRef[];
}

const PACK_MAGIC = Buffer.from("PGPK");
const INDEX_MAGIC = Buffer.from("PGIX");
const HEADER_BLOB_BYTES = 1 + ID_BYTES + 4;
export const INDEX_BLOB_BYTES = 1 + ID_BYTES + 4 + 4 + 4 + 4;

/** Pack header plaintext: the frames in file order, each with its blobs in frame order. */
export function encodePackHeader(frames: FrameRef[]): Buffer {
  const blobCount = frames.reduce((n, f) => n + f.blobs.length, 0);
  const out = Buffer.alloc(PACK_MAGIC.length + 1 + 4 + frames.length * 8 + blobCount * HEADER_BLOB_BYTES);
  let o = PACK_MAGIC.copy(out, 0);
  out[o++] = FORMAT_VERSION;
  o = out.writeUInt32LE(frames.length, o);
  for (const f of frames) {
    o = out.writeUInt32LE(f.length, o);
    o = out.writeUInt32LE(f.blobs.length, o);
    for (const b of f.blobs) {
      out[o++] = b.type;
      o += Buffer.from(b.id, "hex").copy(out, o);
      o = out.writeUInt32LE(b.rawLength, o);
    }
  }
  return out;
}

export function decodePackHeader(buf: Buffer, what: string): PackedBlob[] {
  const bad = (why: string) => new RepoError(`${what}: ${why}`, "corrupt");
  if (buf.length < 9 || !buf.subarray(0, 4).equals(PACK_MAGIC)) throw bad("not a pack header");
  if (buf[4] !== FORMAT_VERSION) throw bad(`unknown pack version ${buf[4]}`);
  const frameCount = buf.readUInt32LE(5);
  const blobs: PackedBlob[] = [];
  let o = 9;
  let offset = 0;
  for (let f = 0; f < frameCount; f++) {
    if (o + 8 > buf.length) throw bad("pack header is truncated");
    const length = buf.readUInt32LE(o);
    const count = buf.readUInt32LE(o + 4);
    o += 8;
    if (o + count * HEADER_BLOB_BYTES > buf.length) throw bad("pack header is truncated");
    let inFrame = 0;
    for (let i = 0; i < count; i++, o += HEADER_BLOB_BYTES) {
      const rawLength = buf.readUInt32LE(o + 1 + ID_BYTES);
      blobs.push({ type: buf[o] as BlobType, id: buf.toString("hex", o + 1, o + 1 + ID_BYTES), rawLength, offset, length, inFrame });
      inFrame += rawLength;
    }
    offset += length;
  }
  if (o !== buf.length) throw bad("pack header has trailing bytes");
  return blobs;
}

export function encodeIndex(index: IndexFile): Buffer {
  const blobCount = index.packs.reduce((n, p) => n + p.blobs.length, 0);
  const size =
    INDEX_MAGIC.length + 1 + 4 + index.supersedes.length * ID_BYTES + 4 + index.packs.length * (ID_BYTES + 8) + blobCount * INDEX_BLOB_BYTES;
  const out = Buffer.alloc(size);
  let o = INDEX_MAGIC.copy(out, 0);
  out[o++] = FORMAT_VERSION;
  o = out.writeUInt32LE(index.supersedes.length, o);
  for (const id of index.supersedes) o += Buffer.from(id, "hex").copy(out, o);
  o = out.writeUInt32LE(index.packs.length, o);
  for (const pack of index.packs) {
    o += Buffer.from(pack.id, "hex").copy(out, o);
    o = out.writeUInt32LE(pack.size, o);
    o = out.writeUInt32LE(pack.blobs.length, o);
    for (const b of pack.blobs) {
      out[o++] = b.type;
      o += Buffer.from(b.id, "hex").copy(out, o);
      o = out.writeUInt32LE(b.offset, o);
      o = out.writeUInt32LE(b.length, o);
      o = out.writeUInt32LE(b.inFrame, o);
      o = out.writeUInt32LE(b.rawLength, o);
    }
  }
  return out;
}

export interface EncodedIndexInfo {
  supersedes: string[];
  /** `packCoverKey` of each pack the file names (src/repo/index-files.ts). */
  packs: string[];
  blobs: number;
  layout: { id: string; size: number; blobsAt: number; count: number }[];
}

/** The structure of a decoded index file, fully checked, without decoding its blobs. */
export function walkEncodedIndex(buf: Buffer, what: string): EncodedIndexInfo {
  const bad = (why: string) => new RepoError(`${what}: ${why}`, "corrupt");
  const need = (o: number, n: number) => {
    if (o + n > buf.length) throw bad("index is truncated");
  };
  if (buf.length < 13 || !buf.subarray(0, 4).equals(INDEX_MAGIC)) throw bad("not an index");
  if (buf[4] !== FORMAT_VERSION) throw bad(`unknown index version ${buf[4]}`);
  let o = 5;
  const supersededCount = buf.readUInt32LE(o);
  o += 4;
  need(o, supersededCount * ID_BYTES);
  const supersedes: string[] = [];
  for (let i = 0; i < supersededCount; i++, o += ID_BYTES) supersedes.push(buf.toString("hex", o, o + ID_BYTES));
  need(o, 4);
  const packCount = buf.readUInt32LE(o);
  o += 4;
  const layout: EncodedIndexInfo["layout"] = [];
  let blobs = 0;
  for (let p = 0; p < packCount; p++) {
    need(o, ID_BYTES + 8);
    const id = buf.toString("hex", o, o + ID_BYTES);
    const size = buf.readUInt32LE(o + ID_BYTES);
    const count = buf.readUInt32LE(o + ID_BYTES + 4);
    o += ID_BYTES + 8;
    need(o, count * INDEX_BLOB_BYTES);
    layout.push({ id, size, blobsAt: o, count });
    blobs += count;
    o += count * INDEX_BLOB_BYTES;
  }
  if (o !== buf.length) throw bad("index has trailing bytes");
  return { supersedes, packs: layout.map((l) => packCoverKey(l.id, l.count)), blobs, layout };
}

/** Blob `i` of a pack whose entries start at `blobsAt` in a decoded index file. */
export function indexBlobAt(buf: Buffer, blobsAt: number, i: number): PackedBlob {
  const o = blobsAt + i * INDEX_BLOB_BYTES;
  return {
    type: buf[o] as BlobType,
    id: buf.toString("hex", o + 1, o + 1 + ID_BYTES),
    offset: buf.readUInt32LE(o + 1 + ID_BYTES),
    length: buf.readUInt32LE(o + 5 + ID_BYTES),
    inFrame: buf.readUInt32LE(o + 9 + ID_BYTES),
    rawLength: buf.readUInt32LE(o + 13 + ID_BYTES),
  };
}

export function decodeIndex(buf: Buffer, what: string): IndexFile {
  const info = walkEncodedIndex(buf, what);
  const packs = info.layout.map(({ id, size, blobsAt, count }) => ({ id, size, blobs: Array.from({ length: count }, (_, i) => indexBlobAt(buf, blobsAt, i)) }));
  return { supersedes: info.supersedes, packs };
}

/** What new snapshots are: version 2 keeps the file list in two levels of tree blobs (`treeList`). */
export const SNAPSHOT_VERSION = 2;

/**
 * Bounds on a hostile version 2 file list (docs/FORMAT.md §8): ids in `treeList`, and leaf ids in
 * all its list blobs together (2^20 leaves of 2 KiB is a 2 GiB file list; the ids take 32 MiB).
 */
export const MAX_TREE_LISTS = 1 << 16;
export const MAX_TREE_LEAVES = 1 << 20;

/**
 * Where a snapshot's file list is, exactly one of:
 * - `tree` (version 1): the leaf tree blob ids, in order (docs/FORMAT.md §8);
 * - `treeList` (version 2): the tree list blobs, whose bytes are the leaf tree blob ids, so that a
 *   snapshot that changes a few nodes writes a few small blobs and a small snapshot object.
 */
export type TreeRef = { tree: readonly string[]; treeList?: undefined } | { tree?: undefined; treeList: readonly string[] };

/** The snapshot object: everything but the file list, which lives in tree blobs. */
export interface SnapshotRoot {
  /** "agent" for the agent dir; other names for sources outside it (a moved sessions dir). */
  name: string;
  path: string;
}

export interface SnapshotSummary {
  files: number;
  dirs: number;
  bytesTotal: number;
  /** Plaintext bytes of chunks this snapshot added to the repository. */
  bytesNew: number;
  /** Bytes this snapshot added to the repository as stored (compressed + encrypted, incl. metadata). */
  bytesStored: number;
  filesNew: number;
  filesChanged: number;
  filesUnchanged: number;
  durationMs: number;
  /**
   * Bytes read from the source files (every attempt of a file read again counted). Absent in
   * snapshots of versions before it, and in imports.
   */
  bytesRead?: number;
}

/** A snapshot object: its fields, and its file list in the form its version has (`TreeRef`). */
export type Snapshot = SnapshotFields & TreeRef;

export interface SnapshotFields {
  version: number;
  time: string;
  host: string;
  user: string;
  tags: string[];
  roots: SnapshotRoot[];
  /**
   * Which agent each root belongs to, by root name (`{"agent": "pi", "claude": "claude"}`); roots
   * not named (pi-guard's own metadata) belong to none. Absent in snapshots of versions before it:
   * there, the roots `agent` and `sessions` are pi's (docs/FORMAT.md §7, src/agents/roots.ts).
   */
  agents?: Record<string, string>;
  parent?: string;
  /** Set on snapshots imported from an archive: when the import ran (`time` is the archive's). */
  imported?: string;
  /** Paths the snapshot could not read (the snapshot is then tagged "incomplete"). */
  skipped?: SkippedPath[];
  /**
   * Files that changed while they were read, every time they were read (docs/FORMAT.md §10): their
   * bytes are stored as last read and may never have been on disk together. The snapshot is then
   * tagged "incomplete".
   */
  changedWhileRead?: ChangedWhileRead[];
  /** FIFOs, sockets and device nodes found in the sources: they hold no bytes to back up. */
  special?: SpecialPath[];
  /** Files an agent's own age-based cleanup removed since `against` (tag "agent-cleanup", docs/FORMAT.md §7). */
  cleanup?: CleanupRecord;
  program: string;
  summary: SnapshotSummary;
}

export interface SkippedPath {
  root: string;
  /** Relative to the root, as in the tree; "" for the root itself. */
  path: string;
  error: string;
}

export interface ChangedWhileRead {
  root: string;
  path: string;
  /** How many times it was read. */
  reads: number;
}

export type SpecialKind = "fifo" | "socket" | "char-device" | "block-device";

export interface SpecialPath {
  root: string;
  path: string;
  kind: SpecialKind;
}

/**
 * What an agent's own age-based cleanup (Claude Code's cleanupPeriodDays sweep, Gemini CLI's
 * sessionRetention) removed, judged against `against`, the last whole snapshot, which holds them:
 * `forget` by policy keeps that snapshot, and this one, whatever the policy.
 */
export interface CleanupRecord {
  against: string;
  agents: AgentCleanup[];
}

export interface AgentCleanup {
  agent: string;
  /** Every removed file was older than this many days when the snapshot was taken. */
  days: number;
  /** The agent's setting that says so, when its adapter knows it. */
  setting?: string;
  /** Files of the agent removed, and how many of them are session files. */
  files: number;
  sessions: number;
  /** At most CLEANUP_SAMPLE of the removed session files, "root:path". */
  sample: string[];
}

/** Set on a snapshot with a `cleanup` record: an agent removed its old files itself (not a suspected loss). */
export const AGENT_CLEANUP_TAG = "agent-cleanup";

/** Tags pi-guard sets itself. */
export const IMPORT_TAG = "import";
export const INCOMPLETE_TAG = "incomplete";
/**
 * Set on a snapshot taken when most source files vanished at once (the npm reify accident), by
 * every snapshot path (snapshot/loss-guard.ts): kept by retention, never "latest", never a parent.
 */
export const SUSPECT_LOSS_TAG = "suspect-loss";

/**
 * An archive import: its time is whatever the archive claims, so it is never "latest" nor a parent
 * (the tag alone marks imports made before `imported` was recorded).
 */
export function isImport(s: Pick<Snapshot, "imported" | "tags">): boolean {
  // Read objects are not validated field by field: a missing tag list is not an import.
  return s.imported !== undefined || (Array.isArray(s.tags) && s.tags.includes(IMPORT_TAG));
}

/** One line of the tree stream: a file, directory or symlink, sorted by (root, path). */
export interface TreeNode {
  root: string;
  /** Relative to the root, "/"-separated; lossy (U+FFFD) when the name is not valid UTF-8. */
  path: string;
  /** Base64 of the raw relative path bytes, present only when they are not valid UTF-8. */
  pathBytes?: string;
  type: "file" | "dir" | "symlink";
  mode: number;
  mtimeMs: number;
  /**
   * The inode's change time when the file was read (files only). A same-size rewrite whose mtime
   * was put back (cp -p, touch -r) changes only this. A node without it was written by an older
   * version: its file is read in full once (docs/FORMAT.md §10).
   */
  ctimeMs?: number;
  size?: number;
  ino?: number;
  /**
   * When (ms since the epoch, the writer's clock) every byte of the file was last read from offset
   * 0; appends and unchanged snapshots carry it over. The append path trusts the bytes before the
   * parent's last cut only while this is less than `snapshot.fullReadIntervalMs` ago (§10).
   */
  fullReadMs?: number;
  content?: string[];
  /**
   * How many trailing `content` blobs hold the bytes after the file's last content-defined cut:
   * its last chunk, or the end-of-file pieces appends left there (docs/FORMAT.md §8, §10).
   * Absent means 1. Readers that only restore bytes can ignore it.
   */
  tail?: number;
  /**
   * A SQLite db stored as a consistent copy whose agent names its key table (Codex's `threads`,
   * opencode's `session`): that table and how many rows the copy holds. The loss guard compares
   * it with the next snapshot's (docs/FORMAT.md §8). Readers that only restore bytes can ignore it.
   */
  rows?: { table: string; count: number };
  target?: string;
}
