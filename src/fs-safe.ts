import { constants, promises as fs, writevSync } from "node:fs";
import path from "node:path";
import { RepoError } from "./repo/errors.js";

/** The first `maxBytes` of a file as UTF-8: a small file of hostile origin read without trusting its size. */
export async function readHead(file: string, maxBytes: number): Promise<string> {
  const handle = await fs.open(file, "r");
  try {
    const buf = Buffer.alloc(maxBytes);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead).toString("utf8");
  } finally {
    await handle.close();
  }
}

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

/**
 * fsync a folder so a rename in it is durable. Some filesystems refuse; the rename is still atomic
 * there. A folder that cannot be opened for want of descriptors is waited for, not skipped.
 */
export async function syncDir(dir: string | Buffer): Promise<void> {
  const handle = await retryOutOfDescriptors(() => fs.open(dir, constants.O_RDONLY)).catch((err: unknown) => {
    if (outOfDescriptors(err)) throw err;
    return undefined;
  });
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
 * One writev at most takes this many buffers (Linux's IOV_MAX) and bytes. Node reports the count
 * of a larger write modulo 2^32 (a 2.2 GB writev "wrote" a negative number of bytes), and Linux
 * writes at most 0x7ffff000 bytes per call anyway.
 */
const MAX_IOV = 1024;
const MAX_WRITE_BYTES = 1 << 30;

/** Up to `length` bytes at `position` (fewer only at the end of the file). */
export async function readExactly(handle: fs.FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buf, done, length - done, position + done);
    if (bytesRead <= 0) break;
    done += bytesRead;
  }
  return buf.subarray(0, done);
}

/**
 * Write every byte of `data` at `position`, looping over short writes: a full disk or a file size
 * limit (`ulimit -f`, whose signal Node ignores) makes a write return fewer bytes than asked, and
 * only the next write fails with the real reason (ENOSPC, EFBIG). Each call writes a bounded
 * piece, so any amount (a run of one repeated blob can be gigabytes) is written exactly. Throws
 * rather than return with bytes missing. Returns the position after the data.
 */
export async function writeFully(handle: fs.FileHandle, data: Uint8Array | readonly Uint8Array[], position: number): Promise<number> {
  const w = new PartWriter(data, position);
  while (!w.done) w.wrote((await handle.writev(w.piece(), w.pos)).bytesWritten);
  return w.pos;
}

/** `writeFully` on a descriptor, blocking: for a worker thread that writes what it decoded. */
export function writeFullySync(fd: number, data: Uint8Array | readonly Uint8Array[], position: number): number {
  const w = new PartWriter(data, position);
  while (!w.done) w.wrote(writevSync(fd, w.piece(), w.pos));
  return w.pos;
}

/** Where a write of many parts stands: the next bounded piece, and the position after each write. */
class PartWriter {
  private readonly parts: Uint8Array[];
  private next = 0;
  private skip = 0; // bytes of parts[next] already written
  private bytes = 0; // of the last piece

  constructor(
    data: Uint8Array | readonly Uint8Array[],
    public pos: number,
  ) {
    this.parts = (data instanceof Uint8Array ? [data] : data).filter((p) => p.length > 0);
  }

  get done(): boolean {
    return this.next >= this.parts.length;
  }

  piece(): Uint8Array[] {
    const piece: Uint8Array[] = [];
    this.bytes = 0;
    for (let i = this.next; i < this.parts.length && piece.length < MAX_IOV && this.bytes < MAX_WRITE_BYTES; i++) {
      const p = i === this.next ? this.parts[i].subarray(this.skip) : this.parts[i];
      const take = p.subarray(0, MAX_WRITE_BYTES - this.bytes);
      piece.push(take);
      this.bytes += take.length;
    }
    return piece;
  }

  wrote(bytesWritten: number): void {
    const bytes = this.bytes;
    if (!(bytesWritten > 0)) throw Object.assign(new Error(`EIO: wrote 0 of ${bytes} bytes, write`), { code: "EIO" });
    if (bytesWritten > bytes) throw Object.assign(new Error(`EIO: a write of ${bytes} bytes reported ${bytesWritten}`), { code: "EIO" });
    this.pos += bytesWritten;
    let left = bytesWritten;
    while (left > 0) {
      const rest = this.parts[this.next].length - this.skip;
      if (left < rest) {
        this.skip += left;
        break;
      }
      left -= rest;
      this.next++;
      this.skip = 0;
    }
  }
}

/** Too many open files: this process's limit (EMFILE) or the system's (ENFILE). */
export function outOfDescriptors(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === "EMFILE" || code === "ENFILE") return true;
  // A pack read by a worker thread fails as an I/O RepoError that keeps only the message.
  return err instanceof RepoError && err.kind === "io" && /\bE[MN]FILE\b/.test(err.message);
}

/** How long an open waits, in all, for descriptors to be closed before it gives up. */
const DESCRIPTOR_WAIT_MS = 30_000;

/**
 * `open` again while it fails for want of descriptors: other work of this process closes some
 * soon. `relieve` may close one first (it returns true when it did; then the retry is at once).
 * Gives up, with the EMFILE, after DESCRIPTOR_WAIT_MS.
 */
export async function retryOutOfDescriptors<T>(open: () => Promise<T>, relieve?: () => Promise<boolean>): Promise<T> {
  let waited = 0;
  for (let delay = 5; ; delay = Math.min(delay * 2, 500)) {
    try {
      return await open();
    } catch (err) {
      if (!outOfDescriptors(err) || waited >= DESCRIPTOR_WAIT_MS) throw err;
    }
    if (await relieve?.()) continue;
    await new Promise((resolve) => setTimeout(resolve, delay));
    waited += delay;
  }
}

/**
 * This process's open-file limit (the soft RLIMIT_NOFILE, which Node raises to the hard one at
 * start) and how many files it has open now, from /proc; undefined where there is no /proc.
 */
export async function descriptorUse(): Promise<{ limit: number; open: number } | undefined> {
  try {
    const limits = await fs.readFile("/proc/self/limits", "utf8");
    const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(limits);
    if (!m) return undefined;
    // The listing's own descriptor is not counted.
    const open = (await fs.readdir("/proc/self/fd")).length - 1;
    return { limit: m[1] === "unlimited" ? Infinity : Number(m[1]), open };
  } catch {
    return undefined;
  }
}
