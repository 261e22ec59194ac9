// Writing sessions the way pi does, and pi's file naming. pi serialises every line with
// JSON.stringify and ends each with "\n" (SessionManager._rewriteFile / _persist), so files we
// write are byte-identical to what pi would have written for the same objects.

import { makeDirs, syncDir } from "../../fs-safe.js";
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { SessionEntry, SessionHeader } from "../../model/session.js";

/** The whole file, header first; one JSON.stringify per line and a trailing "\n". */
export function serializeSession(header: SessionHeader, entries: readonly SessionEntry[]): string {
  let out = `${JSON.stringify(header)}\n`;
  for (const e of entries) out += `${JSON.stringify(e)}\n`;
  return out;
}

/** One line as pi appends it. */
export function serializeLine(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}

/**
 * The per-project folder name under sessions/ (pi's getDefaultSessionDir): drop one leading
 * slash or backslash, turn every / \ : into -, wrap in --. Lossy, so read cwd from the header.
 */
export function sessionDirName(cwd: string): string {
  return `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
}

/** `<header timestamp with : and . turned into ->_<session id>.jsonl`, as pi names new files. */
export function sessionFileName(header: Pick<SessionHeader, "timestamp" | "id">): string {
  return `${header.timestamp.replace(/[:.]/g, "-")}_${header.id}.jsonl`;
}

/** Where pi keeps this session under a default (not flat) sessions dir. */
export function sessionFilePath(sessionsDir: string, header: SessionHeader): string {
  return join(sessionsDir, sessionDirName(header.cwd), sessionFileName(header));
}

/** The session id and file timestamp encoded in a pi file name, if it follows pi's pattern. */
export function parseSessionFileName(fileName: string): { id: string; timestamp: string } | null {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)_(.+)\.jsonl$/.exec(basename(fileName));
  if (!m) return null;
  const [, stamp, id] = m;
  // 2024-12-03T14-00-00-000Z -> 2024-12-03T14:00:00.000Z
  const timestamp = `${stamp.slice(0, 13)}:${stamp.slice(14, 16)}:${stamp.slice(17, 19)}.${stamp.slice(20, 23)}Z`;
  return { id, timestamp };
}

export interface AtomicWriteOptions {
  /** Replace an existing file. Default false: fail with EEXIST instead. */
  overwrite?: boolean;
  /** File mode for a new file. Default 0o600: these files hold session text. */
  mode?: number;
  /** Create the parent directory if needed (0700). */
  mkdir?: boolean;
}


/**
 * Write a file so that readers see either nothing or the whole content: temp file in the same
 * directory, fsync, then rename (overwrite) or link (no overwrite, which fails atomically with
 * EEXIST), then fsync the directory. The temp file is removed on every path.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const dir = dirname(path);
  if (options.mkdir) await makeDirs(dir, 0o700);
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const handle = await fs.open(tmp, "wx", options.mode ?? 0o600);
  try {
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (options.overwrite) {
      await fs.rename(tmp, path);
    } else {
      await fs.link(tmp, path);
      await fs.unlink(tmp);
    }
    await syncDir(dir);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}
