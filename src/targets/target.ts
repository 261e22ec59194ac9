/**
 * Where repository objects live. Deliberately small (the Litestream ReplicaClient idea): the
 * repository never knows whether it talks to a local folder or a bucket.
 *
 * Keys are slash-separated relative names such as `data/ab/ab12…`. Objects are immutable except
 * `locks/*`; `put` must be atomic: a reader sees the whole object or nothing.
 */
export interface ObjectInfo {
  key: string;
  size: number;
}

export interface Target {
  /** Human-readable location, for messages. */
  readonly location: string;
  get(key: string): Promise<Buffer>;
  getRange(key: string, offset: number, length: number): Promise<Buffer>;
  put(key: string, data: Buffer): Promise<void>;
  head(key: string): Promise<ObjectInfo | undefined>;
  list(prefix: string): AsyncIterable<ObjectInfo>;
  /**
   * The names (without the prefix) of the objects directly in a flat folder such as `index` or
   * `snapshots`, in no particular order, without sizes: cheap where `list` must stat each object.
   */
  listNames?(prefix: string): Promise<string[]>;
  delete(key: string): Promise<void>;
  /**
   * A local folder for files that `putFile` will take (pack files are built there, so memory does
   * not grow with pack size). For a local target it is on the same file system, so putFile renames.
   */
  readonly stagingDir: string;
  /** Store a finished, fsynced local file under `key` and remove the local file. */
  putFile(key: string, file: string): Promise<void>;
}

export class ObjectNotFound extends Error {
  constructor(readonly key: string) {
    super(`object ${key} not found`);
    this.name = "ObjectNotFound";
  }
}

/** `target.listNames`, or the names from `list` for a target without the cheap listing. */
export async function listNames(target: Target, prefix: string): Promise<string[]> {
  if (target.listNames) return target.listNames(prefix);
  const strip = prefix.replace(/\/$/, "").length + 1;
  const out: string[] = [];
  for await (const info of target.list(prefix)) out.push(info.key.slice(strip));
  return out;
}
