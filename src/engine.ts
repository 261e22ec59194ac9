/**
 * The library entry points the CLI (and other programs) use: open a repository from a Config,
 * snapshot (guarded; `backup` is the whole snapshot policy), restore safely in place, check.
 * Nothing here prints.
 */
import { makeDirs } from "./fs-safe.js";
import { promises as fs } from "node:fs";
import path from "node:path";
import type { Config } from "./config/config.js";
import { isInside } from "./config/config.js";
import { createKeyFile, noCredentialsError, resolveCredentials } from "./config/credentials.js";
import { RepoError } from "./repo/errors.js";
import type { Credentials } from "./repo/keys.js";
import { Repository, type SnapshotBriefRecord, type SnapshotRecord } from "./repo/repository.js";
import { ObjectNotFound } from "./targets/target.js";
import { openTarget, type OpenTargetOptions } from "./targets/open.js";
import { isLocalLocation } from "./targets/location.js";
import { withLock } from "./repo/lock.js";
import { createSnapshot, type SnapshotOptions, type SnapshotResult } from "./snapshot/snapshotter.js";
import { judgeLoss, sessionFileTest, type LossVerdict } from "./snapshot/loss-guard.js";
import { SUSPECT_LOSS_TAG } from "./repo/format.js";
import { pathInScope } from "./snapshot/scan.js";
import {
  applyRestore,
  describeFsError,
  planReport,
  planRestore,
  type RestoreFailure,
  type RestoreOptions,
  type RestoreReport,
  sessionMatcher,
} from "./restore/restorer.js";
import { isSafeRootName } from "./restore/safe-path.js";
import { SnapshotReader } from "./restore/snapshot-reader.js";
import { parseSessionFileName } from "./pi/writer.js";
import { PRE_RESTORE_TAG, type ResolvedTime, selectSnapshotAt, snapshotsOfHost } from "./restore/select.js";
import { hostName } from "./host.js";

export { openTarget };

/** The repository must not live inside the agent dir: the same npm reify would delete it too. */
export function assertRepoOutsideAgentDir(config: Config): void {
  if (isLocalLocation(config.repo) && isInside(config.repo, config.agentDir)) {
    throw new RepoError(
      `refusing to use ${config.repo}: it is inside the agent dir ${config.agentDir}, where the same accident that deletes sessions would delete the backups`,
      "usage",
    );
  }
}

export interface InitResult {
  repo: Repository;
  keyFile?: string;
  credential: Credentials["kind"];
}

export async function initRepository(config: Config, opts: { password?: string; useKeyFile?: boolean } = {}): Promise<InitResult> {
  assertRepoOutsideAgentDir(config);
  const target = openTarget(config);
  if (await target.head("config")) throw new RepoError(`a repository already exists at ${config.repo}`, "exists");
  if (target.localPath) {
    await makeDirs(target.localPath, 0o700).catch((err) => {
      throw new RepoError(`cannot create ${config.repo}: ${(err as NodeJS.ErrnoException).code}`, "io");
    });
  }
  let cred: Credentials | undefined = opts.password !== undefined ? { kind: "password", password: opts.password, source: "prompt" } : undefined;
  if (!cred && !opts.useKeyFile) cred = await resolveCredentials(config);
  let keyFile: string | undefined;
  if (!cred) {
    cred = await createKeyFile(config.keyFile);
    keyFile = config.keyFile;
  }
  if (cred.kind === "password" && cred.password.length === 0) throw new RepoError("the password is empty", "usage");
  const repo = useLocalStaging(config, await Repository.init(target, cred));
  return { repo, keyFile, credential: cred.kind };
}

export async function openRepository(config: Config, promptPassword?: () => Promise<string>, opts: OpenTargetOptions = {}): Promise<Repository> {
  const target = openTarget(config, process.env, opts);
  if (!(await target.head("config"))) {
    throw new RepoError(`no repository at ${config.repo} (run \`pi-guard init\` first, or set PI_GUARD_REPO)`, "not-found");
  }
  let cred = await resolveCredentials(config);
  if (!cred && promptPassword && !config.keyFileSource) cred = { kind: "password", password: await promptPassword(), source: "prompt" };
  if (!cred) throw noCredentialsError(config);
  return useLocalStaging(config, await Repository.open(target, cred, { dataDir: config.dataDir }));
}

/**
 * Packs for a remote target are built in the data dir, one folder per repository, so that the
 * staging cleanup of one repository's writer never touches another's files.
 */
function useLocalStaging(config: Config, repo: Repository): Repository {
  if (!repo.target.localPath) repo.stagingDir = path.join(config.dataDir, "staging", repo.config.id);
  return repo;
}

export interface AgentSnapshotOptions extends Partial<SnapshotOptions> {
  /** The files that vanished were deleted on purpose: a loss is not tagged, the snapshot becomes the last whole state. */
  acceptLoss?: boolean;
}

export interface AgentSnapshotResult extends SnapshotResult {
  /** The snapshot lost most files of the last whole one: tagged suspect-loss, unless acceptLoss. */
  loss?: LossVerdict;
}

/**
 * Snapshot the agent dir, guarded (snapshot/loss-guard.ts): a snapshot that loses most files of
 * the last whole one is tagged suspect-loss, so it is never "latest" nor a parent. This holds for
 * every caller, an in-place restore's undo snapshot too: one that records the damaged state must
 * not become the baseline a later snapshot is judged against. The policy around it (reserved
 * tags, a missing agent dir, mirrors) is `backup` (snapshot/backup.ts).
 */
export async function snapshotAgentDir(config: Config, repo: Repository, opts: AgentSnapshotOptions = {}): Promise<AgentSnapshotResult> {
  assertRepoOutsideAgentDir(config);
  const { acceptLoss, ...snapshotOpts } = opts;
  const isSession = sessionFileTest(config);
  let loss: LossVerdict | undefined;
  const result = await createSnapshot(repo, {
    roots: config.roots,
    filter: config.filter,
    ...snapshotOpts,
    tagsAtCommit: (scan) => {
      loss = judgeLoss(scan.parentFiles(), scan.files, config.watch.suspectLoss, isSession);
      const tags = snapshotOpts.tagsAtCommit?.(scan) ?? [];
      const tagged = [...(snapshotOpts.tags ?? []), ...tags].includes(SUSPECT_LOSS_TAG);
      return loss && !acceptLoss && !tagged ? [...tags, SUSPECT_LOSS_TAG] : tags;
    },
  });
  return { ...result, loss };
}

export { backup, type BackupOptions, type BackupResult } from "./snapshot/backup.js";

export interface SafeRestoreOptions extends Omit<RestoreOptions, "destinations" | "signal"> {
  lockWaitMs?: number;
  /** Restore into this folder instead of in place. */
  targetDir?: string;
  /** Choose among this host's snapshots (see HostChoice). */
  host?: string;
}

export interface SafeRestoreResult {
  snapshot: SnapshotRecord;
  report: RestoreReport;
  /** In-place restores first snapshot what they may replace; restoring this undoes the restore. */
  undoSnapshot?: string;
  /** The moment a time expression was read as; absent for "latest" and ids. */
  resolved?: ResolvedTime;
}

/**
 * Restore `when`. The restore is planned first; in place (no targetDir), when the plan changes
 * anything, the current state is snapshotted (tag "pre-restore"), so the restore itself can be
 * undone with `pi-guard restore <undoSnapshot>`. A run that changes nothing takes no snapshot.
 */
export async function restore(config: Config, repo: Repository, when: string, opts: SafeRestoreOptions = {}): Promise<SafeRestoreResult> {
  // One shared lock from choosing the snapshot to the last byte written, so nothing that deletes
  // (forget, prune) runs in between; the pre-restore snapshot's append lock goes beside it.
  return withLock(repo, sharedRestoreLock(opts), async (signal) => {
    const { record: snapshot, resolved } = await chooseSnapshotAt(repo, when, { host: opts.host });
    const { destinations, refused } = restoreDestinations(config, snapshot, opts.targetDir);
    if (opts.targetDir) await ensureWritableDir(path.resolve(opts.targetDir));
    const plan = await planRestore(repo, snapshot, { ...opts, destinations, durable: !opts.targetDir, scope: pathInScope(config.filter) });
    if (opts.session) await checkSessionFound(repo, snapshot, opts.session, plan.sessionIds);
    let undoSnapshot: string | undefined;
    if (!opts.targetDir && !opts.dryRun && plan.changes > 0) {
      const pre = await snapshotAgentDir(config, repo, { tags: [PRE_RESTORE_TAG], lockWaitMs: opts.lockWaitMs });
      undoSnapshot = pre.id;
      // A file the undo snapshot could not read could not be put back: do not restore over it.
      const unsaved = pre.snapshot.skipped ?? [];
      if (unsaved.length) {
        throw new RepoError(`cannot save ${unsaved[0].path || unsaved[0].root} (${unsaved[0].error})${unsaved.length > 1 ? ` and ${unsaved.length - 1} more` : ""} before restoring over it; nothing was restored`, "io");
      }
    }
    const report = opts.dryRun ? planReport(plan) : await applyRestore(repo, { ...plan, opts: { ...plan.opts, signal } });
    report.failed.unshift(...refused);
    return { snapshot, report, undoSnapshot, resolved };
  });
}

const sharedRestoreLock = (opts: SafeRestoreOptions) => ({ exclusive: false, command: "restore", waitMs: opts.lockWaitMs ?? 60_000 });

/**
 * Where each root of a snapshot goes. The snapshot is untrusted: into a target, a root lands in
 * a folder named after it only when the name is one plain component; in place, only roots the
 * current configuration has are restored (a snapshot's own root paths could point anywhere).
 */
function restoreDestinations(
  config: Config,
  snapshot: SnapshotRecord,
  targetDir: string | undefined,
): { destinations: Record<string, string>; refused: RestoreFailure[] } {
  const destinations: Record<string, string> = {};
  const refused: RestoreFailure[] = [];
  for (const root of snapshot.snapshot.roots) {
    const refuse = (error: string) => refused.push({ path: `${String(root.name)}/`, root: String(root.name), error, kind: "refused" });
    if (targetDir) {
      if (root.name === "agent") destinations[root.name] = path.resolve(targetDir);
      else if (isSafeRootName(root.name)) destinations[root.name] = path.resolve(targetDir, `.${root.name}`);
      else refuse("unsafe root name: not restored");
      continue;
    }
    const current = config.roots.find((r) => r.name === root.name);
    if (current) destinations[root.name] = current.path;
    else refuse(`root ${JSON.stringify(root.name)} (${String(root.path)}) is not configured now: restore it with --target`);
  }
  return { destinations, refused };
}

/**
 * `--session` must restore something or say why not: an unknown id, an ambiguous prefix, and a
 * session the chosen snapshot lacks (naming the last snapshot that holds it) are errors.
 */
async function checkSessionFound(repo: Repository, chosen: SnapshotRecord, session: string, ids: Set<string>): Promise<void> {
  if (ids.size > 1) throw ambiguousSession(session, [...ids]);
  if (ids.size === 1) return;
  const matches = sessionMatcher(session);
  const snapshots = (await repo.listSnapshots()).filter((s) => s.id !== chosen.id).reverse();
  const reader = await SnapshotReader.open(repo);
  try {
    for (const s of snapshots) {
      const found = new Set<string>();
      for await (const node of reader.files(s.snapshot.tree)) {
        if (node.type === "file" && matches(node.path)) found.add(parseSessionFileName(node.path)!.id);
      }
      if (found.size > 1) throw ambiguousSession(session, [...found]);
      if (found.size === 1) {
        const id = [...found][0];
        throw new RepoError(
          `snapshot ${chosen.id.slice(0, 8)} (${chosen.snapshot.time}) does not hold session ${id}; the last snapshot that does is ${s.id.slice(0, 8)} (${s.snapshot.time}): pi-guard restore ${s.id.slice(0, 8)} --session ${id}`,
          "not-found",
        );
      }
    }
  } finally {
    await reader.close();
  }
  throw new RepoError(`no snapshot holds a session whose id starts with "${session}"`, "not-found");
}

function ambiguousSession(session: string, ids: string[]): RepoError {
  const shown = ids.sort().slice(0, 4);
  return new RepoError(
    `session id "${session}" is ambiguous: ${ids.length} sessions match (${shown.join(", ")}${ids.length > 4 ? ", ..." : ""}); type more characters`,
    "usage",
  );
}

async function ensureWritableDir(dir: string): Promise<void> {
  const st = await fs.stat(dir).catch(() => undefined);
  if (st && !st.isDirectory()) throw new RepoError(`cannot restore to ${dir}: it is a file, not a folder`, "io");
  try {
    await makeDirs(dir);
    await fs.access(dir, fs.constants?.W_OK ?? 2);
    const probe = path.join(dir, `.pi-guard-probe-${process.pid}`);
    await fs.writeFile(probe, "");
    await fs.unlink(probe);
  } catch (err) {
    throw describeFsError(err, `to target ${dir}`);
  }
}

/** `<when>` → snapshot, naming a damaged snapshot as damaged rather than as missing. */
export async function chooseSnapshot(repo: Repository, when: string): Promise<SnapshotRecord> {
  return (await chooseSnapshotAt(repo, when)).record;
}

/**
 * chooseSnapshot, also saying which moment a time expression was read as. It chooses among the
 * snapshots' briefs (time, host, tags) and reads only the chosen one in full, from the repository.
 */
export async function chooseSnapshotAt(repo: Repository, when: string, hosts?: HostChoice): Promise<{ record: SnapshotRecord; resolved?: ResolvedTime }> {
  const ofHost = <R extends SnapshotBriefRecord | SnapshotRecord>(all: R[]): R[] => (hosts ? snapshotsOfHost(all, when, hosts.host, hostName()) : all);
  const briefs = ofHost(await repo.listSnapshotBriefs());
  const { record: brief, resolved } = selectSnapshotAt(briefs, when, new Date(), repo.unreadableSnapshots);
  try {
    const snapshot = await repo.loadSnapshotFromTarget(brief.id);
    if (snapshot.time === brief.snapshot.time) return { record: { id: brief.id, snapshot }, resolved };
  } catch (err) {
    // Forgotten since it was listed: choose again from a full listing, which no longer has it.
    if (!(err instanceof ObjectNotFound)) throw err;
  }
  const snapshots = ofHost(await repo.listSnapshots());
  return selectSnapshotAt(snapshots, when, new Date(), repo.unreadableSnapshots);
}

/**
 * Choose among the snapshots of one host (snapshotsOfHost): `host` names it; undefined means this
 * host's when several hosts share the repository.
 */
export interface HostChoice {
  host?: string;
}
