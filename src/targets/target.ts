/**
 * Where repository objects live. Deliberately small (the Litestream ReplicaClient idea): the
 * repository never knows whether it talks to a local folder, memory or a bucket.
 *
 * Keys are slash-separated relative names such as `data/ab/ab12…`. Objects are immutable except
 * `locks/*`, which a put replaces; every put is atomic: a reader sees the whole object or nothing.
 * Every operation takes an optional AbortSignal; an aborted operation rejects with the signal's
 * reason and leaves no partial object behind.
 */
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
   * builds packs on the same file system then (so putFile is a rename), and doctor warns when it
   * sits inside the agent dir. Undefined for remote and in-memory targets.
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
  put(key: string, data: Buffer, opts?: PutOptions): Promise<void>;
  /**
   * Store a finished, fsynced local file under `key` (packs are built in a local staging folder,
   * so memory does not grow with pack size). On success the local file is gone: renamed into
   * place, or uploaded and removed. On failure it may remain; the caller removes it.
   */
  putFile(key: string, file: string, opts?: PutOptions): Promise<void>;
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
