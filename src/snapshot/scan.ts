import { promises as fs, type Stats } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import type { SpecialKind } from "../repo/format.js";
import { isInside } from "../config/config.js";
import type { SourceFilter, SourceRoot } from "./sources.js";

export { DEFAULT_EXCLUDES, type SourceFilter, type SourceRoot } from "./sources.js";

export interface ScannedEntry {
  root: string;
  /** Relative to the root, with forward slashes; lossy (U+FFFD) for a name that is not UTF-8. */
  path: string;
  /** Base64 of the raw relative path, only when it is not valid UTF-8 (docs/FORMAT.md §8). */
  pathBytes?: string;
  /** A Buffer when the path is not valid UTF-8, so that it can still be opened. */
  abs: string | Buffer;
  stat: Stats;
  /** "special": a FIFO, socket or device node (`kind`), which holds no bytes to back up. */
  type: "file" | "dir" | "symlink" | "special";
  kind?: SpecialKind;
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

/** Called for a path the scan cannot read; without it, such an error ends the scan. */
export type OnUnreadable = (root: string, rel: string, err: NodeJS.ErrnoException) => void;

/** Errors that concern one path (its permissions, a bad disk block), not the whole run. */
export function isPathError(err: unknown): boolean {
  return ["EACCES", "EPERM", "EIO"].includes((err as NodeJS.ErrnoException)?.code ?? "");
}

/** An error for a root that cannot be walked, worded for the snapshot's `skipped` list (one clause: no ", "). */
function rootError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}

/**
 * Why a root that exists as a path cannot be walked, beyond permissions: a symlink whose target is
 * gone (a sessions dir linked to a disk that is not there is a loss, not an empty source) or a
 * loop. Undefined when the path itself does not exist (a sessions dir pi has not made yet).
 */
async function rootLinkProblem(root: string, err: unknown): Promise<NodeJS.ErrnoException | undefined> {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ELOOP") return err as NodeJS.ErrnoException;
  if (code !== "ENOENT" && code !== "ENOTDIR") return undefined;
  const link = await fs.lstat(root).catch(() => undefined);
  if (!link?.isSymbolicLink()) return undefined;
  const target = await fs.readlink(root).catch(() => "?");
  return rootError(code, `it is a symlink to ${target} and that is missing`);
}

/**
 * Walk the roots in sorted order (the tree stream must be sorted), yielding files, dirs, links and
 * special files. A root after the first that holds the first one (a sessions link to the agent
 * dir's parent, a sessionDir of "~") is not walked: it would back up the first root again, and
 * whatever else is there.
 */
export async function* scanSources(roots: SourceRoot[], filter: SourceFilter, onUnreadable?: OnUnreadable): AsyncGenerator<ScannedEntry> {
  const accept = compileFilter(filter);
  const firstReal = roots.length > 1 ? await fs.realpath(roots[0].path).catch(() => undefined) : undefined;
  for (const [i, root] of roots.entries()) {
    let rootStat: Stats;
    try {
      rootStat = await fs.stat(root.path);
    } catch (err) {
      const problem = isPathError(err) ? (err as NodeJS.ErrnoException) : await rootLinkProblem(root.path, err);
      if (onUnreadable && problem) onUnreadable(root.name, "", problem);
      continue;
    }
    if (!rootStat.isDirectory()) continue;
    if (i > 0 && firstReal) {
      const real = await fs.realpath(root.path).catch(() => undefined);
      if (real && isInside(firstReal, real)) {
        onUnreadable?.(root.name, "", rootError("EINVAL", `it holds ${roots[0].path} (root "${roots[0].name}"): not walked`));
        continue;
      }
    }
    yield* walk(root, root.path, "", accept, onUnreadable);
  }
}

function specialKind(stat: Stats): SpecialKind | undefined {
  if (stat.isFIFO()) return "fifo";
  if (stat.isSocket()) return "socket";
  if (stat.isCharacterDevice()) return "char-device";
  if (stat.isBlockDevice()) return "block-device";
  return undefined;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** A folder entry's name as text, and as the raw bytes when those are not valid UTF-8. */
function entryName(raw: Buffer): { text: string; raw?: Buffer } {
  try {
    return { text: strictUtf8.decode(raw) };
  } catch {
    return { text: raw.toString("utf8"), raw };
  }
}

/** How many entries of a folder the walk lstats ahead of the one it yields. */
const LSTAT_AHEAD = 16;

async function* walk(
  root: SourceRoot,
  dir: string | Buffer,
  rel: string,
  accept: (rel: string, isDir: boolean) => boolean,
  onUnreadable?: OnUnreadable,
  relBytes?: Buffer,
): AsyncGenerator<ScannedEntry> {
  let raw: Buffer[];
  try {
    // Names are read as bytes: one that is not UTF-8 would not survive a round trip through a string.
    raw = await fs.readdir(dir, { encoding: "buffer" });
  } catch (err) {
    // A folder that vanished mid-scan (pi deleting a session) is not an error for a backup.
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    if (onUnreadable && isPathError(err)) return onUnreadable(root.name, rel, err as NodeJS.ErrnoException);
    throw err;
  }
  const bytesOf = (n: { text: string; raw?: Buffer }) => n.raw ?? Buffer.from(n.text);
  const names = raw.map(entryName).sort((a, b) => (a.text < b.text ? -1 : a.text > b.text ? 1 : Buffer.compare(bytesOf(a), bytesOf(b))));
  const absOf = (name: { text: string; raw?: Buffer }) =>
    typeof dir === "string" && !name.raw ? path.join(dir, name.text) : Buffer.concat([Buffer.from(dir), Buffer.from("/"), bytesOf(name)]);
  // The lstats of the next few entries are in flight while this one is handled: one at a time, each
  // waited a thread-pool round trip. They are taken in order all the same, each before its entry.
  const ahead: { abs: string | Buffer; stat: Promise<Stats | { error: unknown }> }[] = [];
  const lstatOf = (i: number) => {
    const abs = absOf(names[i]);
    ahead[i % LSTAT_AHEAD] = { abs, stat: fs.lstat(abs).catch((error: unknown) => ({ error })) };
  };
  for (let i = 0; i < Math.min(LSTAT_AHEAD, names.length); i++) lstatOf(i);
  for (const [i, name] of names.entries()) {
    const { abs, stat: pending } = ahead[i % LSTAT_AHEAD];
    const stat = await pending;
    if (i + LSTAT_AHEAD < names.length) lstatOf(i + LSTAT_AHEAD);
    const relPath = rel ? `${rel}/${name.text}` : name.text;
    // Raw bytes are kept from the first name that is not UTF-8 down.
    const bytes = relBytes || name.raw ? Buffer.concat([relBytes ?? Buffer.from(rel), Buffer.from(rel ? "/" : ""), bytesOf(name)]) : undefined;
    if ("error" in stat) {
      // accept(…, true) is false only for an excluded name: those are not worth a warning.
      if (onUnreadable && isPathError(stat.error) && accept(relPath, true)) onUnreadable(root.name, relPath, stat.error as NodeJS.ErrnoException);
      continue;
    }
    const entry = { root: root.name, path: relPath, abs, stat, ...(bytes ? { pathBytes: bytes.toString("base64") } : {}) };
    if (stat.isDirectory()) {
      if (!accept(relPath, true)) continue;
      yield { ...entry, type: "dir" };
      yield* walk(root, abs, relPath, accept, onUnreadable, bytes);
    } else if (stat.isFile() || stat.isSymbolicLink()) {
      if (!accept(relPath, false)) continue;
      yield { ...entry, type: stat.isFile() ? "file" : "symlink" };
    } else {
      const kind = specialKind(stat);
      if (kind && accept(relPath, false)) yield { ...entry, type: "special", kind };
    }
  }
}
