/**
 * `pi-guard doctor`: looks for setups in which the accident pi-guard exists for would still cost
 * data (the repository or key inside the agent dir, no recent snapshot, a readable key file…).
 */
import { promises as fs } from "node:fs";
import path from "node:path";
import type { Config } from "./config/config.js";
import { isInside } from "./config/config.js";
import { resolveCredentials } from "./config/credentials.js";
import { openRepository, openTarget } from "./engine.js";
import { isImport } from "./repo/format.js";

export type CheckStatus = "ok" | "warn" | "error";

export interface DoctorCheck {
  name: string;
  status: CheckStatus;
  message: string;
}

const DAY = 24 * 60 * 60 * 1000;

export async function runDoctor(config: Config, now = Date.now()): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  const add = (name: string, status: CheckStatus, message: string) => checks.push({ name, status, message });

  const agentExists = await fs.stat(config.agentDir).then((s) => s.isDirectory(), () => false);
  add("agent dir", agentExists ? "ok" : "warn", agentExists ? config.agentDir : `${config.agentDir} does not exist: nothing to back up (set PI_CODING_AGENT_DIR?)`);
  for (const root of config.roots.filter((r) => r.name === "sessions")) add("sessions dir", "ok", `${root.path} (outside the agent dir; backed up as root "${root.name}")`);

  const local = !config.repo.startsWith("s3://");
  const piHome = path.dirname(config.agentDir);
  if (local && isInside(config.repo, config.agentDir)) {
    add("repository location", "error", `${config.repo} is inside the agent dir: the npm reify that deletes sessions would delete the backups too`);
  } else if (local && path.basename(piHome) === ".pi" && isInside(config.repo, piHome)) {
    add("repository location", "warn", `${config.repo} is inside ${piHome}, next to the agent dir: move it to $XDG_DATA_HOME/pi-guard`);
  } else add("repository location", "ok", config.repo);

  if (isInside(config.keyFile, config.agentDir) || (local && isInside(config.keyFile, config.repo))) {
    add("key file location", "warn", `${config.keyFile} sits where it can be lost together with what it protects; keep a copy elsewhere`);
  }
  const keyStat = await fs.stat(config.keyFile).catch(() => undefined);
  if (keyStat && (keyStat.mode & 0o077) !== 0) {
    add("key file mode", "warn", `${config.keyFile} is readable by others (mode ${(keyStat.mode & 0o777).toString(8)}); run chmod 600`);
  }

  const cred = await resolveCredentials(config).catch((err: Error) => err);
  if (cred instanceof Error) add("credentials", "error", cred.message);
  else if (!cred) add("credentials", "warn", "no password or key file: commands will ask for a password (set PI_GUARD_PASSWORD_FILE for unattended use)");
  else add("credentials", "ok", cred.kind === "keyfile" ? `key file ${cred.path}` : `password from ${cred.source}`);

  if (!(await openTarget(config).head("config").catch(() => undefined))) {
    add("repository", "error", `no repository at ${config.repo}: run \`pi-guard init\` (or \`pi-guard snapshot --init\`)`);
    return checks;
  }
  if (!cred || cred instanceof Error) return checks;
  try {
    const repo = await openRepository(config);
    const snapshots = await repo.listSnapshots();
    const last = snapshots.filter((s) => !isImport(s.snapshot)).at(-1);
    if (!last) add("last snapshot", "warn", "the repository has no snapshots yet: run `pi-guard snapshot`");
    else {
      const age = now - Date.parse(last.snapshot.time);
      const when = `${last.id.slice(0, 8)} at ${last.snapshot.time}`;
      add("last snapshot", age > DAY ? "warn" : "ok", age > DAY ? `${when}, more than a day ago: run \`pi-guard snapshot\` now, and from cron or a timer` : when);
    }
  } catch (err) {
    add("repository", "error", (err as Error).message);
  }
  return checks;
}
