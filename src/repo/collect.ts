import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

let gc: ((opts?: { type: "minor" }) => void) | undefined;

/** The collector, reached the one way Node offers at run time: expose it, then fetch it from a fresh context. */
function collector(): NonNullable<typeof gc> {
  if (!gc) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as typeof gc;
  }
  return gc!;
}

/**
 * A young-generation collection (a scavenge, well under 0.1 ms on a small young heap). Restore and
 * sealing leave garbage that is almost all off-heap buffers, which V8 lets pile up for tens of MB
 * before it collects; collecting after each batch frees them at once.
 */
export function collectYoung(): void {
  collector()({ type: "minor" });
}

/** The old space in use after the last collectGrown() collected. */
let usedAfter = 0;

/**
 * A full collection (10-30 ms on the heap of a listing of 100,000 snapshots), once the heap has
 * grown by `slack` bytes since the last one. What a cold listing keeps per batch of snapshots (its
 * records on their way to the cache) outlives two young collections and is promoted, and V8 lets
 * that garbage grow the old space to about twice what is live before it collects: the cold
 * `snapshots --json` at 100,000 peaked with 63 MB of heap of which 27 MB were live. Collecting
 * after every batch cost 0.6 s of CPU; with this slack, a few collections.
 */
export function collectGrown(slack = 8 << 20): void {
  if (getHeapStatistics().used_heap_size < usedAfter + slack) return;
  // Without arguments: Node 20's gc({ type: "major" }) frees next to nothing.
  collector()();
  usedAfter = getHeapStatistics().used_heap_size;
}

/** Off-heap garbage this thread may leave between collections (see collectAfter). */
const GARBAGE_ALLOWANCE = 4 * 1024 * 1024;
let owed = 0;

/**
 * A young collection once `bytes` more of off-heap garbage since the last one reach 4 MiB: for
 * garbage made in many small pieces (a cipher's output slices), where collecting after each job
 * costs more in freed and faulted-in memory than it saves.
 */
export function collectAfter(bytes: number): void {
  owed += bytes;
  if (owed < GARBAGE_ALLOWANCE) return;
  owed = 0;
  collectYoung();
}
