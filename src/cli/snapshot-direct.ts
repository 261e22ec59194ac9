/**
 * A plain `pi-guard snapshot` that no watcher took, run by this process. An entry of the split
 * bundle (scripts/bundle.mjs): snapshot-plain.js carries only the hand-off path's code, and
 * everything from here on (the engine, the repository, its errors) is the code the command table uses.
 */
import type { GlobalOptions } from "./main.js";
import { contextOf } from "./context.js";
import { reportError } from "./output.js";
import { snapshotAction } from "./snapshot-command.js";
import { routeProcessWarnings } from "./warnings.js";

/** `handOff`: why the watcher did not take it (start.ts asked it). Returns the exit code. */
export async function snapshotDirect(globals: GlobalOptions, handOff: string): Promise<number> {
  routeProcessWarnings();
  try {
    await snapshotAction(contextOf(globals), {}, handOff);
    return Number(process.exitCode ?? 0);
  } catch (err) {
    return reportError(err);
  }
}
