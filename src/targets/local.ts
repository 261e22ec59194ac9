import { makeDirs, syncDir, writeFully } from "../fs-safe.js";
import { promises as fs, constants } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { ObjectNotFound, type ObjectInfo, type Target } from "./target.js";

/** Temp files carry this infix; `list` hides them and `cleanTemp` removes stale ones after a crash. */
export const TEMP_INFIX = ".tmp-";

function notFound(err: unknown): boolean {
  return (err as NodeJS.ErrnoException)?.code === "ENOENT";
}

export class LocalTarget implements Target {
  constructor(readonly root: string) {}

  get location(): string {
    return this.root;
  }

  private file(key: string): string {
    return path.join(this.root, ...key.split("/"));
  }

  async get(key: string): Promise<Buffer> {
    try {
      return await fs.readFile(this.file(key));
    } catch (err) {
      if (notFound(err)) throw new ObjectNotFound(key);
      throw err;
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

  async getRange(key: string, offset: number, length: number): Promise<Buffer> {
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

  /** temp name in the same folder, write, fsync, rename, fsync the folder: all or nothing after a crash. */
  async put(key: string, data: Buffer): Promise<void> {
    const dest = this.file(key);
    const dir = path.dirname(dest);
    await makeDirs(dir);
    const tmp = `${dest}${TEMP_INFIX}${randomBytes(6).toString("hex")}`;
    const handle = await fs.open(tmp, "wx", 0o600);
    try {
      try {
        await writeFully(handle, data, 0);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.rename(tmp, dest);
    } catch (err) {
      // A full disk must not leave a temp file behind to fill it further.
      await fs.unlink(tmp).catch(() => undefined);
      throw err;
    }
    await syncDir(dir);
  }

  get stagingDir(): string {
    return path.join(this.root, "tmp");
  }

  async putFile(key: string, file: string): Promise<void> {
    const dest = this.file(key);
    const dir = path.dirname(dest);
    await makeDirs(dir);
    await fs.rename(file, dest);
    await syncDir(dir);
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    try {
      const st = await fs.stat(this.file(key));
      return { key, size: st.size };
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    const base = this.file(prefix.replace(/\/$/, ""));
    yield* this.walk(base, prefix.replace(/\/$/, ""));
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

  private async *walk(dir: string, keyPrefix: string): AsyncIterable<ObjectInfo> {
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (notFound(err)) return;
      throw err;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const key = `${keyPrefix}/${entry.name}`;
      if (entry.isDirectory()) {
        yield* this.walk(path.join(dir, entry.name), key);
      } else if (entry.isFile() && !entry.name.includes(TEMP_INFIX)) {
        const st = await fs.stat(path.join(dir, entry.name)).catch(() => undefined);
        if (st) yield { key, size: st.size };
      }
    }
  }

  async delete(key: string): Promise<void> {
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

  /** Remove temp files older than `olderThanMs` left by a process that was killed mid-write. */
  async cleanTemp(olderThanMs: number): Promise<number> {
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
          if (st && now - st.mtimeMs > olderThanMs) {
            await fs.unlink(p).catch(() => undefined);
            removed++;
          }
        }
      }
    };
    await visit(this.root);
    return removed;
  }
}
