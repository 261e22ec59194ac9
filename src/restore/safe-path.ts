import { promises as fs, type Stats } from "node:fs";
import path from "node:path";
import { RepoError } from "../repo/errors.js";

/**
 * Paths that restore writes. A snapshot is hostile input: its node paths are validated here, and
 * every folder on the way to a file is checked with lstat from "/" down, so that neither a `..`
 * nor a symlink (one the snapshot itself just restored included) can lead a write elsewhere.
 * Names that are not valid UTF-8 are carried as Buffers (Node accepts both as paths).
 */
export type FsPath = string | Buffer;

/** One node (or folder) restore will not write; it is listed as failed and the rest goes on. */
export class RefusedPath extends Error {}

const SLASH = 0x2f;
const utf8 = new TextDecoder("utf-8", { fatal: true });

function decodeStrict(bytes: Buffer): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** A snapshot root's name becomes a folder name (`.<name>`) under a target or in an archive. */
export function isSafeRootName(name: unknown): name is string {
  return typeof name === "string" && /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(name);
}

function checkComponent(name: string): void {
  if (name === "") throw new RefusedPath("unsafe path: empty component (absolute path or //)");
  if (name === "." || name === "..") throw new RefusedPath(`unsafe path: "${name}" component`);
  if (name.includes("\0")) throw new RefusedPath("unsafe path: NUL byte");
  if (name.includes("\\")) throw new RefusedPath("unsafe path: backslash");
}

/**
 * The components of a tree node's relative path, validated. `pathBytes` (base64 of the raw
 * bytes) wins over `path` when present; a component that is not UTF-8 stays a Buffer.
 */
export function nodeComponents(node: { path: unknown; pathBytes?: unknown }): FsPath[] {
  if (node.pathBytes !== undefined) {
    if (typeof node.pathBytes !== "string") throw new RefusedPath("unsafe path: pathBytes is not a string");
    const raw = Buffer.from(node.pathBytes, "base64");
    const parts: FsPath[] = [];
    let start = 0;
    for (let i = 0; i <= raw.length; i++) {
      if (i < raw.length && raw[i] !== SLASH) continue;
      const bytes = raw.subarray(start, i);
      const text = decodeStrict(bytes);
      checkComponent(text ?? bytes.toString("latin1"));
      parts.push(text ?? Buffer.from(bytes));
      start = i + 1;
    }
    return parts;
  }
  if (typeof node.path !== "string") throw new RefusedPath("unsafe path: not a string");
  const parts = node.path.split("/");
  for (const p of parts) checkComponent(p);
  return parts;
}

export function joinPath(dir: FsPath, name: FsPath): FsPath {
  if (typeof dir === "string" && typeof name === "string") return dir.endsWith("/") ? dir + name : `${dir}/${name}`;
  const d = Buffer.from(dir as string);
  return Buffer.concat([d, d[d.length - 1] === SLASH ? Buffer.alloc(0) : Buffer.from("/"), Buffer.from(name as string)]);
}

export function showPath(p: FsPath): string {
  return typeof p === "string" ? p : p.toString("utf8");
}

/** lstat, or undefined when nothing is there. */
export const lstatOrNone = (p: FsPath): Promise<Stats | undefined> =>
  fs.lstat(p).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw err;
  });

/**
 * A restore destination as a real path (symlinks that exist now resolved; they are the user's),
 * with the missing part appended. Refuses a destination that is a file, or lies under one.
 */
export async function resolveDestRoot(dir: string): Promise<string> {
  const missing: string[] = [];
  let current = path.resolve(dir);
  for (;;) {
    try {
      const real = await fs.realpath(current);
      const st = await fs.stat(real);
      if (!st.isDirectory()) {
        const what = missing.length ? `${current} is a file, not a folder` : "it is a file, not a folder";
        throw new RepoError(`cannot restore to ${dir}: ${what}`, "io");
      }
      return path.join(real, ...missing.reverse());
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw err;
      const parent = path.dirname(current);
      if (parent === current) throw err;
      missing.push(path.basename(current));
      current = parent;
    }
  }
}

/**
 * Walk from "/" through `root` (a path from resolveDestRoot) and then `comps`, with lstat at each
 * step: a symlink or a non-folder refuses the walk. With `create`, missing folders are made one
 * level at a time (and checked again after mkdir, which never follows a final symlink). Returns
 * the folder, or undefined when part of it is missing and `create` is off.
 */
export async function walkDirs(root: string, comps: FsPath[], create: boolean, mode = 0o755): Promise<FsPath | undefined> {
  const steps: FsPath[] = [...root.split("/").filter(Boolean), ...comps];
  let current: FsPath = "/";
  const rootDepth = steps.length - comps.length;
  for (let i = 0; i < steps.length; i++) {
    current = joinPath(current, steps[i]);
    let st = await lstatOrNone(current);
    if (!st) {
      if (!create) return undefined;
      await fs.mkdir(current, { mode: i === steps.length - 1 ? mode : 0o755 }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "EEXIST") throw err;
      });
      st = await fs.lstat(current);
    }
    const shown = i < rootDepth ? showPath(current) : comps.slice(0, i - rootDepth + 1).map(showPath).join("/");
    if (st.isSymbolicLink()) throw new RefusedPath(`${shown} is a symbolic link: not following it`);
    if (!st.isDirectory()) throw new RefusedPath(`${shown} is not a folder`);
  }
  return current;
}

/**
 * The path of the file `comps` names under `root`, its folders walked as walkDirs does (never
 * created); undefined when one of them is missing.
 */
export async function walkToFile(root: string, comps: FsPath[]): Promise<FsPath | undefined> {
  const dir = await walkDirs(root, comps.slice(0, -1), false);
  return dir === undefined ? undefined : joinPath(dir, comps[comps.length - 1]);
}

/** lstat of the file `comps` names under `root` (folders walked as walkToFile does); undefined when it or a folder is missing. */
export async function lstatFile(root: string, comps: FsPath[]): Promise<Stats | undefined> {
  const file = await walkToFile(root, comps);
  return file === undefined ? undefined : lstatOrNone(file);
}
