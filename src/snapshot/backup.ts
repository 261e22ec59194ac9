/**
 * The snapshot policy, in one place for every way a snapshot is asked for: `pi-guard snapshot`
 * and the scheduled `snapshot` job (run-scheduled from cron, and the watcher's scheduler) call
 * `backup`; the restic engine (src/restic/backup.ts) applies the same rules through the helpers
 * below. Nothing here prints: the result says what happened.
 *
 * - Tags pi-guard sets itself mean something ("latest" skips some): a caller cannot borrow them.
 * - A missing agent dir is an error (a scheduled snapshot must not fail silently) unless
 *   allowEmpty, and even then only where no earlier snapshot held it: a vanished agent dir is the
 *   accident itself, not "nothing to back up", until the loss is accepted.
 * - The snapshot is guarded (engine.ts snapshotAgentDir, loss-guard.ts): one that loses most files
 *   of the last whole snapshot is tagged suspect-loss unless acceptLoss.
 * - Each mirror of the config gets the snapshot after the primary has it (repo/ship.ts).
 *
 * The restic engine loads this file for the helpers: the native snapshot code is imported only
 * where it runs.
 */
import { promises as fs } from "node:fs";
import { META_ROOT_NAME, type Config } from "../config/config.js";
import { hostName } from "../host.js";
import { RepoError } from "../repo/errors.js";
import { AGENT_CLEANUP_TAG, IMPORT_TAG, INCOMPLETE_TAG, SUSPECT_LOSS_TAG } from "../repo/format.js";
import type { Repository } from "../repo/repository.js";
import type { MirrorShipment } from "../repo/ship.js";
import { PRE_RESTORE_TAG } from "../restore/select.js";
import { ACCEPT_LOSS_COMMAND } from "./loss-guard.js";
import type { SnapshotProgress } from "./snapshotter.js";
import type { AgentSnapshotResult } from "../engine/snapshot-open.js";

export interface BackupOptions {
  tags?: string[];
  /** A missing agent dir is no error: no snapshot is taken (unless an earlier snapshot held it). */
  allowEmpty?: boolean;
  /** Create the repository first when there is none. */
  init?: boolean;
  /** The files that vanished since the last whole snapshot were deleted on purpose. */
  acceptLoss?: boolean;
  /** Import this tarball instead of reading the agent dir (an import is never "latest" nor a parent: no guard). */
  fromTar?: string;
  /** With fromTar: the snapshot time. */
  time?: string;
  /** Read every file in full, trusting nothing of the parent (`snapshot --full-read`, SnapshotOptions.readAll). */
  readAll?: boolean;
  lockWaitMs?: number;
  onProgress?: (p: SnapshotProgress) => void;
}

export interface BackupResult {
  /** The snapshot taken, with the loss verdict; null when there was nothing to back up (allowEmpty). */
  snapshot: AgentSnapshotResult | null;
  /** This run created the repository (init); keyFile when it made a key file for it. */
  created?: { keyFile?: string };
  /** The snapshot lost most files and acceptLoss made it the new whole state, untagged. */
  lossAccepted: boolean;
  /** One per mirror of the config. */
  mirrors: MirrorShipment[];
}

/** Refuse tags pi-guard sets itself; `also` names an engine's own bookkeeping tags. */
export function assertOwnTags(tags: string[] | undefined, opts: { importing?: boolean; also?: (tag: string) => boolean } = {}): void {
  const reserved = [PRE_RESTORE_TAG, INCOMPLETE_TAG, SUSPECT_LOSS_TAG, AGENT_CLEANUP_TAG, ...(opts.importing ? [] : [IMPORT_TAG])];
  const borrowed = (tags ?? []).find((t) => reserved.includes(t) || opts.also?.(t));
  if (borrowed !== undefined) throw new RepoError(`--tag ${borrowed} is reserved for the tags that pi-guard sets itself`, "usage");
}

/** Whether any source root besides pi-guard's own metadata exists. A root we may not look at exists: the snapshot names it as skipped. */
export async function agentDirPresent(config: Pick<Config, "roots">): Promise<boolean> {
  const there = (err: NodeJS.ErrnoException) => err.code !== "ENOENT" && err.code !== "ENOTDIR";
  for (const r of config.roots) {
    if (r.name !== META_ROOT_NAME && (await fs.stat(r.path).then((s) => s.isDirectory(), there))) return true;
  }
  return false;
}

/**
 * The agent dir is missing. Without allowEmpty that is an error; with it, it is fine on a machine
 * where pi has not written anything yet, but not where `held` finds an earlier snapshot of it.
 */
export async function checkMissingAgentDir(
  config: Pick<Config, "agentDir">,
  opts: Pick<BackupOptions, "allowEmpty" | "acceptLoss">,
  held: () => Promise<{ id: string; time: string } | undefined>,
): Promise<void> {
  if (!opts.allowEmpty) {
    throw new RepoError(`nothing to back up: ${config.agentDir} does not exist; set PI_CODING_AGENT_DIR or --agent-dir (or pass --allow-empty)`, "not-found");
  }
  if (opts.acceptLoss) return;
  const earlier = await held();
  if (earlier) {
    throw new RepoError(
      `nothing to back up: ${config.agentDir} does not exist, but snapshot ${earlier.id.slice(0, 8)} (${earlier.time}) holds it: \`pi-guard restore latest\` brings it back; if it is gone on purpose, \`${ACCEPT_LOSS_COMMAND} --allow-empty\` accepts that`,
      "not-found",
    );
  }
}

/** Snapshot the agent dir (or import a tarball) into the repository `open` gives, by the policy above. */
export async function backup(config: Config, open: () => Promise<Repository>, opts: BackupOptions = {}): Promise<BackupResult> {
  assertOwnTags(opts.tags, { importing: !!opts.fromTar });
  // Not ../engine.js: that also holds the restore code, which a snapshot never runs.
  const [{ initRepository, snapshotAgentDir }, { openTarget }] = await Promise.all([import("../engine/snapshot-open.js"), import("../targets/open.js")]);
  const missing = !opts.fromTar && !(await agentDirPresent(config));
  if (missing && !opts.allowEmpty) await checkMissingAgentDir(config, opts, async () => undefined);
  let created: BackupResult["created"];
  const exists = () => openTarget(config).head("config").then(Boolean);
  if (opts.init && !(await exists())) {
    const made = await initRepository(config);
    created = made.keyFile ? { keyFile: made.keyFile } : {};
  }
  if (missing) {
    // A repository made just now holds nothing; one that was there may hold the agent dir, under
    // other roots too (the sessions symlink that went with it was a root of its own).
    const held = async () => {
      if (created || !(await exists())) return undefined;
      const { findBases } = await import("./snapshotter.js");
      const { baseline } = await findBases(await open(), undefined, hostName(), config.roots);
      return baseline && baseline.snapshot.summary.files > 0 ? { id: baseline.id, time: baseline.snapshot.time } : undefined;
    };
    await checkMissingAgentDir(config, opts, held);
    return { snapshot: null, created, lossAccepted: false, mirrors: [] };
  }
  const repo = await open();
  let snapshot: AgentSnapshotResult;
  if (opts.fromTar) {
    const { importTar } = await import("./tar-import.js");
    snapshot = await importTar(repo, opts.fromTar, { tags: opts.tags, time: opts.time, lockWaitMs: opts.lockWaitMs, onProgress: opts.onProgress });
  } else {
    snapshot = await snapshotAgentDir(config, repo, { tags: opts.tags, lockWaitMs: opts.lockWaitMs, onProgress: opts.onProgress, acceptLoss: opts.acceptLoss, readAll: opts.readAll });
  }
  // A suspect-loss snapshot is shipped too: its tag travels with it, so a mirror's "latest" skips it as well.
  const mirrors = config.mirrors.length ? await (await import("../repo/ship.js")).shipToMirrors(config, repo) : [];
  return { snapshot, created, lossAccepted: !!snapshot.loss && !!opts.acceptLoss, mirrors };
}
