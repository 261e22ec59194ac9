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
export async function syncDir(dir: string | Buffer): Promise<void> {
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
 * Write every byte of `data` at `position`, looping over short writes: a full disk or a file size
 * limit (`ulimit -f`, whose signal Node ignores) makes a write return fewer bytes than asked, and
 * only the next write fails with the real reason (ENOSPC, EFBIG). Throws rather than return with
 * bytes missing. Returns the position after the data.
 */
export async function writeFully(handle: fs.FileHandle, data: Uint8Array | readonly Uint8Array[], position: number): Promise<number> {
  let pending = (data instanceof Uint8Array ? [data] : data).filter((p) => p.length > 0);
  let pos = position;
  while (pending.length) {
    const total = pending.reduce((n, p) => n + p.length, 0);
    const { bytesWritten } = await handle.writev(pending as Uint8Array[], pos);
    if (bytesWritten <= 0) throw Object.assign(new Error(`EIO: wrote 0 of ${total} bytes, write`), { code: "EIO" });
    pos += bytesWritten;
    if (bytesWritten >= total) break;
    let skip = bytesWritten;
    const rest: Uint8Array[] = [];
    for (const p of pending) {
      if (skip >= p.length) {
        skip -= p.length;
        continue;
      }
      rest.push(skip ? p.subarray(skip) : p);
      skip = 0;
    }
    pending = rest;
  }
  return pos;
}
