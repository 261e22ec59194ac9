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
 * The global options and the bare words of `args`, read as commander would read them here; the
 * reading stops after the first word when `firstWordOnly`. Undefined at the first token it is
 * unsure of (any other option, or a value that is empty or begins with "-").
 */
function readGlobals(args: readonly string[], firstWordOnly: boolean): { globals: GlobalOptions; words: string[] } | undefined {
  const globals: GlobalOptions = {};
  const set = globals as Record<string, string | boolean>;
  const words: string[] = [];
  for (let i = 0; i < args.length && !(firstWordOnly && words.length); i++) {
    const a = args[i]!;
    const eq = a.startsWith("--") ? a.indexOf("=") : -1;
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (VALUE_OPTIONS[name]) {
      const value = eq > 0 ? a.slice(eq + 1) : args[++i];
      if (value === undefined || value === "" || value.startsWith("-")) return undefined;
      set[VALUE_OPTIONS[name]] = value;
    } else if (FLAGS[a]) set[FLAGS[a]] = true;
    else if (a.startsWith("-")) return undefined;
    else words.push(a);
  }
  return { globals, words };
}

/**
 * The global options of `pi-guard [globals] snapshot [globals]` as commander would give them, or
 * undefined for any other command line (the full table then parses it, and reports its mistakes).
 */
export function plainSnapshotArgs(args: readonly string[]): GlobalOptions | undefined {
  const read = readGlobals(args, false);
  return read?.words.length === 1 && SNAPSHOT.has(read.words[0]!) ? read.globals : undefined;
}

/**
 * The command `args` name after any global options, or undefined when an option comes first that
 * this reading is unsure of (--help, --version, a value beginning with "-").
 */
export function commandWord(args: readonly string[]): string | undefined {
  return readGlobals(args, true)?.words[0];
}

export async function main(argv: string[]): Promise<number> {
  const globals = plainSnapshotArgs(argv.slice(2));
  if (!globals) return (await import("./main.js")).main(argv);
  return (await import("./snapshot-plain.js")).plainSnapshot(globals);
}
