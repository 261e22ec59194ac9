import { writeFullySync } from "../fs-safe.js";

/** One blob's bytes at one position of a file; `zero`: every byte is zero (it may be left a hole). */
export interface Placed {
  pos: number;
  data: Buffer;
  zero: boolean;
}

/** Back-to-back bytes of one file: one positional write (or, all zero, a hole). */
export interface Run {
  pos: number;
  length: number;
  parts: Buffer[];
  zero: boolean;
}

/** A file's blobs as runs of back-to-back bytes, in file order; zero runs stand apart. Sorts `list`. */
export function toRuns(list: Placed[]): Run[] {
  list.sort((a, b) => a.pos - b.pos);
  const runs: Run[] = [];
  let i = 0;
  while (i < list.length) {
    const pos = list[i].pos;
    const zero = list[i].zero;
    let end = pos;
    const parts: Buffer[] = [];
    while (i < list.length && list[i].pos === end && list[i].zero === zero) {
      parts.push(list[i].data);
      end += list[i].data.length;
      i++;
    }
    runs.push({ pos, length: end - pos, parts: zero ? [] : joinAdjacent(parts), zero });
  }
  return runs;
}

/** What a thread that wrote blobs itself did to one descriptor. */
export interface FileWrite {
  fd: number;
  /** Bytes written or left as holes. */
  bytes: number;
  /** The position after the last byte actually written (0: none). */
  end: number;
  /** The first write that failed; nothing after it was written to this descriptor. */
  error?: { message: string; code?: string };
}

/**
 * Write checked blobs into descriptors the caller holds open for the whole call: `places[i]` says
 * where `parts[i]` goes, as [fd, pos, fd, pos, ...]. With `holes` (files created empty), zero
 * runs are not written. A failed write fails that descriptor only.
 */
export function writePlaced(parts: Buffer[], places: readonly (readonly number[])[], holes: boolean): FileWrite[] {
  const byFd = new Map<number, Placed[]>();
  parts.forEach((data, i) => {
    const at = places[i] ?? [];
    if (at.length === 0) return;
    const zero = holes && allZero(data);
    for (let k = 0; k < at.length; k += 2) {
      let list = byFd.get(at[k]);
      if (!list) byFd.set(at[k], (list = []));
      list.push({ pos: at[k + 1], data, zero });
    }
  });
  // Smaller files first: on a disk that fills up, they land before a big one takes the last space.
  const bytes = (list: Placed[]) => list.reduce((n, p) => n + p.data.length, 0);
  return [...byFd]
    .sort((x, y) => bytes(x[1]) - bytes(y[1]))
    .map(([fd, list]) => {
      const result: FileWrite = { fd, bytes: 0, end: 0 };
      try {
        for (const run of toRuns(list)) {
          if (!run.zero) result.end = Math.max(result.end, writeFullySync(fd, run.parts, run.pos));
          result.bytes += run.length;
        }
      } catch (err) {
        result.error = { message: (err as Error).message, code: (err as NodeJS.ErrnoException).code };
      }
      return result;
    });
}

/** The error a FileWrite reports, as the writing thread saw it (its code names the reason). */
export function writeError(e: NonNullable<FileWrite["error"]>): Error {
  return Object.assign(new Error(e.message), e.code ? { code: e.code } : {});
}

const ZEROS = Buffer.alloc(64 * 1024);

/** Whether every byte is zero; compared a piece at a time, so other data stops at its first piece. */
export function allZero(data: Buffer): boolean {
  for (let at = 0; at < data.length; at += ZEROS.length) {
    const piece = data.subarray(at, at + ZEROS.length);
    if (!piece.equals(ZEROS.subarray(0, piece.length))) return false;
  }
  return true;
}

/** Blobs that lie back to back in one decoded buffer become one view: one write instead of dozens. */
function joinAdjacent(parts: Buffer[]): Buffer[] {
  const out: Buffer[] = [];
  for (const p of parts) {
    const last = out[out.length - 1];
    if (last && last.buffer === p.buffer && last.byteOffset + last.length === p.byteOffset) out[out.length - 1] = Buffer.from(p.buffer, last.byteOffset, last.length + p.length);
    else out.push(p);
  }
  return out;
}
