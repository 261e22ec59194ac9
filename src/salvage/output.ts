// Writing salvaged sessions: to a folder of `<ts>_<id>.jsonl` files, or --install into pi's own
// sessions dir for each session's cwd. Two phases, so a run that fails half-way leaves nothing:
// stage() writes each session complete to a hidden temp file beside its final name (one session
// in memory at a time); commit() links them all into place, never over an existing file.

import { makeDirs } from "../fs-safe.js";
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { basename, dirname, join } from "node:path";
import { parseSessionFileName, sessionDirName, sessionFileName } from "../agents/pi/writer.js";
import { sessionsDir } from "../agents/pi/paths.js";
import { listLiveFiles, type LiveFile } from "../sessions/live.js";
import { headerSeed } from "../sessions/read.js";
import { RepoError } from "../repo/errors.js";
import { sessionText } from "./finalize.js";
import type { SalvagedSession } from "./types.js";

export interface WriteTarget {
  /** Write every session flat into this folder. */
  outDir?: string;
  /** Put each session where pi looks for it (sessions dir of its cwd). */
  install?: boolean;
  /** Agent dir for --install (default $PI_CODING_AGENT_DIR or ~/.pi/agent). */
  agentDir?: string;
}

export interface WrittenSession {
  sessionId: string;
  path: string;
}

interface Staged extends WrittenSession {
  tmp: string;
}

function installDir(session: SalvagedSession, agentDir?: string): string {
  if (!session.cwdKnown) {
    throw new RepoError(`session ${session.header.id}: its project dir is unknown, so it cannot be installed; pass --cwd`, "usage");
  }
  const where = sessionsDir({ agentDir, cwd: session.header.cwd });
  return where.flat ? where.dir : join(where.dir, sessionDirName(session.header.cwd));
}

/** pi would show two files with one session id as two sessions; refuse to create the second. */
async function existingCopy(dir: string, id: string): Promise<string | undefined> {
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  const name = names.find((n) => n.endsWith(`_${id}.jsonl`));
  return name === undefined ? undefined : join(dir, name);
}

/**
 * The live file that already holds session `id`, in any folder pi reads sessions from: the
 * session may live under another project's folder than the one it would be installed in (a
 * different --cwd, a moved project). Named `<time>_<id>.jsonl` as pi names them, or, for other
 * names, with that id in its header line.
 */
async function liveCopy(session: SalvagedSession, agentDir: string | undefined, listed: Map<string, LiveFile[]>): Promise<string | undefined> {
  const id = session.header.id;
  const dirs = [sessionsDir({ agentDir }).dir, sessionsDir({ agentDir, cwd: session.header.cwd }).dir];
  if (agentDir) dirs.push(join(agentDir, "sessions"));
  const unique = [...new Set(dirs)];
  // Sessions of one run mostly share these folders: each list of them is walked once per run.
  const key = unique.join("\0");
  const files = listed.get(key) ?? listLiveFiles(unique);
  listed.set(key, files);
  for (const f of files) {
    const name = basename(f.path);
    if (name.endsWith(`_${id}.jsonl`)) return f.path;
    if (parseSessionFileName(name) === null && (await headerId(f.path)) === id) return f.path;
  }
  return undefined;
}

/** The id in a file's header line (its first 64 KiB, as headerSeed reads it). */
async function headerId(file: string): Promise<string | undefined> {
  const handle = await fs.open(file, "r").catch(() => undefined);
  if (!handle) return undefined;
  try {
    const buf = Buffer.alloc(64 * 1024);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return headerSeed(buf.subarray(0, bytesRead), "") || undefined;
  } catch {
    return undefined; // unreadable: not a file pi could show either
  } finally {
    await handle.close();
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, "r").catch(() => undefined);
  if (!handle) return;
  await handle.sync().catch(() => undefined);
  await handle.close();
}

export class SessionWriter {
  private readonly staged: Staged[] = [];
  /** Top-most folders this run created, removed again if the run fails. */
  private readonly created: string[] = [];
  /** The live session files of pi's folders, by folder list (liveCopy). */
  private readonly liveFiles = new Map<string, LiveFile[]>();

  constructor(private readonly target: WriteTarget) {}

  /** Check and render one session and write it to a temp file; the caller may drop it after. */
  async stage(session: SalvagedSession): Promise<void> {
    const dir = this.target.install ? installDir(session, this.target.agentDir) : this.target.outDir!;
    const path = join(dir, sessionFileName(session.header));
    const live = this.target.install ? await liveCopy(session, this.target.agentDir, this.liveFiles) : undefined;
    if (live) throw new RepoError(`${live} already holds session ${session.header.id} (salvage --out DIR writes the salvaged copy elsewhere); nothing was written`, "exists");
    const clash = (await existingCopy(dir, session.header.id)) ?? this.staged.find((s) => s.sessionId === session.header.id)?.path;
    if (clash) throw new RepoError(`${clash} already holds session ${session.header.id}; nothing was written`, "exists");
    const text = sessionText(session);
    // Session text is private, like pi's auth.json: folders 0700, files 0600.
    const made = await makeDirs(dir, 0o700);
    if (made) this.created.push(made);
    const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
    this.staged.push({ sessionId: session.header.id, path, tmp });
    const handle = await fs.open(tmp, "wx", 0o600);
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /** Link every staged file into place. A name taken meanwhile undoes the whole run. */
  async commit(): Promise<WrittenSession[]> {
    const linked: string[] = [];
    try {
      for (const s of this.staged) {
        try {
          await fs.link(s.tmp, s.path);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new RepoError(`${s.path} already exists; not overwritten, nothing was written`, "exists");
          throw err;
        }
        linked.push(s.path);
      }
    } catch (err) {
      await Promise.all(linked.map((p) => fs.rm(p, { force: true })));
      await this.discard(true);
      throw err;
    }
    await this.discard();
    for (const dir of new Set(this.staged.map((s) => dirname(s.path)))) await fsyncDir(dir);
    return this.staged.map(({ sessionId, path }) => ({ sessionId, path }));
  }

  /** Remove the temp files (after commit), and on failure the folders this run created. */
  async discard(failed = false): Promise<void> {
    await Promise.all(this.staged.map((s) => fs.rm(s.tmp, { force: true })));
    if (failed) for (const dir of this.created) await fs.rm(dir, { recursive: true, force: true });
  }
}

/** Stage and commit in one go. */
export async function writeSessions(sessions: SalvagedSession[], target: WriteTarget): Promise<WrittenSession[]> {
  const writer = new SessionWriter(target);
  try {
    for (const s of sessions) await writer.stage(s);
  } catch (err) {
    await writer.discard(true);
    throw err;
  }
  return writer.commit();
}
