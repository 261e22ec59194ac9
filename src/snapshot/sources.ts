// What a snapshot takes: named roots and include/exclude globs. Kept apart from the scanner so
// that reading the config does not load the glob matcher.

import { lstatSync, realpathSync } from "node:fs";

export interface SourceRoot {
  name: string;
  path: string;
}

export interface SourceFilter {
  /** Globs relative to a root; when given, only matching files are taken (dirs are walked anyway). */
  include: string[];
  /** Globs relative to a root; a matching dir is not entered. */
  exclude: string[];
}

/**
 * What is never worth backing up in an agent dir: pi's own binaries and git checkouts, which are
 * re-downloadable, and npm package trees (the very thing whose reify deleted the user's sessions).
 */
export const DEFAULT_EXCLUDES = ["bin", "git", "**/node_modules", "**/.DS_Store"];

/**
 * How long the append path may trust the bytes of a grown file that it does not read (docs/FORMAT.md
 * §10): a grown file whose last full read is older than this is read in full again. One hour.
 */
export const DEFAULT_FULL_READ_INTERVAL_MS = 3_600_000;

/**
 * The folder to watch for a root. A root reached through a symlink (a sessions dir linked to
 * another disk) is watched where the link leads: the watcher does not follow links, and a watch on
 * the link itself sees only the link. A broken link is watched as the link, which tells when it is
 * mended.
 */
export function watchPath(root: SourceRoot): string {
  try {
    return lstatSync(root.path).isSymbolicLink() ? realpathSync(root.path) : root.path;
  } catch {
    return root.path;
  }
}
