// The accident pi-guard exists for, in a sandbox: an agent dir holding real pi sessions (pi's own
// agent loop) and pi's config files, then `rm -rf sessions auth.json` as the npm reify did.

import { mkdirSync, rmSync, symlinkSync } from "node:fs";
import path from "node:path";
import { fauxText, makePiSession } from "./pi-factory.js";
import { type Sandbox, writePiConfigFiles } from "./tmp.js";

/** auth.json, models.json, settings.json and four one-turn pi sessions: 7 files. */
export async function piAgentDir(sb: Sandbox): Promise<{ sessionIds: string[]; files: string[] }> {
  writePiConfigFiles(sb.agentDir);
  const sessionIds: string[] = [];
  const files: string[] = [];
  for (const name of ["alpha", "beta", "gamma", "delta"]) {
    const made = await makePiSession({ agentDir: sb.agentDir, cwd: path.join(sb.root, `project-${name}`), turns: [{ user: `question about ${name}`, assistant: [fauxText(`answer about ${name}`)] }] });
    sessionIds.push(made.sessionId);
    files.push(made.file);
  }
  return { sessionIds, files };
}

/**
 * piAgentDir with the sessions dir moved to a "bigger disk" and linked back (`sessions -> big`),
 * pi writing its sessions through the link; returns the folder behind it.
 */
export async function piAgentDirLinked(sb: Sandbox): Promise<string> {
  const big = path.join(sb.dir("bigdisk"), "pi-sessions");
  mkdirSync(big);
  mkdirSync(sb.agentDir, { recursive: true });
  symlinkSync(big, sb.sessionsDir);
  await piAgentDir(sb);
  return big;
}

/** What the reify removed: the whole sessions dir and auth.json (5 of the 7 files). */
export function accident(sb: Sandbox): void {
  rmSync(sb.sessionsDir, { recursive: true, force: true });
  rmSync(path.join(sb.agentDir, "auth.json"), { force: true });
}
