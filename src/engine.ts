/**
 * The library entry points the CLI (and other programs) use: open a repository from a Config,
 * snapshot, restore safely in place, check. Nothing here prints.
 */
import { makeDirs } from "./fs-safe.js";
import { promises as fs } from "node:fs";
import path from "node:path";
import type { Config } from "./config/config.js";
import { isInside } from "./config/config.js";
import { createKeyFile, noCredentialsError, resolveCredentials } from "./config/credentials.js";
import { RepoError } from "./repo/errors.js";
import type { Credentials } from "./repo/keys.js";
import { Repository, type SnapshotRecord } from "./repo/repository.js";
import { openTarget } from "./targets/open.js";
import { withLock } from "./repo/lock.js";
import { createSnapshot, type SnapshotOptions, type SnapshotResult } from "./snapshot/snapshotter.js";
import { pathInScope } from "./snapshot/scan.js";
import { describeFsError, restoreSnapshot, type RestoreOptions, type RestoreReport } from "./restore/restorer.js";
import { PRE_RESTORE_TAG, selectSnapshot } from "./restore/select.js";

export { openTarget };

/** The repository must not live inside the agent dir: the same npm reify would delete it too. */
export function assertRepoOutsideAgentDir(config: Config): void {
  if (!config.repo.startsWith("s3://") && isInside(config.repo, config.agentDir)) {
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
  if (!config.repo.startsWith("s3://")) {
    await makeDirs(config.repo, 0o700).catch((err) => {
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
  const repo = await Repository.init(target, cred);
  return { repo, keyFile, credential: cred.kind };
}

export async function openRepository(config: Config, promptPassword?: () => Promise<string>): Promise<Repository> {
  const target = openTarget(config);
  if (!(await target.head("config"))) {
    throw new RepoError(`no repository at ${config.repo} (run \`pi-guard init\` first, or set PI_GUARD_REPO)`, "not-found");
  }
  let cred = await resolveCredentials(config);
  if (!cred && promptPassword && !config.keyFileSource) cred = { kind: "password", password: await promptPassword(), source: "prompt" };
  if (!cred) throw noCredentialsError(config);
  return Repository.open(target, cred);
}

export async function snapshotAgentDir(
  config: Config,
  repo: Repository,
  opts: Partial<SnapshotOptions> = {},
): Promise<SnapshotResult> {
  assertRepoOutsideAgentDir(config);
  return createSnapshot(repo, { roots: config.roots, filter: config.filter, ...opts });
}

export interface SafeRestoreOptions extends Omit<RestoreOptions, "destinations" | "signal"> {
  lockWaitMs?: number;
  /** Restore into this folder instead of in place. */
  targetDir?: string;
}

export interface SafeRestoreResult {
  snapshot: SnapshotRecord;
  report: RestoreReport;
  /** In-place restores first snapshot what they may replace; restoring this undoes the restore. */
  undoSnapshot?: string;
}

/**
 * Restore `when`. In place (no targetDir), the current state is snapshotted first (tag
 * "pre-restore"), so the restore itself can be undone with `pi-guard restore <undoSnapshot>`.
 */
export async function restore(config: Config, repo: Repository, when: string, opts: SafeRestoreOptions = {}): Promise<SafeRestoreResult> {
  const snapshot = await chooseSnapshot(repo, when);
  const destinations: Record<string, string> = {};
  for (const root of snapshot.snapshot.roots) {
    if (opts.targetDir) {
      destinations[root.name] = root.name === "agent" ? path.resolve(opts.targetDir) : path.resolve(opts.targetDir, `.${root.name}`);
    } else {
      const current = config.roots.find((r) => r.name === root.name);
      destinations[root.name] = current?.path ?? root.path;
    }
  }
  if (opts.targetDir) await ensureWritableDir(path.resolve(opts.targetDir));
  let undoSnapshot: string | undefined;
  if (!opts.targetDir && !opts.dryRun) {
    const pre = await snapshotAgentDir(config, repo, { tags: [PRE_RESTORE_TAG], lockWaitMs: opts.lockWaitMs });
    undoSnapshot = pre.id;
  }
  // Shared: another restore or a reader may run beside it, but nothing that deletes. Taken after
  // the pre-restore snapshot, whose exclusive lock would otherwise wait for this one.
  const report = await withLock(repo, { exclusive: false, command: "restore", waitMs: opts.lockWaitMs ?? 60_000 }, (signal) =>
    restoreSnapshot(repo, snapshot, { ...opts, destinations, durable: !opts.targetDir, scope: pathInScope(config.filter), signal }),
  );
  return { snapshot, report, undoSnapshot };
}

async function ensureWritableDir(dir: string): Promise<void> {
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
  const snapshots = await repo.listSnapshots();
  return selectSnapshot(snapshots, when, new Date(), repo.unreadableSnapshots);
}
