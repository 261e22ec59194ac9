import { createWriteStream, promises as fs } from "node:fs";
import { once } from "node:events";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { createGzip } from "node:zlib";
import { Header, Pax } from "tar";
import picomatch from "picomatch";
import type { Writable } from "node:stream";
import { BlobReader } from "../repo/blob-reader.js";
import { RepoError } from "../repo/errors.js";
import type { TreeNode } from "../repo/format.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { SealPool } from "../repo/seal-pool.js";
import { readTree } from "../snapshot/tree.js";
import { rootFolder, type TreeLayout } from "./layout.js";
import { describeFsError } from "./restorer.js";
import { nodeComponents } from "./safe-path.js";

const BLOCK = 512;
const BATCH_BYTES = 8 * 1024 * 1024;

/**
 * Why a node cannot go into an archive, or undefined when it can. The snapshot is hostile input and
 * the archive is extracted by tools that may trust it: no `..`, absolute or non-UTF-8 names (tar
 * names here are UTF-8 text), no odd root names, and nothing below a symlink the archive holds.
 */
function unsafeForArchive(node: TreeNode, links: Set<string>): string | undefined {
  if (rootFolder(node.root, { withMeta: true }) === "unsafe") return `unsafe root name ${JSON.stringify(node.root)}`;
  let parts;
  try {
    parts = nodeComponents(node);
  } catch (err) {
    return (err as Error).message;
  }
  if (parts.some((p) => typeof p !== "string")) return "the name is not UTF-8, which this archive cannot hold (use `pi-guard restore --target`)";
  for (let i = 1; i < parts.length; i++) {
    const parent = `${node.root}\0${parts.slice(0, i).join("/")}`;
    if (links.has(parent)) return `${parts.slice(0, i).join("/")} is a symbolic link: nothing goes below it`;
  }
  return undefined;
}

export interface ArchiveResult {
  files: number;
  bytes: number;
  /** Nodes the archive could not hold safely, with why. */
  skipped: { path: string; error: string }[];
}

/**
 * Stream a snapshot out as a gzip'd POSIX tar (PAX headers for long names), one blob batch at a
 * time, laid out as layout.ts says (pi-guard's metadata only with `withMeta`). Written to a temp
 * file and renamed, so a failed archive never leaves a half file behind.
 */
export async function writeArchive(
  repo: Repository,
  record: SnapshotRecord,
  output: string,
  opts: { paths?: string[] } & TreeLayout = {},
): Promise<ArchiveResult> {
  await repo.loadIndex();
  const want = opts.paths?.length ? picomatch(opts.paths, { dot: true }) : () => true;
  const toStdout = output === "-";
  const tmp = toStdout ? "" : path.join(path.dirname(path.resolve(output)), `.${path.basename(output)}.${randomBytes(4).toString("hex")}.tmp`);
  let sink: Writable;
  if (toStdout) sink = process.stdout;
  else {
    sink = createWriteStream(tmp, { flags: "wx", mode: 0o600 });
    await once(sink, "open").catch((err) => {
      throw describeFsError(err, output);
    });
  }
  const gzip = createGzip({ level: 6 });
  gzip.pipe(sink);
  const write = async (buf: Buffer) => {
    if (!gzip.write(buf)) await once(gzip, "drain");
  };
  const pool = new SealPool();
  const reader = new BlobReader(repo, pool);
  let files = 0;
  let bytes = 0;
  const skipped: { path: string; error: string }[] = [];
  const links = new Set<string>();
  try {
    for await (const node of readTree(reader, record.snapshot)) {
      if (node.type !== "dir" && !want(node.path)) continue;
      const unsafe = unsafeForArchive(node, links);
      if (unsafe) {
        skipped.push({ path: String(node.path), error: unsafe });
        continue;
      }
      const folder = rootFolder(node.root, opts);
      if (folder === undefined) continue;
      if (node.type === "symlink") links.add(`${node.root}\0${node.path}`);
      await writeEntry(write, reader, node, folder);
      if (node.type === "file") {
        files++;
        bytes += node.size ?? 0;
      }
    }
    await write(Buffer.alloc(BLOCK * 2));
    gzip.end();
    if (!toStdout) {
      await once(sink, "finish");
      const handle = await fs.open(tmp, "r+");
      await handle.sync();
      await handle.close();
      await fs.rename(tmp, output);
    } else await once(gzip, "end");
  } catch (err) {
    gzip.destroy();
    if (!toStdout) {
      sink.destroy();
      await fs.unlink(tmp).catch(() => undefined);
    }
    throw err instanceof RepoError ? err : describeFsError(err, output);
  } finally {
    await pool.close();
  }
  return { files, bytes, skipped };
}

async function writeEntry(write: (b: Buffer) => Promise<void>, reader: BlobReader, node: TreeNode, folder: string): Promise<void> {
  const name = (folder ? `${folder}/${node.path}` : node.path) + (node.type === "dir" ? "/" : "");
  const data = {
    path: name,
    mode: node.mode,
    size: node.type === "file" ? node.size ?? 0 : 0,
    mtime: new Date(node.mtimeMs),
    type: node.type === "file" ? ("File" as const) : node.type === "dir" ? ("Directory" as const) : ("SymbolicLink" as const),
    linkpath: node.type === "symlink" ? node.target : undefined,
    uid: 0,
    gid: 0,
  };
  const header = new Header(data);
  const block = Buffer.alloc(BLOCK);
  if (header.encode(block, 0)) await write(new Pax(data).encode());
  await write(block);
  if (node.type !== "file") return;
  for await (const part of reader.stream(node.content ?? [], BATCH_BYTES)) await write(part);
  const pad = (BLOCK - ((node.size ?? 0) % BLOCK)) % BLOCK;
  if (pad) await write(Buffer.alloc(pad));
}
