import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

let gc: ((opts: { type: "minor" | "major" }) => void) | undefined;

/**
 * A young-generation collection (a scavenge, well under 0.1 ms on a small young heap). Restore and
 * sealing leave garbage that is almost all off-heap buffers, which V8 lets pile up for tens of MB
 * before it collects; collecting after each batch frees them at once.
 */
export function collectYoung(): void {
  if (!gc) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as typeof gc;
  }
  gc!({ type: "minor" });
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
