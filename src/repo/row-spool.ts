// The rows of a cold `snapshots --json` (snapshot-rows.ts), set aside while the snapshots are read
// and then taken back in time order to render the listing and fill rows.log. At 100,000 snapshots
// they are 65 MB: held in memory beside the listing being read, they made the cold listing peak
// at 300+ MB. They go to a file in the metadata cache's folder that is unlinked as soon as it is
// opened (mode 0600 in a 0700 folder): no other process can open it, and it vanishes with the
// descriptor, whatever happens to this one. Without a usable cache folder they stay in memory.

import { closeSync, openSync, readSync, unlinkSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import type { MetaCache } from "./meta-cache.js";

const CHUNK = 1 << 20;
/** Read ahead this much: rows come back nearly in the order they were written. */
const WINDOW = 64 * 1024;

export class RowSpool {
  private chunk = Buffer.allocUnsafe(CHUNK);
  private used = 0;
  /** Bytes before `chunk` (in the file, or in `held` without one). */
  private flushed = 0;
  private readonly held: Buffer[] = [];
  private windowBuf = Buffer.alloc(0);
  private windowAt = 0;
  private windowLength = 0;

  private constructor(private fd: number | undefined) {}

  static async open(cache: MetaCache | undefined): Promise<RowSpool> {
    const dir = cache && !cache.unusable ? await cache.ready() : undefined;
    if (!dir) return new RowSpool(undefined);
    const file = cache!.path(`rows.spool-${randomBytes(6).toString("hex")}`);
    try {
      const fd = openSync(file, "wx+", 0o600);
      unlinkSync(file);
      return new RowSpool(fd);
    } catch {
      return new RowSpool(undefined);
    }
  }

  /** Where `bytes` went (for read). */
  append(bytes: Buffer): number {
    const at = this.flushed + this.used;
    if (this.used + bytes.length > CHUNK) this.flush();
    if (bytes.length > CHUNK) {
      this.write(bytes);
      return at;
    }
    this.used += bytes.copy(this.chunk, this.used);
    return at;
  }

  /** `length` bytes from `at`: valid until the next read. */
  read(at: number, length: number): Buffer {
    if (this.used) this.flush();
    if (this.fd === undefined) return this.fromHeld(at, length);
    if (at < this.windowAt || at + length > this.windowAt + this.windowLength) {
      const size = Math.min(Math.max(WINDOW, length), this.flushed - at);
      if (this.windowBuf.length < size) this.windowBuf = Buffer.allocUnsafe(Math.max(size, WINDOW));
      let done = 0;
      while (done < size) {
        const n = readSync(this.fd, this.windowBuf, done, size - done, at + done);
        if (n <= 0) throw new Error("row spool shrank while it was read");
        done += n;
      }
      this.windowAt = at;
      this.windowLength = size;
    }
    return this.windowBuf.subarray(at - this.windowAt, at - this.windowAt + length);
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.held.length = 0;
  }

  private flush(): void {
    if (!this.used) return;
    this.write(this.chunk.subarray(0, this.used));
    if (this.fd === undefined) this.chunk = Buffer.allocUnsafe(CHUNK); // the old one is held
    this.used = 0;
  }

  private write(bytes: Buffer): void {
    if (this.fd === undefined) this.held.push(bytes);
    else for (let done = 0; done < bytes.length; ) done += writeSync(this.fd, bytes, done, bytes.length - done, this.flushed + done);
    this.flushed += bytes.length;
  }

  /** In memory, rows lie within one held buffer each (a row is never split across chunks). */
  private fromHeld(at: number, length: number): Buffer {
    let base = 0;
    for (const b of this.held) {
      if (at < base + b.length) return b.subarray(at - base, at - base + length);
      base += b.length;
    }
    throw new RangeError("row spool: read past the end");
  }
}
