import { makeDirs, syncDir, writeFully } from "../fs-safe.js";
import { promises as fs, constants } from "node:fs";
import path from "node:path";
import { ownerAlive, ownerDead, ownerTag } from "../repo/staging.js";
import { abortReason, ObjectExists, ObjectNotFound, throwIfAborted, type ObjectInfo, type OpOptions, type PutOptions, type Target, type TempScope } from "./target.js";

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
      return await fs.readFile(this.file(key), { signal: opts.signal });
    } catch (err) {
      if (notFound(err)) throw new ObjectNotFound(key);
      throw abortReason(err, opts.signal);
    }
  }

  /**
   * Restores and checks read many ranges of the same few packs; reopening the pack for every range
   * cost more than the reads. A handful of handles stay open (objects are immutable, so a cached
   * handle never sees stale data).
   */
  private readonly handles = new Map<string, Promise<fs.FileHandle>>();

  private handle(key: string): Promise<fs.FileHandle> {
    let h = this.handles.get(key);
    if (h) {
      this.handles.delete(key);
      this.handles.set(key, h);
      return h;
    }
    h = fs.open(this.file(key), constants.O_RDONLY);
    h.catch(() => this.handles.delete(key));
    this.handles.set(key, h);
    while (this.handles.size > 8) {
      const [oldest, old] = this.handles.entries().next().value as [string, Promise<fs.FileHandle>];
      this.handles.delete(oldest);
      void old.then((fh) => fh.close()).catch(() => undefined);
    }
    return h;
  }

  async getRange(key: string, offset: number, length: number, opts: OpOptions = {}): Promise<Buffer> {
    throwIfAborted(opts.signal);
    let handle: fs.FileHandle;
    try {
      handle = await this.handle(key);
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
  }

  /** Chunks of up to RANGE_CHUNK bytes, read through a handle of its own (closed when the caller stops). */
  async *readRange(key: string, offset: number, length: number, opts: OpOptions = {}): AsyncIterable<Uint8Array> {
    throwIfAborted(opts.signal);
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(this.file(key), constants.O_RDONLY);
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

  /** temp name in the same folder, write, fsync, rename, fsync the folder: all or nothing after a crash. */
  async put(key: string, data: Buffer, opts: PutOptions = {}): Promise<void> {
    throwIfAborted(opts.signal);
    const dest = this.file(key);
    const dir = path.dirname(dest);
    await makeDirs(dir);
    const tmp = `${dest}${TEMP_INFIX}${ownerTag()}`;
    const handle = await fs.open(tmp, "wx", 0o600);
    try {
      try {
        await writeFully(handle, data, 0);
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

  /** A rename when `file` is on the same file system (the engine stages packs in <root>/tmp); else a copy, fsynced, then renamed. */
  async putFile(key: string, file: string, opts: PutOptions = {}): Promise<void> {
    throwIfAborted(opts.signal);
    const dest = this.file(key);
    const dir = path.dirname(dest);
    await makeDirs(dir);
    try {
      await this.moveIntoPlace(file, dest, opts);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EXDEV") throw err;
      const tmp = `${dest}${TEMP_INFIX}${ownerTag()}`;
      try {
        await fs.copyFile(file, tmp, constants.COPYFILE_EXCL);
        const handle = await fs.open(tmp, "r+");
        try {
          await handle.sync();
        } finally {
          await handle.close();
        }
        throwIfAborted(opts.signal);
        await this.moveIntoPlace(tmp, dest, opts);
      } catch (copyErr) {
        await fs.unlink(tmp).catch(() => undefined);
        throw copyErr;
      }
      await fs.unlink(file);
    }
    await syncDir(dir);
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
      void cached.then((fh) => fh.close()).catch(() => undefined);
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
