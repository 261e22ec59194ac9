/**
 * A plain `pi-guard sessions search <query>` (start.ts recognised it), run without commander when
 * it is warm: the catalog's cached view and the search index are current, the repository a local
 * folder that need not be unlocked. The bundle makes this file and everything that path loads one
 * file (scripts/bundle.mjs). Anything else (a catalog or index to bring up to date, a repository
 * to open, S3, restic, damage or a warning to report: the library's warmOnly; and any error) stops
 * it before it has printed or changed anything, and the command table in main.js runs the command
 * from its arguments, as if start.ts had never looked at it. Nothing made here reaches main.js but
 * those strings: this file carries its own copy of the modules it runs, and objects of one copy
 * are not the other's (`instanceof`, module state), so the bundle checks that main.js is the only
 * file of the split build this one imports.
 */
import type { GlobalOptions } from "./main.js";
import { contextOf } from "./context.js";
import { sessionsHost } from "./sessions-common.js";
import { searchOutput, searchReport, type SearchFlags } from "./sessions-search.js";

/** `argv`: the process's, handed to the command table unless the search was warm. Returns the exit code. */
export async function plainSearch(argv: string[], globals: GlobalOptions, query: string, opts: SearchFlags): Promise<number> {
  let text: string;
  try {
    const ctx = contextOf(globals);
    text = searchOutput(ctx.out, query, await searchReport({ ...sessionsHost(ctx), warmOnly: true }, query, opts));
  } catch (err) {
    return handOver(argv, err instanceof Error ? err.message : String(err));
  }
  process.stdout.write(text);
  return 0;
}

/**
 * The command table runs the command from the start: only strings cross. `reason` is not shown
 * (the table's output must be the user's); PI_GUARD_TRACE_HANDOVER puts it on stderr for tests
 * and for whoever wonders why a search was not fast.
 */
async function handOver(argv: readonly string[], reason: string): Promise<number> {
  if (process.env.PI_GUARD_TRACE_HANDOVER) process.stderr.write(`pi-guard: [plain search handed over: ${reason}]\n`);
  return (await import("./main.js")).main([...argv]);
}
