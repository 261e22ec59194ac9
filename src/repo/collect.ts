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
