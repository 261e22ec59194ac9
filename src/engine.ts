/**
 * The library entry points the CLI (and other programs) use: open a repository from a Config,
 * snapshot (guarded; `backup` is the whole snapshot policy), restore safely in place, check.
 * Nothing here prints.
 */
import { makeDirs } from "./fs-safe.js";
import { promises as fs } from "node:fs";
import path from "node:path";
import type { Config } from "./config/config.js";
import { RepoError } from "./repo/errors.js";
import { Repository, type SnapshotBriefRecord, type SnapshotRecord } from "./repo/repository.js";
import { ObjectNotFound, TargetError } from "./targets/target.js";
import { openTarget } from "./targets/open.js";
import { withLock } from "./repo/lock.js";
import type { SealPool } from "./repo/seal-pool.js";
import type { ArchiveResult } from "./restore/archive.js";
import { type DiscardReport, measureDiscards } from "./restore/discards.js";
import { findJournal, journalOutcome, newJournal, type RestoreJournal, writeJournal } from "./restore/journal.js";
import type { TreeLayout } from "./restore/layout.js";
import { onlyAgent, refusedRoot, rootDestination, withRestoredRoots } from "./restore/destinations.js";
import { applyUndo, checkRoots, checkUndo, undoPreview } from "./restore/undo.js";
import type { SnapshotResult } from "./snapshot/snapshotter.js";
import { pathInScope } from "./snapshot/scan.js";
import {
  applyRestore,
  describeFsError,
  planReport,
  planRestore,
  earlyRestorePool,
  type RestoreFailure,
  type RestoreOptions,
  type RestorePlan,
  type RestoreReport,
} from "./restore/restorer.js";
import { type AdoptedRoot, sessionsRootInPlace } from "./restore/sessions-root.js";
import { type AgentRestoreCheck, selectUnits, type UnitSelection } from "./restore/unit-select.js";
import { shownName } from "./agents/find-session.js";
import { applyMerges, copyRulesOf, liveDatabases, type MergeDone, refuseLiveCompanions, type SessionMerge, sessionMerges, withoutMerged } from "./restore/session-rows.js";
import type { SqliteMergeReport } from "./restore/sqlite-merge.js";
import { datedInFuture, PRE_RESTORE_TAG, type ResolvedTime, type Selection, selectSnapshotAt, snapshotsOfHost } from "./restore/select.js";
import { hostName } from "./host.js";

export { openTarget };

// Opening, creating and snapshotting a repository live apart (engine/snapshot-open.ts) so that a
// snapshot loads none of the restore code below; they are part of this API all the same.
export { assertRepoOutsideAgentDir, initRepository, openRepository, snapshotAgentDir, type AgentSnapshotOptions, type AgentSnapshotResult, type InitResult } from "./engine/snapshot-open.js";
import { snapshotAgentDir } from "./engine/snapshot-open.js";

export { backup, type BackupOptions, type BackupResult } from "./snapshot/backup.js";

export interface SafeRestoreOptions extends Omit<RestoreOptions, "destinations" | "realRoots" | "adopted" | "signal">, TreeLayout {
  lockWaitMs?: number;
  /** Only this agent's roots (restore --agent NAME; src/agents/roots.ts snapshotRootsOf). */
  agent?: string;
  /** Restore into this folder instead of in place. */
  targetDir?: string;
  /** Choose among this host's snapshots (see HostChoice). */
  host?: string;
  /** Take no repository lock (see withRestoreLock). */
  noLock?: boolean;
}

export interface SafeRestoreResult {
  snapshot: SnapshotRecord;
  report: RestoreReport;
  /** The pre-restore snapshot of what an in-place restore replaced or deleted (none when it only creates). */
  undoSnapshot?: string;
  /** The moment a time expression was read as; absent for "latest" and ids. */
  resolved?: ResolvedTime;
  /** What the user should know: skipped snapshots, a restore without a lock. */
  warnings: string[];
  /** In place: what the restore discards of the current state (discards.ts). */
  discards?: DiscardReport;
  /** In place, when it changed something: the restore's id, which `restore --undo` takes. */
  undo?: string;
  /**
   * With --session or --path: the agents' checks on the snapshot's versions of the files restored
   * (RestoreCheck), run before anything is written. A failed one means the agent may not list
   * what was restored: the CLI exits non-zero.
   */
  checks?: AgentRestoreCheck[];
  /**
   * With --session into a live SQLite database (opencode.db, Codex's state_5.sqlite): what merging
   * the session's rows did, or would do, per database (sqlite-merge.ts); the rows it deletes are
   * newer than the snapshot, and discarded (the pre-restore snapshot keeps them).
   */
  rows?: SqliteMergeReport[];
}

/**
 * Restore `when`. The restore is planned first; in place (no targetDir), when the plan replaces or
 * deletes anything, the current state is snapshotted (tag "pre-restore"), and what the restore
 * changes is journaled (journal.ts), so that `undoRestore` puts back exactly that. A run that only
 * creates files (a new machine, an empty agent dir) has nothing to save and writes nothing into
 * the repository; a run that changes nothing takes no snapshot and no journal.
 *
 * --session and --path are resolved through the agents (unit-select.ts): the session's files, or
 * the paths', grown to their restore units and checked on the snapshot's bytes before anything is
 * written. A live SQLite database is never swapped in as a side effect (guardLiveDatabases).
 */
export async function restore(config: Config, repo: Repository, when: string, opts: SafeRestoreOptions = {}): Promise<SafeRestoreResult> {
  const warnings: string[] = [];
  return withRestoreLock(repo, "restore", opts, warnings, async (signal) => {
    const chosen = await chooseSnapshotAt(repo, when, { host: opts.host });
    // Into a target folder nothing is snapshotted first (nothing there is replaced), so the
    // decoding threads of a whole restore can boot now, on another core, while this thread loads
    // the index and plans. A session or a few paths are often small enough to need no thread.
    const whole = opts.session === undefined && !opts.paths?.length;
    const pool = opts.targetDir && whole && !opts.dryRun ? await earlyRestorePool(repo, chosen.record.snapshot.summary?.bytesTotal ?? 0) : undefined;
    try {
      return await restoreChosen(config, repo, chosen, opts, warnings, signal, pool);
    } finally {
      await pool?.close();
    }
  });
}

async function restoreChosen(
  config: Config,
  repo: Repository,
  chosen: Selection<SnapshotRecord>,
  opts: SafeRestoreOptions,
  warnings: string[],
  signal: AbortSignal | undefined,
  pool: SealPool | undefined,
): Promise<SafeRestoreResult> {
  warnings.push(...chosen.warnings);
  const snapshot = chosen.record;
  const { refused, ...where } = onlyAgent(await restoreDestinations(config, repo, snapshot, opts.targetDir, opts), { id: snapshot.id, ...snapshot.snapshot }, opts.agent);
  if (opts.targetDir) await ensureWritableDir(path.resolve(opts.targetDir));
  const selection = opts.session !== undefined || opts.paths?.length ? await selectUnits(repo, snapshot, opts) : undefined;
  if (selection?.session) sessionWritten(selection, where.destinations, refused);
  const planned = await planRestore(repo, snapshot, { ...opts, ...where, units: selection?.keys, durable: !opts.targetDir, scope: pathInScope(config.filter) });
  const merges = selection ? guardLiveDatabases(config, planned, selection) : [];
  const plan = withoutMerged(planned, merges);
  // Every merge is checked and counted before anything is written: a schema it cannot merge is refused here.
  const counted = await applyMerges(repo, snapshot, merges, { dryRun: true });
  const inPlace = !opts.targetDir;
  const done = {
    snapshot,
    resolved: chosen.resolved,
    warnings,
    discards: inPlace ? await measureDiscards(repo, plan) : undefined,
    ...(selection ? { checks: selection.checks } : {}),
    ...(merges.length ? { rows: counted.map((c) => c.report) } : {}),
  };
  if (opts.dryRun) return { ...done, report: withRefused(planReport(plan), refused) };
  const replaces = merges.length > 0 || plan.items.some((i) => i.type !== "dir" && (i.action === "replace" || i.action === "delete"));
  const undoSnapshot = inPlace && replaces ? await savePreRestore(withRestoredRoots(config, where.destinations), repo, opts, "restore") : undefined;
  const journal = inPlace && (plan.changes > 0 || merges.length > 0) ? newJournal(config, repo, plan, undoSnapshot, merges) : undefined;
  if (journal) {
    await writeJournal(config.stateDir, journal).catch((err) => {
      throw describeFsError(err, `the restore journal into ${config.stateDir} (nothing was restored)`);
    });
  }
  const report = await applyRestore(repo, { ...plan, opts: { ...plan.opts, signal } }, pool);
  const merged = await mergeInto(repo, snapshot, merges, report);
  if (journal) await writeJournal(config.stateDir, await journalOutcome(journal, plan, report, merged));
  return { ...done, ...(merges.length ? { rows: merged.map((m) => m.report) } : {}), report: withRefused(report, refused), undoSnapshot, undo: journal?.id };
}

function withRefused(report: RestoreReport, refused: RestoreFailure[]): RestoreReport {
  report.failed.unshift(...refused);
  return report;
}

/**
 * Snapshot the agent dir (tag pre-restore) before something replaces files in it; its id. A file
 * the snapshot could not read could not be put back, and a repository that takes no writes
 * cannot hold the snapshot: either way nothing may be replaced.
 */
async function savePreRestore(config: Config, repo: Repository, opts: { lockWaitMs?: number }, step: "restore" | "undo"): Promise<string> {
  const doing = step === "restore" ? "restoring over it" : "undoing over it";
  const nothing = step === "restore" ? "nothing was restored" : "nothing was undone";
  let pre: SnapshotResult;
  try {
    pre = await snapshotAgentDir(config, repo, { tags: [PRE_RESTORE_TAG], lockWaitMs: opts.lockWaitMs });
  } catch (err) {
    const refusal = writeRefusal(err);
    if (!refusal) throw err;
    throw new RepoError(`cannot save what is there before ${doing}: the repository takes no writes (${refusal}); ${nothing} (restore into an empty folder with --target instead)`, "io");
  }
  const unsaved = pre.snapshot.skipped ?? [];
  if (unsaved.length) {
    throw new RepoError(`cannot save ${unsaved[0].path || unsaved[0].root} (${unsaved[0].error})${unsaved.length > 1 ? ` and ${unsaved.length - 1} more` : ""} before ${doing}; ${nothing}`, "io");
  }
  return pre.id;
}

/** Why a write into the repository was refused for good, or undefined when `err` is not such a refusal. */
function writeRefusal(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === "EROFS") return "read-only file system";
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (err instanceof TargetError && err.denied) return "access denied to these credentials";
  return undefined;
}

/**
 * Run a restore under a shared lock, so that nothing that deletes (forget, prune) runs between
 * choosing the snapshot and the last byte written; a pre-restore snapshot's append lock goes
 * beside it. A repository that takes no writes (read-only credentials or mount) cannot hold a
 * lock: the restore goes on without one, with a warning, as with `noLock`. That costs only
 * availability: every blob is checked against its id, so a pack pruned meanwhile makes the
 * restore fail loudly on the files it held, and never hands back wrong bytes.
 */
async function withRestoreLock<T>(
  repo: Repository,
  command: string,
  opts: { lockWaitMs?: number; noLock?: boolean },
  warnings: string[],
  fn: (signal?: AbortSignal) => Promise<T>,
): Promise<T> {
  if (opts.noLock) return fn(undefined);
  let started = false;
  try {
    return await withLock(repo, { exclusive: false, command, waitMs: opts.lockWaitMs ?? 60_000 }, (signal) => {
      started = true;
      return fn(signal);
    });
  } catch (err) {
    const refusal = started ? undefined : writeRefusal(err);
    if (!refusal) throw err;
    warnings.push(`the repository takes no writes (${refusal}): reading it without a lock; a prune running meanwhile would make this ${command} fail, never return wrong bytes`);
    return fn(undefined);
  }
}

export interface UndoOptions {
  /** Also undo files that changed since the restore, after snapshotting the current state. */
  force?: boolean;
  dryRun?: boolean;
  lockWaitMs?: number;
  noLock?: boolean;
}

export interface UndoResult {
  journal: RestoreJournal;
  report: RestoreReport;
  /** With force and changed files: the snapshot of the current state taken first. */
  undoSnapshot?: string;
  warnings: string[];
}

/**
 * Undo one in-place restore (`which`: its id, its pre-restore snapshot's id, or "latest"): put
 * back what it replaced or deleted, delete what it created, and touch nothing else. Files that
 * changed since the restore are refused, naming them, unless `force`; then the current state is
 * snapshotted first. What could not be undone stays in the journal for another try.
 */
export async function undoRestore(config: Config, repo: Repository, which: string, opts: UndoOptions = {}): Promise<UndoResult> {
  const journal = await findJournal(config.stateDir, which);
  if (journal.undone) throw new RepoError(`restore ${journal.id} was already undone at ${journal.undone.time}`, "not-found");
  if (journal.repoId !== repo.config.id) throw new RepoError(`restore ${journal.id} read the repository ${journal.repo}: undo it with --repo ${journal.repo}`, "usage");
  // Where each root goes now, by the restore's own rules: an unguarded agent's folder it wrote is still that agent's.
  const now = Object.entries(journal.roots).flatMap(([name, dir]) => {
    const to = rootDestination(config, { name, path: dir }, undefined, {});
    return to && "dir" in to ? [[name, to.dir] as const] : [];
  });
  checkRoots(journal, Object.fromEntries(now));
  const warnings: string[] = [];
  return withRestoreLock(repo, "restore --undo", opts, warnings, async (signal) => {
    const { ready, changed } = await checkUndo(journal);
    if (changed.length && !opts.force) {
      const shown = changed.slice(0, 3).map((c) => `${c.change.path} (${c.why})`).join(", ");
      throw new RepoError(
        `${changed.length} file(s) changed since restore ${journal.id}: ${shown}${changed.length > 3 ? ", ..." : ""}; nothing was undone (--force undoes them too, after a snapshot of what is there now)`,
        "input",
      );
    }
    const todo = [...ready, ...changed.map((c) => c.change)];
    if (opts.dryRun) return { journal, report: undoPreview(journal, todo), warnings };
    const undoSnapshot = changed.length ? await savePreRestore(withRestoredRoots(config, Object.fromEntries(now)), repo, opts, "undo") : undefined;
    const report = await applyUndo(repo, journal, todo, signal);
    const failed = new Set(report.failed.map((f) => `${f.root}\0${f.path}`));
    journal.changes = journal.changes.filter((c) => failed.has(`${c.root}\0${c.path}`));
    if (!journal.changes.length) journal.undone = { time: new Date().toISOString(), snapshot: undoSnapshot ?? null };
    await writeJournal(config.stateDir, journal);
    return { journal, report, undoSnapshot, warnings };
  });
}

/**
 * `archive`: write `when` as a tarball (archive.ts), under the same read lock a restore takes.
 */
export async function archiveSnapshot(
  repo: Repository,
  when: string,
  output: string,
  opts: { paths?: string[]; host?: string; lockWaitMs?: number; noLock?: boolean } & TreeLayout = {},
): Promise<Selection<SnapshotRecord> & { result: ArchiveResult }> {
  // tar is loaded only for archives: most commands that open a repository never write one.
  const { writeArchive } = await import("./restore/archive.js");
  const warnings: string[] = [];
  return withRestoreLock(repo, "archive", opts, warnings, async () => {
    const chosen = await chooseSnapshotAt(repo, when, { host: opts.host });
    warnings.push(...chosen.warnings);
    return { ...chosen, warnings, result: await writeArchive(repo, chosen.record, output, opts) };
  });
}

/**
 * Where each root of a snapshot goes (destinations.ts rootDestination), and in place root
 * "sessions" where the accident took what named it and this restore puts that back
 * (sessions-root.ts).
 */
async function restoreDestinations(
  config: Config,
  repo: Repository,
  snapshot: SnapshotRecord,
  targetDir: string | undefined,
  opts: TreeLayout & Pick<RestoreOptions, "paths" | "session">,
): Promise<Pick<RestoreOptions, "destinations" | "realRoots" | "adopted"> & { refused: RestoreFailure[] }> {
  const destinations: Record<string, string> = {};
  const realRoots: Record<string, string> = {};
  const adopted: Record<string, AdoptedRoot> = {};
  const refused: RestoreFailure[] = [];
  for (const root of snapshot.snapshot.roots) {
    const sessions = !targetDir && root.name === "sessions" ? await sessionsRootInPlace(repo, snapshot, config, { filtered: !!(opts.paths?.length || opts.session) }) : undefined;
    if (sessions?.place) {
      destinations[root.name] = sessions.place.destination;
      if (sessions.place.realDir) realRoots[root.name] = sessions.place.realDir;
      if (sessions.place.adopted) adopted[root.name] = sessions.place.adopted;
      continue;
    }
    const to = rootDestination(config, root, targetDir, opts, sessions?.why);
    if (to && "dir" in to) destinations[root.name] = to.dir;
    else if (to) refused.push(refusedRoot(String(root.name), to.refused));
  }
  return { destinations, realRoots, adopted, refused };
}

/** A session in a root this restore does not write (refused, say) is an error naming why. */
function sessionWritten(selection: UnitSelection, destinations: Record<string, string>, refused: RestoreFailure[]): void {
  const { meta } = selection.session!;
  const outside = selection.units.flatMap((u) => u.unit.files).find((f) => !(f.root in destinations));
  if (!outside) return;
  const why = refused.find((r) => r.root === outside.root)?.error ?? `root ${JSON.stringify(outside.root)} is not written by this restore`;
  throw new RepoError(`session ${shownName(meta.id)} is not restored: ${shownName(why)}`, "not-found");
}

/**
 * A live SQLite database must not be swapped in as a side effect: a session's rows are merged into
 * it instead (the merges returned, session-rows.ts), and one a --path's units brought without the
 * paths naming it is refused.
 */
function guardLiveDatabases(config: Config, plan: RestorePlan, selection: UnitSelection): SessionMerge[] {
  const { session } = selection;
  const unitFiles = selection.units.flatMap((u) => u.unit.files);
  if (session) return sessionMerges(session, liveDatabases(plan, unitFiles, copyRulesOf(config, session.adapter)));
  const named = new Set(selection.selected.map((f) => `${f.root}\0${f.path}`));
  for (const { agent, unit } of selection.units) {
    if (!agent) continue;
    const companions = unit.files.filter((f) => !named.has(`${f.root}\0${f.path}`));
    refuseLiveCompanions(liveDatabases(plan, companions, copyRulesOf(config, agent)), unit.why);
  }
  return [];
}

/**
 * The merges, after the files were restored: one that fails now (the live db stayed locked past
 * the busy timeout: checked and counted a moment ago) is a failure of the restore, named in the
 * report, and changed nothing in its database.
 */
async function mergeInto(repo: Repository, snapshot: SnapshotRecord, merges: readonly SessionMerge[], report: RestoreReport): Promise<MergeDone[]> {
  const done: MergeDone[] = [];
  for (const merge of merges) {
    try {
      done.push(...(await applyMerges(repo, snapshot, [merge], {})));
    } catch (err) {
      if (!(err instanceof RepoError)) throw err;
      report.failed.push({ root: merge.db.ref.root, path: merge.db.ref.path, error: err.message, kind: err.kind === "corrupt" ? "damaged" : "io" });
    }
  }
  return done;
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
export async function chooseSnapshotAt(repo: Repository, when: string, hosts?: HostChoice): Promise<Selection<SnapshotRecord>> {
  const ofHost = <R extends SnapshotBriefRecord | SnapshotRecord>(all: R[]): R[] => (hosts ? snapshotsOfHost(all, when, hosts.host, hostName()) : all);
  const briefs = ofHost(await repo.listSnapshotBriefs());
  // A brief dated in the future makes "latest" skip or refuse it; it could be a cached lie, so
  // such briefs (rare) are checked against their snapshots, and if one lies the choice is made
  // from the snapshots themselves.
  if (await briefsTrue(repo, briefs.filter((b) => datedInFuture(b, new Date())))) {
    const { record: brief, resolved, warnings } = selectSnapshotAt(briefs, when, new Date(), repo.unreadableSnapshots);
    try {
      const snapshot = await repo.loadSnapshotFromTarget(brief.id);
      if (snapshot.time === brief.snapshot.time) return { record: { id: brief.id, snapshot }, resolved, warnings };
    } catch (err) {
      // Forgotten since it was listed: choose again from a full listing, which no longer has it.
      if (!(err instanceof ObjectNotFound)) throw err;
    }
  }
  const snapshots = ofHost(await repo.listSnapshots());
  return selectSnapshotAt(snapshots, when, new Date(), repo.unreadableSnapshots);
}

/** Whether each brief's time is its snapshot's (one read each). */
async function briefsTrue(repo: Repository, briefs: SnapshotBriefRecord[]): Promise<boolean> {
  for (const b of briefs) {
    const snapshot = await repo.loadSnapshotFromTarget(b.id).catch((err) => {
      if (err instanceof ObjectNotFound) return undefined;
      throw err;
    });
    if (snapshot?.time !== b.snapshot.time) return false;
  }
  return true;
}

/**
 * Choose among the snapshots of one host (snapshotsOfHost): `host` names it; undefined means this
 * host's when several hosts share the repository.
 */
export interface HostChoice {
  host?: string;
}
