import { makeDirs, retryOutOfDescriptors, syncDir, writeFully } from "../fs-safe.js";
import { promises as fs, constants } from "node:fs";
import path from "node:path";
import { ownerAlive, ownerDead, ownerTag } from "../repo/staging.js";
import { RepoError } from "../repo/errors.js";
import { abortReason, bodyChunks, ObjectExists, ObjectNotFound, throwIfAborted, type ObjectInfo, type OpOptions, type PutBody, type PutOptions, type Target, type TempScope } from "./target.js";

/**
 * Temp files carry this infix, then the writer's owner tag (`<host>-<pid>-<random>`, see
 * repo/staging.ts); `list` hides them, and leftovers of a writer that died are removed.
 */
export const TEMP_INFIX = ".tmp-";

/** The owner tag of a temp file's name, or undefined for a name that is not a temp file. */
export function tempOwner(name: string): string | undefined {
  const at = name.lastIndexOf(TEMP_INFIX);
  return at < 0 ? undefined : name.slice(at + TEMP_INFIX.length);
}

/** readRange's chunk size. */
const RANGE_CHUNK = 256 * 1024;

function notFound(err: unknown): boolean {
  return (err as NodeJS.ErrnoException)?.code === "ENOENT";
}

/** Pack handles a LocalTarget keeps open, and how long they stay open unused. */
const MAX_HANDLES = 8;
const HANDLE_IDLE_MS = 2_000;

interface CachedHandle {
  handle: Promise<fs.FileHandle>;
  /** Reads using it now. */
  users: number;
  /** No longer cached: closed when its last read ends. */
  dropped: boolean;
  closed?: boolean;
}

function dropHandle(c: CachedHandle): void {
  c.dropped = true;
  if (c.users > 0 || c.closed) return;
  c.closed = true;
  void c.handle.then((fh) => fh.close()).catch(() => undefined);
}

export class LocalTarget implements Target {
  constructor(readonly root: string) {}

  get location(): string {
    return this.root;
  }

  get localPath(): string {
    return this.root;
  }

  private file(key: string): string {
    return path.join(this.root, ...key.split("/"));
  }

  async get(key: string, opts: OpOptions = {}): Promise<Buffer> {
    try {
      return await retryOutOfDescriptors(() => fs.readFile(this.file(key), { signal: opts.signal }));
    } catch (err) {
      if (notFound(err)) throw new ObjectNotFound(key);
      throw abortReason(err, opts.signal);
    }
  }

  /**
   * Restores and checks read many ranges of the same few packs; reopening the pack for every range
   * cost more than the reads. A handful of handles stay open (objects are immutable, so a cached
   * handle never sees stale data). A handle is closed once it is dropped (pushed out, its object
   * deleted, or every handle after HANDLE_IDLE_MS unused) and no read is using it, so a target
   * that is no longer used holds no descriptor (a long-running watcher opens many). Every open
   * here waits out a shortage of descriptors (EMFILE) rather than fail the read or write.
   */
  private readonly handles = new Map<string, CachedHandle>();
  private idle?: NodeJS.Timeout;

  private acquire(key: string): CachedHandle {
    let c = this.handles.get(key);
    if (c) this.handles.delete(key);
    else {
      c = { handle: retryOutOfDescriptors(() => fs.open(this.file(key), constants.O_RDONLY)), users: 0, dropped: false };
      const opened = c;
      c.handle.catch(() => this.handles.get(key) === opened && this.handles.delete(key));
    }
    this.handles.set(key, c);
    c.users++;
    while (this.handles.size > MAX_HANDLES) {
      const [oldest, old] = this.handles.entries().next().value as [string, CachedHandle];
      this.handles.delete(oldest);
      dropHandle(old);
    }
    if (this.idle) this.idle.refresh();
    else {
      this.idle = setTimeout(() => {
        this.idle = undefined;
        for (const old of this.handles.values()) dropHandle(old);
        this.handles.clear();
      }, HANDLE_IDLE_MS);
      this.idle.unref();
    }
    return c;
  }

  async getRange(key: string, offset: number, length: number, opts: OpOptions = {}): Promise<Buffer> {
    throwIfAborted(opts.signal);
    const c = this.acquire(key);
    try {
      let handle: fs.FileHandle;
      try {
        handle = await c.handle;
      } catch (err) {
        if (notFound(err)) throw new ObjectNotFound(key);
        throw err;
      }
      const buf = Buffer.allocUnsafe(length);
      let got = 0;
      while (got < length) {
        const { bytesRead } = await handle.read(buf, got, length - got, offset + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return got === length ? buf : buf.subarray(0, got);
    } finally {
      c.users--;
      if (c.dropped) dropHandle(c);
    }
  }

  /** Chunks of up to RANGE_CHUNK bytes, read through a handle of its own (closed when the caller stops). */
  async *readRange(key: string, offset: number, length: number, opts: OpOptions = {}): AsyncIterable<Uint8Array> {
    throwIfAborted(opts.signal);
    let handle: fs.FileHandle;
    try {
      handle = await retryOutOfDescriptors(() => fs.open(this.file(key), constants.O_RDONLY));
    } catch (err) {
      if (notFound(err)) throw new ObjectNotFound(key);
      throw err;
    }
    try {
      for (let at = 0; at < length; ) {
        throwIfAborted(opts.signal);
        const buf = Buffer.allocUnsafe(Math.min(RANGE_CHUNK, length - at));
        const { bytesRead } = await handle.read(buf, 0, buf.length, offset + at);
        if (bytesRead === 0) return;
        at += bytesRead;
        yield buf.subarray(0, bytesRead);
      }
    } finally {
      await handle.close();
    }
  }

  /**
   * A stream's movable file on the same file system (the engine stages packs in <root>/tmp) is
   * renamed into place. Anything else goes to a temp name in the object's folder, is fsynced and
   * renamed, and the folder is fsynced: all or nothing after a crash.
   */
  async put(key: string, data: PutBody, opts: PutOptions = {}): Promise<void> {
    throwIfAborted(opts.signal);
    const dest = this.file(key);
    const dir = path.dirname(dest);
    await makeDirs(dir);
    if (!Buffer.isBuffer(data) && data.movableFile && (await this.moveFile(data.movableFile, data.size, key, dest, opts))) {
      await syncDir(dir);
      return;
    }
    const tmp = `${dest}${TEMP_INFIX}${ownerTag()}`;
    const handle = await retryOutOfDescriptors(() => fs.open(tmp, "wx", 0o600));
    try {
      try {
        let at = 0;
        for await (const chunk of bodyChunks(data, key, opts.signal)) at = await writeFully(handle, chunk, at);
        await handle.sync();
      } finally {
        await handle.close();
      }
      throwIfAborted(opts.signal);
      await this.moveIntoPlace(tmp, dest, opts);
    } catch (err) {
      // A full disk must not leave a temp file behind to fill it further.
      await fs.unlink(tmp).catch(() => undefined);
      throw err;
    }
    await syncDir(dir);
  }

  /** Rename `file` into place; false when it is on another file system (then it is copied). */
  private async moveFile(file: string, size: number, key: string, dest: string, opts: PutOptions): Promise<boolean> {
    const st = await fs.lstat(file);
    if (!st.isFile() || st.size !== size) throw new RepoError(`the file for ${key} holds ${st.isFile() ? `${st.size} bytes, not its stated ${size}` : "no regular file"}`, "io");
    throwIfAborted(opts.signal);
    try {
      await this.moveIntoPlace(file, dest, opts);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EXDEV") return false;
      throw err;
    }
  }

  /**
   * rename replaces an existing object; for ifAbsent, link fails atomically when the name is
   * taken, so two racing writers cannot both succeed.
   */
  private async moveIntoPlace(tmp: string, dest: string, opts: PutOptions): Promise<void> {
    if (!opts.ifAbsent) return fs.rename(tmp, dest);
    try {
      await fs.link(tmp, dest);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new ObjectExists(path.relative(this.root, dest).split(path.sep).join("/"));
      throw err;
    }
    await fs.unlink(tmp);
  }

  async head(key: string, opts: OpOptions = {}): Promise<ObjectInfo | undefined> {
    throwIfAborted(opts.signal);
    try {
      const st = await fs.stat(this.file(key));
      return { key, size: st.size, modified: st.mtimeMs };
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
  }

  async *list(prefix: string, opts: OpOptions = {}): AsyncIterable<ObjectInfo> {
    const base = this.file(prefix.replace(/\/$/, ""));
    yield* this.walk(base, prefix.replace(/\/$/, ""), opts.signal);
  }

  async listNames(prefix: string): Promise<string[]> {
    let entries;
    try {
      entries = await fs.readdir(this.file(prefix.replace(/\/$/, "")));
    } catch (err) {
      if (notFound(err)) return [];
      throw err;
    }
    // No stat per name: 100,000 snapshot objects list in one readdir. A stray folder's name fails
    // the reader's id check, or its get, like any other foreign name.
    return entries.filter((name) => !name.includes(TEMP_INFIX));
  }

  private async *walk(dir: string, keyPrefix: string, signal?: AbortSignal): AsyncIterable<ObjectInfo> {
    throwIfAborted(signal);
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (notFound(err)) return;
      throw err;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const key = keyPrefix ? `${keyPrefix}/${entry.name}` : entry.name;
      // tmp/ at the top holds a writer's staging files (docs/FORMAT.md §1), never objects.
      if (key === "tmp" && entry.isDirectory()) continue;
      if (entry.isDirectory()) {
        yield* this.walk(path.join(dir, entry.name), key, signal);
      } else if (entry.isFile() && !entry.name.includes(TEMP_INFIX)) {
        const st = await fs.stat(path.join(dir, entry.name)).catch(() => undefined);
        if (st) yield { key, size: st.size, modified: st.mtimeMs };
      }
    }
  }

  async delete(key: string, opts: OpOptions = {}): Promise<void> {
    throwIfAborted(opts.signal);
    const cached = this.handles.get(key);
    if (cached) {
      this.handles.delete(key);
      dropHandle(cached);
    }
    try {
      await fs.unlink(this.file(key));
    } catch (err) {
      if (!notFound(err)) throw err;
    }
  }

  /**
   * Remove temp files older than `olderThanMs` left by a process that was killed mid-write. `scope`
   * says whose: "all" (the caller holds the exclusive lock), "not-live" (never one whose owner is a
   * live process of this host: a slow put of a running writer), "dead" (only owners known dead).
   */
  async cleanTemp(olderThanMs: number, under?: string[], scope: TempScope = "not-live"): Promise<number> {
    let removed = 0;
    const now = Date.now();
    const visit = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const entry of entries) {
        const p = path.join(dir, entry.name);
        if (entry.isDirectory()) await visit(p);
        else if (entry.name.includes(TEMP_INFIX)) {
          const st = await fs.stat(p).catch(() => undefined);
          const owner = tempOwner(entry.name) ?? "";
          const ours = scope === "all" || (scope === "dead" ? ownerDead(owner) : !ownerAlive(owner));
          if (st && now - st.mtimeMs >= olderThanMs && ours) {
            await fs.unlink(p).catch(() => undefined);
            removed++;
          }
        }
      }
    };
    for (const top of under ?? [""]) await visit(path.join(this.root, top));
    return removed;
  }
}
