import type { FileHandle } from "node:fs/promises";

/**
 * writev until every byte is on disk. A full disk or a file size limit (`ulimit -f`, whose signal
 * Node ignores) makes a write return fewer bytes than asked; the rest is written again, and the
 * next write then fails with the real reason (ENOSPC, EFBIG). Returns the position after the data.
 */
export async function writeFully(handle: FileHandle, parts: readonly Uint8Array[], position: number): Promise<number> {
  let pending = parts.filter((p) => p.length > 0);
  let pos = position;
  while (pending.length) {
    const total = pending.reduce((n, p) => n + p.length, 0);
    const { bytesWritten } = await handle.writev(pending as Uint8Array[], pos);
    if (bytesWritten <= 0) throw Object.assign(new Error("ENOSPC: the file system accepted no more bytes"), { code: "ENOSPC" });
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
