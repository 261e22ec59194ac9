/**
 * Where repository objects live. Deliberately small (the Litestream ReplicaClient idea): the
 * repository never knows whether it talks to a local folder, memory or a bucket.
 *
 * Keys are slash-separated relative names such as `data/ab/ab12…`. Objects are immutable except
 * `locks/*`, which a put replaces; every put is atomic: a reader sees the whole object or nothing.
 * Every operation takes an optional AbortSignal; an aborted operation rejects with the signal's
 * reason and leaves no partial object behind.
 */
import { createReadStream } from "node:fs";
import { RepoError, type RepoErrorKind } from "../repo/errors.js";

export interface ObjectInfo {
  key: string;
  size: number;
  /**
   * When the object was last written, in ms since the epoch, by the *storage's* clock (S3's
   * LastModified, a file's mtime). Lock staleness compares two such times of the same storage, so
   * hosts whose clocks disagree still agree on a lock's age (docs/FORMAT.md §9). Undefined where
   * the storage cannot say.
   */
  modified?: number;
}

export interface OpOptions {
  signal?: AbortSignal;
}

export interface PutOptions extends OpOptions {
  /**
   * Store only if no object has this key (`init` writing `config`); otherwise reject with
   * ObjectExists. Atomic where the storage supports it; see each target for the fallback.
   */
  ifAbsent?: boolean;
  /**
   * The body's SHA-256 (hex), when the caller knows it (content-addressed objects are named by
   * it): a storage that can check the body against it does, and stores nothing that differs (S3:
   * `x-amz-checksum-sha256`).
   */
  sha256?: string;
}

/**
 * Bytes to put that are not in memory. `open` yields them from the first byte; a put that is
 * retried opens them again, so every call must yield the same `size` bytes.
 */
export interface PutStream {
  readonly size: number;
  open(signal?: AbortSignal): AsyncIterable<Uint8Array>;
  /**
   * A finished, fsynced file on this machine that holds exactly these bytes and that the put may
   * move into place instead of copying (a local target on the same file system renames it). After
   * the put the file may be gone or still there: its owner removes what is left.
   */
  readonly movableFile?: string;
}

export type PutBody = Buffer | PutStream;

/**
 * A finished local file of `size` bytes as a put body that may be moved into place; read in 1 MiB
 * chunks when it is copied or uploaded.
 */
export function fileBody(file: string, size: number): PutStream {
  return {
    size,
    movableFile: file,
    open: (signal) => createReadStream(file, { highWaterMark: 1024 * 1024, signal }),
  };
}

/**
 * `data`'s bytes in chunks, checked against its size: a stream that runs long or ends early
 * throws (a corrupt object must never be stored as if whole). A buffer is one chunk.
 */
export async function* bodyChunks(data: PutBody, key: string, signal?: AbortSignal): AsyncIterable<Uint8Array> {
  if (Buffer.isBuffer(data)) {
    yield data;
    return;
  }
  let seen = 0;
  try {
    for await (const chunk of data.open(signal)) {
      seen += chunk.length;
      if (seen > data.size) throw new RepoError(`the bytes for ${key} run past their stated ${data.size}`, "io");
      yield chunk;
    }
  } catch (err) {
    throw abortReason(err, signal);
  }
  if (seen !== data.size) throw new RepoError(`the bytes for ${key} ended after ${seen} of their stated ${data.size}`, "io");
}

/** `data` in one buffer (a stream's size checked), for storage that takes only buffers. */
export async function bodyBuffer(data: PutBody, key: string, signal?: AbortSignal): Promise<Buffer> {
  if (Buffer.isBuffer(data)) return data;
  const out = Buffer.allocUnsafeSlow(data.size);
  let at = 0;
  for await (const chunk of bodyChunks(data, key, signal)) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

export interface Target {
  /** Human-readable location, for messages. */
  readonly location: string;
  /**
   * The names (without the prefix) of the objects directly in a flat folder such as `index` or
   * `snapshots`, in no particular order, without sizes: cheap where `list` must stat each object.
   */
  listNames?(prefix: string, opts?: OpOptions): Promise<string[]>;
  /**
   * The folder on this machine that holds the objects, for a target that is one. The engine
   * builds packs on the same file system then (so putting a pack's file is a rename), and doctor
   * warns when it sits inside the agent dir. Undefined for remote and in-memory targets.
   */
  readonly localPath?: string;
  get(key: string, opts?: OpOptions): Promise<Buffer>;
  /** `length` bytes from `offset`; fewer when the object ends first (none past its end). */
  getRange(key: string, offset: number, length: number, opts?: OpOptions): Promise<Buffer>;
  /**
   * The same bytes as `getRange`, as a stream: chunks in order, as they arrive, so a reader can
   * work on the first bytes of a pack while the rest is on the wire and never holds the whole
   * range. The request is sent on the first pull and stays open while the caller iterates; the
   * caller must iterate to the end or break out (which ends the request). A missing object
   * rejects the first pull with ObjectNotFound. A chunk is the caller's to keep.
   */
  readRange(key: string, offset: number, length: number, opts?: OpOptions): AsyncIterable<Uint8Array>;
  /**
   * Store `data` under `key`: a buffer, or a PutStream for bytes not held in memory (a pack is
   * streamed from its staging file, so memory does not grow with pack size). A stream that yields
   * more or fewer bytes than its `size` is refused and stores nothing.
   */
  put(key: string, data: PutBody, opts?: PutOptions): Promise<void>;
  head(key: string, opts?: OpOptions): Promise<ObjectInfo | undefined>;
  /** Objects whose key starts with `prefix/` (or every object for ""), sorted by key, never temp objects. */
  list(prefix: string, opts?: OpOptions): AsyncIterable<ObjectInfo>;
  /** Remove an object; removing a missing one is not an error. */
  delete(key: string, opts?: OpOptions): Promise<void>;
  /**
   * Remove incomplete writes of killed writers that are older than `olderThanMs`, under the given
   * top-level folders (all when omitted); returns how many. Only targets that can leave such
   * leftovers have it (an S3 upload is invisible until complete).
   */
  cleanTemp?(olderThanMs: number, under?: string[], scope?: TempScope): Promise<number>;
}

/** Whose temp files `cleanTemp` may remove (see LocalTarget.cleanTemp). */
export type TempScope = "all" | "not-live" | "dead";

export class ObjectNotFound extends Error {
  constructor(readonly key: string) {
    super(`object ${key} not found`);
    this.name = "ObjectNotFound";
  }
}

export class ObjectExists extends Error {
  constructor(readonly key: string) {
    super(`object ${key} already exists`);
    this.name = "ObjectExists";
  }
}

/**
 * A storage failure the user can act on, as one line. `transient` failures (network, 5xx,
 * throttling) may succeed when retried; the others (credentials, permissions, a missing bucket)
 * never will.
 */
export class TargetError extends RepoError {
  constructor(
    message: string,
    kind: RepoErrorKind,
    readonly transient: boolean,
    /** The storage refused the request for these credentials (S3's 403): a read-only user, say. */
    readonly denied = false,
  ) {
    super(message, kind);
    this.name = "TargetError";
  }
}

/** The signal's reason when it is aborted (what the platform's own APIs reject with). */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  signal?.throwIfAborted();
}

/** Platform APIs reject an abort with a generic AbortError; callers get the signal's own reason. */
export function abortReason(err: unknown, signal: AbortSignal | undefined): unknown {
  return signal?.aborted ? signal.reason : err;
}

/** `target.listNames`, or the names from `list` for a target without the cheap listing. */
export async function listNames(target: Target, prefix: string): Promise<string[]> {
  if (target.listNames) return target.listNames(prefix);
  const strip = prefix.replace(/\/$/, "").length + 1;
  const out: string[] = [];
  for await (const info of target.list(prefix)) out.push(info.key.slice(strip));
  return out;
}

/**
 * A range stream gathered into one buffer of the asked size (no second copy); fewer bytes when
 * the object ended first. A stream that sends more than asked is damaged or hostile: an error.
 */
export async function collectRange(chunks: AsyncIterable<Uint8Array>, length: number, key: string): Promise<Buffer> {
  const out = Buffer.allocUnsafeSlow(length);
  let at = 0;
  for await (const chunk of chunks) {
    if (at + chunk.length > length) throw new RepoError(`the storage sent more than the ${length} bytes asked for of ${key}`, "corrupt");
    out.set(chunk, at);
    at += chunk.length;
  }
  return at === length ? out : out.subarray(0, at);
}
