/**
 * The CLI's entry (bin/pi-guard.js). `pi-guard snapshot` with nothing but global flags is the
 * command a user, cron or an agent's hook runs after every few lines appended, and with a watcher
 * running its work takes a few milliseconds: loading commander and every command's module first
 * cost more than the snapshot (bench/README.md). So that one form is recognised here, by a strict
 * reading of its arguments, and runs snapshot-plain.ts, which asks the running watcher for it with
 * the least code; `pi-guard sessions search <query>` (with global flags and the search's own simple
 * flags) likewise runs search-plain.ts, which hands whatever is not a warm search to main.ts as its
 * arguments. Anything else, or anything this reading is unsure of
 * (--help, another option, `-n5`, `--repo=`, an option's value or a query that begins with "-"),
 * goes to the full command table in main.ts, unchanged. This file imports nothing at load: every
 * other command pays only for reading argv.
 */
import type { GlobalOptions } from "./main.js";
import type { SearchFlags } from "./sessions-search.js";

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

/** `sessions search`'s own options (sessions-commands.ts), read only after the word `search`, as commander does. */
const SEARCH_VALUES: Record<string, keyof SearchFlags> = {
  "--project": "project",
  "--tag": "tag",
  "--since": "since",
  "--until": "until",
  "--date": "date",
  "--host": "host",
  "--agent": "agent",
  "-n": "limit",
  "--limit": "limit",
};
const SEARCH_FLAGS: Record<string, keyof SearchFlags> = { "--deleted": "deleted", "--live": "live", "--all": "all" };

interface Options {
  values: Record<string, string>;
  flags: Record<string, string>;
}

/**
 * The global options and the bare words of `args`, read as commander would read them here; the
 * reading stops after the first word when `firstWordOnly`. A command's own options (`local`) are
 * read once `local.after` words have been. Undefined at the first token it is unsure of (any other
 * option, or a value that is empty or begins with "-").
 */
function readGlobals(
  args: readonly string[],
  firstWordOnly: boolean,
  local?: { options: Options; after: number },
): { globals: GlobalOptions; words: string[]; own: Record<string, string | boolean> } | undefined {
  const globals: GlobalOptions = {};
  const own: Record<string, string | boolean> = {};
  const words: string[] = [];
  for (let i = 0; i < args.length && !(firstWordOnly && words.length); i++) {
    const a = args[i]!;
    const eq = a.startsWith("--") ? a.indexOf("=") : -1;
    const name = eq > 0 ? a.slice(0, eq) : a;
    const mine = local && words.length >= local.after ? local.options : undefined;
    const [set, key] = VALUE_OPTIONS[name] ? [globals as Record<string, string>, VALUE_OPTIONS[name]] : mine?.values[name] ? [own, mine.values[name]] : [];
    if (set && key) {
      const value = eq > 0 ? a.slice(eq + 1) : args[++i];
      if (value === undefined || value === "" || value.startsWith("-")) return undefined;
      set[key] = value;
    } else if (FLAGS[a]) (globals as Record<string, boolean>)[FLAGS[a]] = true;
    else if (mine?.flags[a]) own[mine.flags[a]] = true;
    else if (a.startsWith("-")) return undefined;
    else words.push(a);
  }
  return { globals, words, own };
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

/**
 * `pi-guard [globals] sessions search <query> [search options]` as commander would give it to the
 * search's action, or undefined for any other command line.
 */
export function plainSearchArgs(args: readonly string[]): { globals: GlobalOptions; query: string; opts: SearchFlags } | undefined {
  const read = readGlobals(args, false, { options: { values: SEARCH_VALUES, flags: SEARCH_FLAGS }, after: 2 });
  if (read?.words.length !== 3 || read.words[0] !== "sessions" || read.words[1] !== "search") return undefined;
  return { globals: read.globals, query: read.words[2]!, opts: { limit: "20", ...read.own } };
}

export async function main(argv: string[]): Promise<number> {
  const args = argv.slice(2);
  const globals = plainSnapshotArgs(args);
  if (globals) return (await import("./snapshot-plain.js")).plainSnapshot(globals);
  const search = plainSearchArgs(args);
  if (search) return (await import("./search-plain.js")).plainSearch(argv, search.globals, search.query, search.opts);
  return (await import("./main.js")).main(argv);
}
