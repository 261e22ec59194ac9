import { constants, promises as fs } from "node:fs";
import path from "node:path";

/**
 * `mkdir -p` that cannot hang. Node's own recursive mkdir loops forever on paths such as
 * /proc/foo/bar (Node 20), so walk up to the nearest existing folder and create downwards.
 * Returns the first folder it created (as fs.mkdir's recursive mode does), if any.
 */
export async function makeDirs(dir: string, mode = 0o755): Promise<string | undefined> {
  const missing: string[] = [];
  let current = path.resolve(dir);
  for (;;) {
    const st = await fs.stat(current).catch((err: NodeJS.ErrnoException) => err);
    if (!(st instanceof Error)) {
      if (!st.isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${dir}'`), { code: "ENOTDIR" });
      break;
    }
    if (st.code !== "ENOENT") throw st;
    missing.push(current);
    const parent = path.dirname(current);
    if (parent === current) break;
    current = parent;
  }
  let first: string | undefined;
  for (const d of missing.reverse()) {
    try {
      await fs.mkdir(d, { mode });
      first ??= d;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  return first;
}

/** fsync a folder so a rename in it is durable. Some filesystems refuse; the rename is still atomic there. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, constants.O_RDONLY).catch(() => undefined);
  if (!handle) return;
  try {
    await handle.sync();
  } catch {
    // EINVAL/EISDIR on some filesystems: nothing more to do.
  } finally {
    await handle.close();
  }
}

/**
 * Write all of `buf`, looping over short writes (a full disk or `ulimit -f` returns fewer bytes
 * first and fails only on the next call). Throws rather than return with bytes missing. With a
 * position, writes there; without, at the file's current offset.
 */
export async function writeFully(handle: fs.FileHandle, buf: Uint8Array, position?: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const at = position === undefined ? null : position + done;
    const { bytesWritten } = await handle.write(buf, done, buf.length - done, at);
    if (bytesWritten <= 0) throw Object.assign(new Error(`EIO: wrote 0 of ${buf.length - done} bytes, write`), { code: "EIO" });
    done += bytesWritten;
  }
}
