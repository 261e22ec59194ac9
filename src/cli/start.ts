/**
 * The CLI's entry (bin/pi-guard.js). `pi-guard snapshot` with nothing but global flags is the
 * command a user, cron or an agent's hook runs after every few lines appended, and with a watcher
 * running its work takes a few milliseconds: loading commander and every command's module first
 * cost more than the snapshot (bench/README.md). So that one form is recognised here, by a strict
 * reading of its arguments, and runs snapshot-plain.ts, which asks the running watcher for it with
 * the least code; anything else, or anything this reading is unsure of (--help, a snapshot flag,
 * `--repo=`, an option's value that begins with "-"), goes to the full command table in main.ts,
 * unchanged. This file imports nothing at load: every other command pays only for reading argv.
 */
import type { GlobalOptions } from "./main.js";

/** main.ts's global options that take a value, by each spelling commander accepts for them here. */
const VALUE_OPTIONS: Record<string, keyof GlobalOptions> = {
  "-r": "repo",
  "--repo": "repo",
  "--password-file": "passwordFile",
  "--key-file": "keyFile",
  "--agent-dir": "agentDir",
  "--config": "config",
  "--lock-wait": "lockWait",
};
const FLAGS: Record<string, keyof GlobalOptions> = { "--json": "json", "-q": "quiet", "--quiet": "quiet" };
const SNAPSHOT = new Set(["snapshot", "backup"]);

/**
 * The global options of `pi-guard [globals] snapshot [globals]` as commander would give them, or
 * undefined for any other command line (the full table then parses it, and reports its mistakes).
 */
export function plainSnapshotArgs(args: readonly string[]): GlobalOptions | undefined {
  const globals: GlobalOptions = {};
  const set = globals as Record<string, string | boolean>;
  let command = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const eq = a.startsWith("--") ? a.indexOf("=") : -1;
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (VALUE_OPTIONS[name]) {
      const value = eq > 0 ? a.slice(eq + 1) : args[++i];
      if (value === undefined || value === "" || value.startsWith("-")) return undefined;
      set[VALUE_OPTIONS[name]] = value;
    } else if (FLAGS[a]) set[FLAGS[a]] = true;
    else if (!command && SNAPSHOT.has(a)) command = true;
    else return undefined;
  }
  return command ? globals : undefined;
}

export async function main(argv: string[]): Promise<number> {
  const globals = plainSnapshotArgs(argv.slice(2));
  if (!globals) return (await import("./main.js")).main(argv);
  return (await import("./snapshot-plain.js")).plainSnapshot(globals);
}
