// Writing salvaged sessions: to a folder of `<ts>_<id>.jsonl` files, or --install into pi's own
// sessions dir for each session's cwd. Never over an existing file, and each file appears whole
// (writeFileAtomic) or not at all.

import { promises as fs } from "node:fs";
import { join } from "node:path";
import { sessionDirName, sessionFileName, sessionsDir, writeFileAtomic } from "../pi/index.js";
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
  return names.find((n) => n.endsWith(`_${id}.jsonl`));
}

/** Render everything first, so a session that fails the checks stops the run before any write. */
export async function writeSessions(sessions: SalvagedSession[], target: WriteTarget): Promise<WrittenSession[]> {
  const planned = sessions.map((s) => {
    const dir = target.install ? installDir(s, target.agentDir) : target.outDir!;
    return { session: s, dir, path: join(dir, sessionFileName(s.header)), text: sessionText(s) };
  });
  for (const p of planned) {
    const clash = await existingCopy(p.dir, p.session.header.id);
    if (clash) throw new RepoError(`${join(p.dir, clash)} already holds session ${p.session.header.id}; nothing was written`, "exists");
  }
  const written: WrittenSession[] = [];
  for (const p of planned) {
    try {
      await writeFileAtomic(p.path, p.text, { mkdir: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new RepoError(`${p.path} already exists; not overwritten`, "exists");
      throw err;
    }
    written.push({ sessionId: p.session.header.id, path: p.path });
  }
  return written;
}
