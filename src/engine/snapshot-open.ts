/**
 * Creating, opening and snapshotting a native repository: what `pi-guard snapshot` and `init`
 * need of the engine, without the restore code that src/engine.ts (which re-exports these) holds.
 */
import path from "node:path";
import { makeDirs } from "../fs-safe.js";
import type { Config } from "../config/config.js";
import { isInside } from "../config/config.js";
import { createKeyFile, noCredentialsError, resolveCredentials } from "../config/credentials.js";
import { RepoError } from "../repo/errors.js";
import type { Credentials } from "../repo/keys.js";
import { Repository } from "../repo/repository.js";
import { openTarget, type OpenTargetOptions } from "../targets/open.js";
import { isLocalLocation } from "../targets/location.js";
import { createSnapshot, type SnapshotOptions, type SnapshotResult } from "../snapshot/snapshotter.js";
import { judgeSnapshot, type GuardVerdict, type LossVerdict } from "../snapshot/loss-guard.js";
import { guardedCopyKind, guardedKeyTable } from "../snapshot/copy-kind.js";
import { AGENT_CLEANUP_TAG, SUSPECT_LOSS_TAG, type CleanupRecord } from "../repo/format.js";

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
  const missing = () => new RepoError(`no repository at ${config.repo} (run \`pi-guard init\` first, or set PI_GUARD_REPO)`, "not-found");
  // With credentials at hand, reading the config is what tells whether a repository is there: one
  // request less for every command (S3 bills per request). Without them, or with credentials that
  // cannot be read, the user learns first whether there is a repository at all, before any prompt.
  const given = await resolveCredentials(config).then(
    (cred) => ({ cred, error: undefined }),
    (error: unknown) => ({ cred: undefined, error }),
  );
  if (!given.cred && !(await target.head("config"))) throw missing();
  if (given.error) throw given.error;
  let cred = given.cred;
  if (!cred && promptPassword && !config.keyFileSource) cred = { kind: "password", password: await promptPassword(), source: "prompt" };
  if (!cred) throw noCredentialsError(config);
  try {
    return useLocalStaging(config, await Repository.open(target, cred, { dataDir: config.dataDir }));
  } catch (err) {
    // Repository.open says not-found only of a missing config; head() tells a missing bucket (or
    // other storage trouble, which it throws) from a missing repository, as before the open.
    if (err instanceof RepoError && err.kind === "not-found" && !(await target.head("config"))) throw missing();
    throw err;
  }
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
  /** An agent removed its old files itself since the last whole snapshot: tagged agent-cleanup (loss-guard.ts judgeCleanup). */
  cleanup?: CleanupRecord;
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
  let verdict: GuardVerdict = {};
  const result = await createSnapshot(repo, {
    roots: config.roots,
    rootAgents: config.rootAgents,
    filter: config.filter,
    fullReadIntervalMs: config.snapshot.fullReadIntervalMs,
    // Each guarded agent's adapter says how its files are copied: a SQLite db through its consistent copy.
    copyKind: guardedCopyKind(config),
    keyTable: guardedKeyTable(config),
    ...snapshotOpts,
    tagsAtCommit: (scan) => {
      verdict = judgeSnapshot(scan.parentFiles(), scan.files, config, scan.baseline?.id, { newFiles: scan.newFiles() });
      const tags = snapshotOpts.tagsAtCommit?.(scan) ?? [];
      const given = [...(snapshotOpts.tags ?? []), ...tags];
      const loss = verdict.loss && !acceptLoss && !given.includes(SUSPECT_LOSS_TAG) ? [SUSPECT_LOSS_TAG] : [];
      const cleanup = verdict.cleanup && !given.includes(AGENT_CLEANUP_TAG) ? [AGENT_CLEANUP_TAG] : [];
      return [...tags, ...loss, ...cleanup];
    },
    cleanupAtCommit: () => verdict.cleanup,
  });
  return { ...result, loss: verdict.loss, ...(verdict.cleanup ? { cleanup: verdict.cleanup } : {}) };
}
