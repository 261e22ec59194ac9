import { createReadStream, promises as fs } from "node:fs";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { Parser, type ReadEntry } from "tar";
import { RepoError } from "../repo/errors.js";
import { IMPORT_TAG } from "../repo/format.js";
import type { Repository } from "../repo/repository.js";
import { normalizeTarPath as normalize, showName, TarEntryGuard } from "./tar-guard.js";
import { withSnapshotBuilder, type SnapshotProgress, type SnapshotResult } from "./snapshotter.js";
import { hostName } from "../host.js";

export interface TarImportOptions {
  tags?: string[];
  /** Snapshot time; defaults to the newest mtime in the archive. */
  time?: string;
  host?: string;
  lockWaitMs?: number;
  onProgress?: (p: SnapshotProgress) => void;
}

/**
 * Where the agent dir starts inside an archive. `pi-guard archive` puts it at the top; hand-made
 * backups often have `agent/…` or `.pi/agent/…`. The prefix is whatever precedes the first
 * `sessions/` folder or `auth.json`.
 */
export function agentPrefix(paths: string[]): string {
  for (const p of paths) {
    const m = /^(.*?)(?:^|\/)(?:sessions\/|auth\.json$|settings\.json$|models\.json$)/.exec(p);
    if (m) return m[1] ? `${m[1]}/` : "";
  }
  return "";
}

/** At most this many refused entries are named; the count says how many there were. */
const MAX_NAMED = 50;

async function isGzip(file: string): Promise<boolean> {
  const handle = await fs.open(file, "r");
  try {
    const buf = Buffer.alloc(2);
    await handle.read(buf, 0, 2, 0);
    return buf[0] === 0x1f && buf[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

/** First pass: every entry's name and type checked, so that an unsafe archive imports nothing. */
async function listPaths(file: string, gz: boolean): Promise<{ paths: string[]; newest: number }> {
  const paths: string[] = [];
  const refused: string[] = [];
  const guard = new TarEntryGuard();
  let newest = 0;
  const parser = new Parser({
    onReadEntry: (entry: ReadEntry) => {
      const why = guard.check(entry);
      if (why) refused.push(`  ${showName(entry.path)} ${why}`);
      paths.push(normalize(entry.path));
      newest = Math.max(newest, entry.mtime?.getTime() ?? 0);
      entry.resume();
    },
  });
  await runParser(file, gz, parser);
  if (refused.length) {
    const more = refused.length > MAX_NAMED ? [`  … and ${refused.length - MAX_NAMED} more`] : [];
    throw new RepoError(
      [`refusing to import ${file}: ${refused.length} unsafe ${refused.length === 1 ? "entry" : "entries"} (nothing was imported)`, ...refused.slice(0, MAX_NAMED), ...more].join("\n"),
      "input",
    );
  }
  return { paths, newest };
}

async function runParser(file: string, gz: boolean, parser: Parser): Promise<void> {
  let warning: string | undefined;
  parser.on("warn", (code: string, message: string) => {
    warning ??= `${code}: ${message}`;
  });
  try {
    if (gz) await pipeline(createReadStream(file), createGunzip(), parser as unknown as NodeJS.WritableStream);
    else await pipeline(createReadStream(file), parser as unknown as NodeJS.WritableStream);
  } catch (err) {
    throw new RepoError(`${file} is not a readable tar archive: ${(err as Error).message}`, "usage");
  }
  if (warning && /TAR_BAD_ARCHIVE|TAR_ENTRY_INVALID|TAR_ABORT/.test(warning)) {
    throw new RepoError(`${file} is not a readable tar archive (${warning})`, "usage");
  }
}

/** Import a tarball of an agent dir as a snapshot (two passes: find the layout, then stream). */
export async function importTar(repo: Repository, file: string, opts: TarImportOptions = {}): Promise<SnapshotResult> {
  try {
    await fs.access(file);
  } catch {
    throw new RepoError(`cannot read ${file}`, "not-found");
  }
  const gz = await isGzip(file);
  const { paths, newest } = await listPaths(file, gz);
  if (paths.length === 0) throw new RepoError(`${file} holds no files: is it a tar archive?`, "usage");
  const prefix = agentPrefix(paths);
  const time = opts.time ? new Date(opts.time) : new Date(newest || Date.now());
  if (Number.isNaN(time.getTime())) throw new RepoError(`--time "${opts.time}" is not an ISO time`, "usage");

  return withSnapshotBuilder(repo, { command: "snapshot --from-tar", lockWaitMs: opts.lockWaitMs, onProgress: opts.onProgress }, async (b) => {
    // Entries are handled strictly one after another: the builder writes one sorted tree stream.
    let chain = Promise.resolve();
    // Checked again: the file may have been swapped since the first pass.
    const guard = new TarEntryGuard();
    const parser = new Parser({
      onReadEntry: (entry: ReadEntry) => {
        const why = guard.check(entry);
        if (why) {
          entry.resume();
          chain = chain.then(() => {
            throw new RepoError(`refusing to import ${file}: ${showName(entry.path)} ${why} (the archive changed while it was read; nothing was imported)`, "input");
          });
          return;
        }
        const rel = normalize(entry.path);
        if (!rel.startsWith(prefix) || rel === normalize(prefix)) {
          entry.resume();
          return;
        }
        const inner = rel.slice(prefix.length);
        // No setuid, setgid or sticky bits from an archive: a restore as root would honour them.
        const node = { root: "agent", path: inner, mode: (entry.mode ?? 0o644) & 0o777, mtimeMs: entry.mtime?.getTime() ?? time.getTime() };
        if (entry.type === "Directory") {
          entry.resume();
          chain = chain.then(() => b.addNode({ ...node, type: "dir" }));
        } else if (entry.type === "SymbolicLink") {
          entry.resume();
          chain = chain.then(() => b.addNode({ ...node, type: "symlink", target: entry.linkpath ?? "" }));
        } else if (entry.type === "File" || entry.type === "OldFile" || entry.type === "ContiguousFile") {
          entry.pause();
          // Once anything failed, drain the paused entry anyway, or the parser would wait forever.
          chain = chain.then(() => b.addStreamedFile(node, entry as AsyncIterable<Buffer>)).catch((err: unknown) => {
            entry.resume();
            throw err;
          });
        } else entry.resume();
      },
    });
    await runParser(file, gz, parser);
    await chain;
    return b.commit({
      host: opts.host ?? hostName(),
      roots: [{ name: "agent", path: `tar:${file}` }],
      tags: [...new Set([...(opts.tags ?? []), IMPORT_TAG])],
      time: time.toISOString(),
      imported: new Date().toISOString(),
    });
  });
}
