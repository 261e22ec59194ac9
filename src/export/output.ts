// Where an export's text goes, a piece at a time: a file written to a temp name beside it and
// renamed into place only when every byte is on disk, or stdout. Nothing is assumed written:
// file writes go through writeFully, which loops over short writes and fails on the real error.

import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { promises as fs, rmSync } from "node:fs";
import path from "node:path";
import { isInside, META_ROOT_NAME } from "../config/config.js";
import { syncDir, writeFully } from "../fs-safe.js";
import { RepoError } from "../repo/errors.js";
import type { SourceRoot } from "../snapshot/sources.js";

export interface ExportSink {
  write(text: string): Promise<void>;
  /** Make the output final (flush, fsync, rename). Only after this has the export succeeded. */
  commit(): Promise<void>;
  /** Give up: leave no trace of this export. Safe to call after a failed write or commit. */
  abort(): Promise<void>;
  /** Bytes written so far (after commit: the size of the export). */
  readonly bytes: number;
}

const WRITE_ERRORS: Record<string, string> = {
  ENOTDIR: "a part of the path is a file, not a folder",
  ENOENT: "the folder does not exist",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EISDIR: "it is a folder",
  EROFS: "read-only file system",
  ENOSPC: "no space left on the device",
  EFBIG: "the file is larger than this system allows (ulimit -f?)",
  EDQUOT: "disk quota exceeded",
};

/** An I/O error writing `file` as one clear line. */
export function writeError(file: string, err: unknown): RepoError {
  const code = (err as NodeJS.ErrnoException).code ?? "";
  return new RepoError(`cannot write ${file}: ${WRITE_ERRORS[code] ?? (err as Error).message}`, "io");
}

const SIGNALS: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/** Text is gathered into writes of about this many bytes. */
const FLUSH_BYTES = 1 << 20;

/** A path with the symlinks of its existing part resolved, the rest appended as given. */
async function realLocation(p: string): Promise<string> {
  const missing: string[] = [];
  for (let current = path.resolve(p); ; current = path.dirname(current)) {
    try {
      return path.join(await fs.realpath(current), ...missing.reverse());
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== "ENOENT" && code !== "ENOTDIR") || path.dirname(current) === current) return path.resolve(p);
      missing.push(path.basename(current));
    }
  }
}

const ROOT_NAMES: Record<string, string> = { agent: "the agent dir", sessions: "pi's sessions dir", [META_ROOT_NAME]: "pi-guard's metadata dir" };

/**
 * Where an export may be written: never inside a source root (the agent dir first of all, where it
 * could replace a live session with Markdown; symlinks on the way resolved), and never over an
 * existing file unless `overwrite`. The file itself is not followed: it is replaced by a rename,
 * so a symlink there is replaced, not written through.
 */
export async function checkExportTarget(file: string, roots: readonly SourceRoot[], overwrite: boolean): Promise<void> {
  const real = path.join(await realLocation(path.dirname(path.resolve(file))), path.basename(file));
  for (const root of roots) {
    if (isInside(real, await realLocation(root.path))) {
      throw new RepoError(`refusing to write ${file}: it is inside ${ROOT_NAMES[root.name] ?? `the source root ${root.name}`} ${root.path}; export somewhere else`, "usage");
    }
  }
  if (!overwrite && (await fs.lstat(file).catch(() => undefined))) throw existsError(file);
}

const existsError = (file: string) => new RepoError(`${file} exists: an export replaces a file only with --force`, "exists");

/** Make `tmp` `file`: replacing what is there, or (not `overwrite`) only if nothing is, atomically. */
async function moveIntoPlace(tmp: string, file: string, overwrite: boolean): Promise<void> {
  if (overwrite) return fs.rename(tmp, file);
  try {
    // A hard link fails if the name is taken, even by a file made since the check.
    await fs.link(tmp, file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST") throw existsError(file);
    // A file system without hard links: check, then rename (a file made in between is replaced).
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "EMLINK") throw err;
    if (await fs.lstat(file).catch(() => undefined)) throw existsError(file);
    return fs.rename(tmp, file);
  }
  await fs.unlink(tmp);
}

/**
 * Write `file` atomically: a temp file in the same folder (mode 0600), renamed over it at commit;
 * with `overwrite: false`, commit fails rather than replace a file that is there by then.
 */
export async function fileSink(file: string, opts: { overwrite?: boolean } = {}): Promise<ExportSink> {
  const overwrite = opts.overwrite ?? true;
  const dir = path.dirname(file);
  const tmp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  // Ctrl-C or a kill while exporting must not leave the temp file behind (SIGKILL cannot be
  // caught; then the dot-named temp file stays, and the target is still untouched).
  const onSignal = (signal: NodeJS.Signals) => {
    rmSync(tmp, { force: true });
    untrap();
    process.kill(process.pid, signal);
  };
  const untrap = () => {
    for (const sig of SIGNALS) process.off(sig, onSignal);
  };
  for (const sig of SIGNALS) process.once(sig, onSignal);
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(tmp, "wx", 0o600);
  } catch (err) {
    untrap();
    throw writeError(file, err);
  }
  let pending: string[] = [];
  let pendingLength = 0;
  let position = 0;
  let done = false;
  const flush = async () => {
    if (!pendingLength) return;
    const data = Buffer.from(pending.join(""), "utf8");
    pending = [];
    pendingLength = 0;
    position = await writeFully(handle!, data, position);
  };
  const fail = async (err: unknown): Promise<never> => {
    await sink.abort();
    throw err instanceof RepoError ? err : writeError(file, err);
  };
  const sink: ExportSink = {
    get bytes() {
      return position + Buffer.byteLength(pending.join(""));
    },
    async write(text) {
      if (done) throw new Error("write after the export was closed");
      pending.push(text);
      pendingLength += text.length;
      if (pendingLength >= FLUSH_BYTES) await flush().catch(fail);
    },
    async commit() {
      try {
        await flush();
        await handle!.sync();
        await handle!.close();
        handle = undefined;
        // The bytes on disk must be the bytes written: a filesystem that lost some is a failure.
        const { size } = await fs.stat(tmp);
        if (size !== position) throw Object.assign(new Error(`wrote ${position} bytes but the file holds ${size}`), { code: "EIO" });
        await moveIntoPlace(tmp, file, overwrite);
        done = true;
        untrap();
      } catch (err) {
        await fail(err);
      }
      await syncDir(dir);
    },
    async abort() {
      done = true;
      untrap();
      pending = [];
      pendingLength = 0;
      await handle?.close().catch(() => undefined);
      handle = undefined;
      await fs.rm(tmp, { force: true }).catch(() => undefined);
    },
  };
  return sink;
}

/** stdout, honouring back-pressure so a slow reader does not make us buffer the whole export. */
export function stdoutSink(out: NodeJS.WritableStream = process.stdout): ExportSink {
  let bytes = 0;
  return {
    get bytes() {
      return bytes;
    },
    async write(text) {
      bytes += Buffer.byteLength(text);
      if (!out.write(text)) await once(out, "drain");
    },
    async commit() {},
    async abort() {},
  };
}
