// Where a merged session goes and how: pi's sessions dir (so pi lists it), written atomically and
// never over an existing file.

import path from "node:path";
import type { Config } from "../config/config.js";
import { serializeSession, sessionFileName, sessionFilePath, writeFileAtomic } from "../agents/pi/writer.js";
import { sessionsDir } from "../agents/pi/paths.js";
import { type SessionHeader } from "../model/session.js";
import { RepoError } from "../repo/errors.js";
import type { MergedSession } from "./merge.js";

export function mergedSessionPath(config: Config, header: SessionHeader, env: Record<string, string | undefined> = process.env): string {
  const dir = sessionsDir({ env, agentDir: config.agentDir });
  return dir.flat ? path.join(dir.dir, sessionFileName(header)) : sessionFilePath(dir.dir, header);
}

/** `mkdir` only for pi's own project folder: a user's --output folder must exist already. */
export async function writeNewSession(file: string, session: MergedSession, mkdir: boolean): Promise<void> {
  try {
    await writeFileAtomic(file, serializeSession(session.header, session.entries), { mkdir });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST") throw new RepoError(`${file} exists: merge never overwrites a file`, "exists");
    throw new RepoError(`cannot write ${file}: ${code ?? (err as Error).message}`, "io");
  }
}
