/**
 * better-sqlite3, loaded on first use: it is a native addon, and loading it at start-up cost every
 * command (an append-only `pi-guard snapshot` among them) time for databases it never opens.
 * Required, not imported, for the same reason as zod was (EMFILE under a low `ulimit -n`).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type BetterSqlite3 from "better-sqlite3";

let loaded: typeof BetterSqlite3 | undefined;

export function sqlite(): typeof BetterSqlite3 {
  if (loaded) return loaded;
  const require = createRequire(import.meta.url);
  const Database = require("better-sqlite3") as typeof BetterSqlite3;
  const addon = releaseAddon(path.dirname(require.resolve("better-sqlite3")));
  if (!addon) return (loaded = Database);
  // Named to better-sqlite3 itself, its addon is not looked for by the `bindings` package, whose
  // search (two more packages, a stack trace to find the caller, a stat per candidate folder) was a
  // measurable part of a warm `sessions search`.
  return (loaded = class extends Database {
    constructor(...[filename, options]: ConstructorParameters<typeof BetterSqlite3>) {
      super(filename, { ...options, nativeBinding: addon });
    }
  } as typeof BetterSqlite3);
}

/**
 * The addon an install of better-sqlite3 (from `lib/`) builds or downloads, build/Release, when it is
 * what `bindings` would pick too: its first two candidates (build/, build/Debug) are absent.
 * Otherwise undefined, and `bindings` searches as before.
 */
function releaseAddon(lib: string): string | undefined {
  const build = path.join(lib, "..", "build");
  const release = path.join(build, "Release", "better_sqlite3.node");
  if (!existsSync(release)) return undefined;
  if (existsSync(path.join(build, "better_sqlite3.node")) || existsSync(path.join(build, "Debug", "better_sqlite3.node"))) return undefined;
  return release;
}

/** A table or column name quoted for SQL (names come from a schema, which may be hostile). */
export const sqlIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`;
