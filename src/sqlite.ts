/**
 * better-sqlite3, loaded on first use: it is a native addon, and loading it at start-up cost every
 * command (an append-only `pi-guard snapshot` among them) time for databases it never opens.
 * Required, not imported, for the same reason as zod was (EMFILE under a low `ulimit -n`).
 */
import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";

let loaded: typeof BetterSqlite3 | undefined;

export function sqlite(): typeof BetterSqlite3 {
  return (loaded ??= createRequire(import.meta.url)("better-sqlite3") as typeof BetterSqlite3);
}

/** A table or column name quoted for SQL (names come from a schema, which may be hostile). */
export const sqlIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`;
