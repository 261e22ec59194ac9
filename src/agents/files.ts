// The two FileReaders (types.ts): an agent's roots on disk, and a snapshot's tree. Adapters read
// through these only, so a session reader written once serves both the live dir and any snapshot.

import { createReadStream, createWriteStream, promises as fs, type Dirent } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { TreeNode, TreeRef } from "../repo/format.js";
import type { SnapshotReader } from "../restore/snapshot-reader.js";
import type { SourceRoot } from "../snapshot/sources.js";
import type { FileInfo, FileReader, FileRef } from "./types.js";

/** A listing stops after this many files per root: a hostile tree cannot make a walk endless. */
export const MAX_LISTED_FILES = 1_000_000;

function tooBig(ref: FileRef, size: number, maxBytes: number): Error {
  return new Error(`${ref.root}:${ref.path} is ${size} bytes, more than the ${maxBytes} this read allows`);
}

async function collect(chunks: AsyncIterable<Buffer>, ref: FileRef, maxBytes: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const c of chunks) {
    size += c.length;
    if (size > maxBytes) throw tooBig(ref, size, maxBytes);
    parts.push(c);
  }
  return Buffer.concat(parts);
}

/** A private temp folder holding `refs` as `<root>/<path>`, filled by `copy`. */
async function tempCopies(refs: readonly FileRef[], copy: (ref: FileRef, to: string) => Promise<void>) {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "pi-guard-agent-"));
  const where = (ref: FileRef) => path.join(dir, ref.root, ...ref.path.split("/").filter((p) => p && p !== "." && p !== ".."));
  try {
    for (const ref of refs) {
      await fs.mkdir(path.dirname(where(ref)), { recursive: true, mode: 0o700 });
      await copy(ref, where(ref));
    }
  } catch (err) {
    await fs.rm(dir, { recursive: true, force: true });
    throw err;
  }
  return { path: where, dispose: () => fs.rm(dir, { recursive: true, force: true }) };
}

/** The files of `roots` on disk. Symlinks are not followed inside a root (a root that is a link is). */
export function liveFiles(roots: readonly SourceRoot[]): FileReader {
  const byName = new Map(roots.map((r) => [r.name, r.path]));
  const abs = (ref: FileRef): string => {
    const base = byName.get(ref.root);
    if (base === undefined) throw new Error(`no root "${ref.root}" here`);
    const parts = ref.path.split("/").filter(Boolean);
    if (parts.some((p) => p === "..")) throw new Error(`${ref.root}:${ref.path} leaves its root`);
    return path.join(base, ...parts);
  };
  const info = async (ref: FileRef): Promise<FileInfo | undefined> => {
    const st = await fs.lstat(abs(ref)).catch(() => undefined);
    return st?.isFile() ? { ...ref, size: st.size, mtimeMs: st.mtimeMs } : undefined;
  };
  return {
    where: roots.map((r) => r.path).join(", "),
    roots: roots.map((r) => r.name),
    async *list(root, prefix = "") {
      if (!byName.has(root)) return;
      let seen = 0;
      const walk = async function* (rel: string): AsyncGenerator<FileInfo> {
        const entries = await fs.readdir(abs({ root, path: rel }), { withFileTypes: true }).catch(() => [] as Dirent[]);
        entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        for (const e of entries) {
          if (++seen > MAX_LISTED_FILES) return;
          const child = rel ? `${rel}/${e.name}` : e.name;
          if (e.isDirectory()) yield* walk(child);
          else if (e.isFile()) {
            const i = await info({ root, path: child });
            if (i) yield i;
          }
        }
      };
      const start = prefix.replace(/\/+$/, "");
      const st = await fs.lstat(abs({ root, path: start })).catch(() => undefined);
      if (st?.isFile()) {
        const i = await info({ root, path: start });
        if (i) yield i;
      } else if (st?.isDirectory() || (start === "" && st?.isSymbolicLink())) yield* walk(start);
    },
    stat: info,
    async *stream(ref) {
      yield* createReadStream(abs(ref), { highWaterMark: 1 << 16 }) as AsyncIterable<Buffer>;
    },
    async read(ref, maxBytes) {
      const i = await info(ref);
      if (!i) throw new Error(`${ref.root}:${ref.path} is not a file`);
      if (i.size > maxBytes) throw tooBig(ref, i.size, maxBytes);
      return collect(this.stream(ref), ref, maxBytes);
    },
    // A plain copy: a SQLite unit is copied consistently by the copy module before it gets here.
    materialize: (refs) => tempCopies(refs, (ref, to) => fs.copyFile(abs(ref), to)),
  };
}

/** The files of one snapshot, listed from its tree once (metadata only) and read blob by verified blob. */
export async function snapshotFiles(reader: SnapshotReader, snapshot: { id: string } & TreeRef): Promise<FileReader> {
  const nodes = new Map<string, TreeNode>();
  const roots = new Set<string>();
  for await (const n of reader.files(snapshot)) {
    // The tree is untrusted: a node without a string root and path is no file an adapter can name.
    if (typeof n?.root !== "string" || typeof n.path !== "string") continue;
    roots.add(n.root);
    if (n.type === "file") nodes.set(`${n.root}\0${n.path}`, n);
  }
  const infos = [...nodes.values()].map((n): FileInfo => ({ root: n.root, path: n.path, size: n.size ?? 0, mtimeMs: n.mtimeMs }));
  return listedFiles(`snapshot ${snapshot.id}`, [...roots], infos, (ref) => reader.stream(nodes.get(`${ref.root}\0${ref.path}`)!));
}

/**
 * A FileReader over a listing made once (a snapshot's files, whatever the engine): `files` in
 * the listing's order, each read through `read`, which is asked only for a listed file.
 */
export function listedFiles(where: string, roots: readonly string[], files: readonly FileInfo[], read: (ref: FileRef) => AsyncIterable<Buffer>): FileReader {
  const nodes = new Map(files.map((f) => [`${f.root}\0${f.path}`, f]));
  const node = (ref: FileRef) => nodes.get(`${ref.root}\0${ref.path}`);
  const stream = (ref: FileRef): AsyncIterable<Buffer> => {
    if (!node(ref)) throw new Error(`${ref.root}:${ref.path} is not in ${where}`);
    return read(ref);
  };
  return {
    where,
    roots: [...roots],
    async *list(root, prefix = "") {
      const p = prefix.replace(/\/+$/, "");
      for (const n of files) if (n.root === root && (p === "" || n.path === p || n.path.startsWith(`${p}/`))) yield { ...n };
    },
    stat: async (ref) => {
      const n = node(ref);
      return n ? { ...n } : undefined;
    },
    stream,
    read: (ref, maxBytes) => {
      const n = node(ref);
      if (n && n.size > maxBytes) return Promise.reject(tooBig(ref, n.size, maxBytes));
      return collect(stream(ref), ref, maxBytes);
    },
    materialize: (refs) =>
      tempCopies(refs, (ref, to) => pipeline(Readable.from(stream(ref)), createWriteStream(to, { flags: "wx", mode: 0o600 }))),
  };
}
