import { promises as fs, type Stats } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import type { SourceFilter, SourceRoot } from "./sources.js";

export { DEFAULT_EXCLUDES, type SourceFilter, type SourceRoot } from "./sources.js";

export interface ScannedEntry {
  root: string;
  /** Relative to the root, with forward slashes. */
  path: string;
  abs: string;
  stat: Stats;
  type: "file" | "dir" | "symlink";
}

export function compileFilter(filter: SourceFilter): (rel: string, isDir: boolean) => boolean {
  const opts = { dot: true };
  const excluded = filter.exclude.length ? picomatch(filter.exclude, opts) : () => false;
  const included = filter.include.length ? picomatch(filter.include, opts) : () => true;
  return (rel, isDir) => {
    if (excluded(rel)) return false;
    return isDir || included(rel);
  };
}

/** Whether a snapshot would take `rel`: the file and every folder above it must pass the filter. */
export function pathInScope(filter: SourceFilter): (rel: string) => boolean {
  const accept = compileFilter(filter);
  return (rel) => {
    const parts = rel.split("/");
    for (let i = 1; i < parts.length; i++) if (!accept(parts.slice(0, i).join("/"), true)) return false;
    return accept(rel, false);
  };
}

/** Walk the roots in sorted order (the tree stream must be sorted), yielding files, dirs and links. */
export async function* scanSources(roots: SourceRoot[], filter: SourceFilter): AsyncGenerator<ScannedEntry> {
  const accept = compileFilter(filter);
  for (const root of roots) {
    let rootStat: Stats;
    try {
      rootStat = await fs.stat(root.path);
    } catch {
      continue;
    }
    if (!rootStat.isDirectory()) continue;
    yield* walk(root, root.path, "", accept);
  }
}

async function* walk(
  root: SourceRoot,
  dir: string,
  rel: string,
  accept: (rel: string, isDir: boolean) => boolean,
): AsyncGenerator<ScannedEntry> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    // A folder that vanished mid-scan (pi deleting a session) is not an error for a backup.
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  names.sort();
  for (const name of names) {
    const abs = path.join(dir, name);
    const relPath = rel ? `${rel}/${name}` : name;
    let stat: Stats;
    try {
      stat = await fs.lstat(abs);
    } catch {
      continue;
    }
    if (stat.isDirectory()) {
      if (!accept(relPath, true)) continue;
      yield { root: root.name, path: relPath, abs, stat, type: "dir" };
      yield* walk(root, abs, relPath, accept);
    } else if (stat.isFile() || stat.isSymbolicLink()) {
      if (!accept(relPath, false)) continue;
      yield { root: root.name, path: relPath, abs, stat, type: stat.isFile() ? "file" : "symlink" };
    }
  }
}
