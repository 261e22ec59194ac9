/**
 * A plain `pi-guard snapshot` (start.ts recognised it): asked of the running watcher first. The
 * bundle makes this file and everything it loads until the watcher answers one file
 * (scripts/bundle.mjs), since each file costs the ESM loader a resolution and a read; when no
 * watcher takes the snapshot, snapshot-direct.ts runs the snapshot command's own code.
 */
import { snapshotByWatcher } from "../library/snapshot.js";
import type { GlobalOptions } from "./main.js";
import { contextOf } from "./context.js";
import { reportError } from "./output.js";
import { printSnapshot } from "./snapshot-command.js";

/** Returns the exit code. */
export async function plainSnapshot(globals: GlobalOptions): Promise<number> {
  let handOff: string;
  try {
    const ctx = contextOf(globals);
    const asked = await snapshotByWatcher(ctx.config);
    if (!("direct" in asked)) {
      await printSnapshot(ctx, asked);
      return Number(process.exitCode ?? 0);
    }
    handOff = asked.direct;
  } catch (err) {
    return reportError(err);
  }
  return (await import("./snapshot-direct.js")).snapshotDirect(globals, handOff);
}
