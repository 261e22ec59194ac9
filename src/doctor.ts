/**
 * `pi-guard doctor`: looks for setups in which the accident pi-guard exists for would still cost
 * data (the repository or key inside the agent dir, no recent snapshot, a readable key file…).
 */
import { listingDamage } from "./repo/snapshot-damage.js";
import { promises as fs } from "node:fs";
import path from "node:path";
import type { Config } from "./config/config.js";
import { isInside } from "./config/config.js";
import { readCredentialCopies, resolveCredentials } from "./config/credentials.js";
import { openRepository, openTarget } from "./engine.js";
import { isImport } from "./repo/format.js";
import { isLocalLocation, parseRepoLocation } from "./targets/location.js";
import { agentFileChecks, protectionCheck } from "./doctor-hazards.js";
import { findAgent } from "./agents/registry.js";
import { PI_AGENT_FILES } from "./agents/pi/paths.js";
import type { Repository, SnapshotRecord } from "./repo/repository.js";
import type { ObjectInfo, Target } from "./targets/target.js";

export type CheckStatus = "ok" | "warn" | "error";

export interface DoctorCheck {
  name: string;
  status: CheckStatus;
  message: string;
  /** For a warning or an error: one line naming a command or action that fixes it. */
  fix?: string;
  /** The files a finding is about, when there are several. */
  paths?: string[];
}

const DAY = 24 * 60 * 60 * 1000;

/** `agent`: only that agent's checks beside the repository's (`doctor --agent NAME`); default: every guarded agent's. */
export async function runDoctor(config: Config, now = Date.now(), agent?: string): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  const add = (name: string, status: CheckStatus, message: string, fix?: string, paths?: string[]) =>
    checks.push({ name, status, message, ...(fix && status !== "ok" ? { fix } : {}), ...(paths ? { paths } : {}) });
  const withPi = agent === undefined || agent === "pi";

  if (withPi) {
    const agentExists = await fs.stat(config.agentDir).then((s) => s.isDirectory(), () => false);
    add("agent dir", agentExists ? "ok" : "warn", agentExists ? config.agentDir : `${config.agentDir} does not exist: nothing to back up`, "set PI_CODING_AGENT_DIR (or --agent-dir) to the agent dir pi uses");
    for (const root of config.roots.filter((r) => r.name === "sessions")) {
      add("sessions dir", "ok", `${root.path} (${config.sessionsLink ? "a symlink, followed" : "outside the agent dir"}; backed up as root "${root.name}")`);
    }
  }
  for (const choice of config.agents.filter((c) => c.location.agent !== "pi" && (agent === undefined ? c.guarded : c.location.agent === agent))) {
    const loc = choice.location;
    add(`${loc.agent} dir`, choice.detected ? "ok" : "warn", choice.detected ? `${loc.dir} (${choice.guarded ? "guarded" : `not guarded: ${choice.why}`})` : `${loc.dir} does not exist: nothing of ${loc.agent} to back up`, `set ${loc.agent}'s own variable, or "agents": {"${loc.agent}": {"dir": "…"}} in the config file`);
  }

  const local = isLocalLocation(config.repo);
  const piHome = path.dirname(config.agentDir);
  if (local && isInside(config.repo, config.agentDir)) {
    add("repository location", "error", `${config.repo} is inside the agent dir: the npm reify that deletes sessions would delete the backups too`, "pi-guard init --repo ~/.local/share/pi-guard/repo (outside the agent dir), then set PI_GUARD_REPO to it");
  } else if (local && path.basename(piHome) === ".pi" && isInside(config.repo, piHome)) {
    add("repository location", "warn", `${config.repo} is inside ${piHome}, next to the agent dir`, "move the repository to $XDG_DATA_HOME/pi-guard/repo and set PI_GUARD_REPO to it");
  } else add("repository location", "ok", config.repo);

  if (isInside(config.keyFile, config.agentDir) || (local && isInside(config.keyFile, config.repo))) {
    add("key file location", "warn", `${config.keyFile} sits where it can be lost together with what it protects`, "keep a copy elsewhere, or move it out and set PI_GUARD_KEY_FILE to the new path");
  }
  const keyStat = await fs.stat(config.keyFile).catch(() => undefined);
  if (keyStat && (keyStat.mode & 0o077) !== 0) {
    add("key file mode", "warn", `${config.keyFile} is readable by others (mode ${(keyStat.mode & 0o777).toString(8)})`, `chmod 600 ${config.keyFile}`);
  }

  const cred = await resolveCredentials(config).catch((err: Error) => err);
  if (cred instanceof Error) add("credentials", "error", cred.message, "fix the file named, or point PI_GUARD_KEY_FILE / PI_GUARD_PASSWORD_FILE at the right one");
  else if (!cred) add("credentials", "warn", "no password or key file: commands will ask for a password, and nothing can run unattended", "set PI_GUARD_PASSWORD_FILE, or pi-guard key add --new-key-file ~/.config/pi-guard/key");
  else add("credentials", "ok", cred.kind === "keyfile" ? `key file ${cred.path}` : `password from ${cred.source}`);

  // One look at the repository for the checks below, so that an outage is waited out once.
  const own = parseRepoLocation(config.repo).kind === "restic" ? undefined : await lookAtRepository(config);
  checks.push(...(await credentialCopyCheck(config, own)));
  checks.push(...(await agentHazards(config, agent)));

  const last = await lastSnapshotCheck(config, cred, add, now, own);
  if (withPi) checks.push(...(await agentFileChecks(config, last.files)));
  checks.push(await protectionCheck(config, last.time, now));
  return checks;
}

/** What deletes or hides each agent's history (its adapter's hazards): the guarded agents', or the one asked for. */
async function agentHazards(config: Config, agent: string | undefined): Promise<DoctorCheck[]> {
  const out: DoctorCheck[] = [];
  for (const choice of config.agents) {
    if (agent === undefined ? !choice.guarded : choice.location.agent !== agent) continue;
    const adapter = findAgent(choice.location.agent);
    if (adapter) out.push(...(await adapter.hazards(choice.location, { env: process.env, repo: config.repo, keyFile: config.keyFile })));
  }
  return out;
}

/** The last snapshot's time (ms) and which of pi's agent files it holds (see agentFileChecks). */
interface LastSnapshot {
  time?: number;
  files?: { snapshot: string; names: Set<string> } | null;
}

/** The names of PI_AGENT_FILES that a snapshot's tree holds at the top of the agent root. */
async function agentFilesIn(repo: Repository, record: SnapshotRecord): Promise<Set<string>> {
  const [{ BlobReader }, { SealPool }, { readTree }] = await Promise.all([import("./repo/blob-reader.js"), import("./repo/seal-pool.js"), import("./snapshot/tree.js")]);
  const wanted = new Set(PI_AGENT_FILES.map((f) => f.name));
  const found = new Set<string>();
  await repo.loadIndex(true);
  for await (const node of readTree(new BlobReader(repo, new SealPool(0)), record.snapshot)) {
    // The tree is untrusted: only well-formed nodes of the agent root count.
    if (node && node.root === "agent" && node.type === "file" && typeof node.path === "string" && wanted.has(node.path)) found.add(node.path);
    if (found.size === wanted.size) break;
  }
  return found;
}

/** The same check through restic, for a restic: repository (docs/RESTIC.md). */
async function resticLastSnapshotCheck(config: Config, add: Add, now: number): Promise<LastSnapshot> {
  try {
    const [{ resticSession }, { listResticNodes, listResticSnapshots, nodeRoot }] = await Promise.all([import("./restic/repository.js"), import("./restic/snapshots.js")]);
    const s = await resticSession(config);
    const last = (await listResticSnapshots(s)).at(-1);
    if (!last) {
      add("last snapshot", "warn", "the restic repository has no pi-guard snapshots yet", "pi-guard snapshot");
      return { files: null };
    }
    const age = now - Date.parse(last.time);
    const when = `${last.id.slice(0, 8)} at ${last.time} (restic)`;
    add("last snapshot", age > DAY ? "warn" : "ok", age > DAY ? `${when}, more than a day ago` : when, "pi-guard snapshot now");
    // Which of pi's agent files it holds: `restic ls` of the top of its agent root only (they all
    // lie there), however many sessions it holds; a listing that fails leaves "not known".
    const wanted = new Set(PI_AGENT_FILES.map((f) => f.name));
    const names = new Set<string>();
    const agentRoot = last.roots.find((r) => r.name === "agent");
    const listed = !agentRoot || await listResticNodes(s, last.id, (node) => {
      const where = node.type === "file" ? nodeRoot(last, node.path) : undefined;
      if (where?.root === "agent" && wanted.has(where.rel)) names.add(where.rel);
    }, { dirs: [agentRoot.path] }).catch(() => false);
    return { time: Date.parse(last.time), files: listed ? { snapshot: last.id.slice(0, 8), names } : undefined };
  } catch (err) {
    add("repository", "error", (err as Error).message, "fix what is named, then run pi-guard doctor again");
    return {};
  }
}

type Add = (name: string, status: CheckStatus, message: string, fix?: string, paths?: string[]) => void;

/** A pi-guard repository's storage and its config object: undefined when there is none, an Error when it cannot be reached. */
interface RepositoryLook {
  target: Target;
  head: ObjectInfo | undefined | Error;
}

async function lookAtRepository(config: Config): Promise<RepositoryLook> {
  const target = openTarget(config);
  return { target, head: await target.head("config").catch((err: Error) => err) };
}

/** The last own snapshot: no time when there is none or the repository cannot be read. `own` is undefined for restic. */
async function lastSnapshotCheck(config: Config, cred: unknown, add: Add, now: number, own: RepositoryLook | undefined): Promise<LastSnapshot> {
  if (!own) return resticLastSnapshotCheck(config, add, now);
  const { head } = own;
  if (head instanceof Error) {
    // Unreachable storage (a missing bucket, rejected credentials, a server down) is not "no repository".
    add("repository", "error", `${config.repo}: ${head.message.split("\n")[0]}`, "fix the storage access named, then run pi-guard doctor again");
    return {};
  }
  if (!head) {
    add("repository", "error", `no repository at ${config.repo}`, "pi-guard init (or pi-guard snapshot --init)");
    return { files: null };
  }
  if (!cred || cred instanceof Error) return {};
  try {
    const repo = await openRepository(config);
    const snapshots = await repo.listSnapshots();
    const last = snapshots.filter((s) => !isImport(s.snapshot)).at(-1);
    const damage = listingDamage(snapshots.length, repo.unreadableSnapshots, config);
    if (damage) {
      // Damage, not an empty repository: starting over on top of it would bury what can be healed.
      add("last snapshot", "error", damage.message, "pi-guard check --read-data, then the repair it names");
      return {};
    }
    if (!last) {
      add("last snapshot", "warn", "the repository has no snapshots yet", "pi-guard snapshot");
      return { files: null };
    }
    const age = now - Date.parse(last.snapshot.time);
    const when = `${last.id.slice(0, 8)} at ${last.snapshot.time}`;
    add("last snapshot", age > DAY ? "warn" : "ok", age > DAY ? `${when}, more than a day ago` : when, "pi-guard snapshot now; then pi-guard service install --enable");
    const time = Date.parse(last.snapshot.time);
    // A tree that cannot be read is the business of `check`; here it only leaves "not known".
    const names = await agentFilesIn(repo, last).catch(() => undefined);
    return { time, files: names && { snapshot: last.id.slice(0, 8), names } };
  } catch (err) {
    add("repository", "error", (err as Error).message, "pi-guard check");
    return {};
  }
}

/**
 * Is a copy of any credential known to exist off this machine? Often the only one is the key file
 * on the same disk as the agent dir, and without it the S3 copy cannot be read either. Known means:
 * a recovery key that `key export` printed (credential-copies.json in the state dir) and that the
 * repository still has. Needs no password: the config id and the key objects are plaintext. A
 * repository that cannot be read is left to the checks that say so.
 */
async function credentialCopyCheck(config: Config, own: RepositoryLook | undefined): Promise<DoctorCheck[]> {
  if (!own?.head || own.head instanceof Error) return [];
  const [{ readRepoId }, { listKeys }] = await Promise.all([import("./repo/peek.js"), import("./repo/keys.js")]);
  let repoId: string;
  let keyIds: Set<string>;
  try {
    const { target } = own;
    repoId = await readRepoId(target);
    keyIds = new Set((await listKeys(target)).map((k) => k.id));
  } catch {
    return [];
  }
  const copies = (await readCredentialCopies(config.stateDir)).filter((c) => c.repoId === repoId);
  const live = copies.filter((c) => keyIds.has(c.keyId));
  const name = "credential copy";
  if (live.length) {
    const last = live.at(-1)!;
    return [{ name, status: "ok", message: `recovery key ${last.keyId.slice(0, 8)} was exported at ${last.time} (${live.length} exported key(s) still open the repository)` }];
  }
  const lost = config.mirrors.length ? `the repository and its mirrors (${config.mirrors.join(", ")}) cannot be read` : "the backups cannot be read";
  const gone = copies.length ? `the recovery key exported at ${copies.at(-1)!.time} (${copies.at(-1)!.keyId.slice(0, 8)}) was removed from the repository: ` : "";
  return [
    {
      name,
      status: "warn",
      message: `${gone}no copy of any credential of repository ${repoId.slice(0, 8)} is known to exist off this machine: lose this disk and its key file or password file, and ${lost}`,
      fix: "pi-guard key export > <a file on another device>, then keep the code in a password manager or on paper (or pi-guard key export --yes to show it here)",
    },
  ];
}
