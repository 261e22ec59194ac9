import { BlobReader } from "./blob-reader.js";
import { RepoError } from "./errors.js";
import { indexKey, packKey, type PackEntry } from "./format.js";
import { acquireLock, type Lock } from "./lock.js";
import { planPrune, type PackPlan, type PrunePlan } from "./prune-plan.js";
import { removeWriterTempFiles } from "./repair-index.js";
import { RepackWriter } from "./repack-writer.js";
import type { Repository } from "./repository.js";
import { SealPool } from "./seal-pool.js";

/**
 * `prune`: remove the data no snapshot uses. Under the exclusive lock, in this order, so that a
 * kill -9 at any moment leaves every kept snapshot readable (docs/FORMAT.md §12):
 *   1. write new packs with the used blobs of the packs being repacked (nothing names them yet);
 *   2. write ONE index file for every pack that stays plus the new ones, superseding every
 *      index file there was;
 *   3. delete the old index files (readers already ignore them);
 *   4. delete the packs no index names any more (unused, repacked, left over).
 * The next prune finishes whatever an interrupted one left: leftover packs are unindexed, leftover
 * index files are superseded.
 */

export type PrunePhase = "planned" | "packs-written" | "index-written" | "indexes-deleted" | "packs-deleting";

export interface PruneProgress {
  phase: "reading" | "repacking" | "deleting";
  done: number;
  total: number;
}

export interface PruneOptions {
  dryRun?: boolean;
  /** Share (0..1) of the kept packs' bytes that may stay unused; partly used packs beyond it are repacked. */
  maxUnusedFraction?: number;
  /**
   * Go on past blobs that are missing (they stay missing; reported) and packs whose used blobs are
   * damaged (kept whole, never repacked or deleted). Without it prune refuses and changes nothing.
   */
  allowDamaged?: boolean;
  lockWaitMs?: number;
  onProgress?: (p: PruneProgress) => void;
}

export interface PruneReport {
  dryRun: boolean;
  /** True when there was nothing to delete or repack (leftover temp or index files aside). */
  nothingToDo: boolean;
  snapshots: number;
  blobs: {
    used: number;
    /** Used blobs moved into new packs. */
    repacked: number;
    /** Blob entries the index no longer names (unused blobs, and duplicate copies). */
    removed: number;
    missing: string[];
    damaged: string[];
  };
  packs: { before: number; deleted: number; repacked: number; written: number; kept: number; after: number; damagedKept: string[] };
  bytes: { before: number; deleted: number; repacked: number; written: number; after: number };
  indexFiles: { before: number; deleted: number; written?: string };
  tempFilesDeleted: number;
}

/** Test hook: PI_GUARD_TEST_PRUNE_PAUSE=<phase> stops prune at that phase, holding its lock, until killed. */
async function pauseFor(phase: PrunePhase): Promise<void> {
  if (process.env.PI_GUARD_TEST_PRUNE_PAUSE !== phase) return;
  process.stderr.write(`pi-guard: prune paused at ${phase}\n`);
  await new Promise(() => setInterval(() => undefined, 1 << 30));
}

export async function prune(repo: Repository, opts: PruneOptions = {}): Promise<PruneReport> {
  const dryRun = !!opts.dryRun;
  const fraction = opts.maxUnusedFraction ?? 0.1;
  if (!(fraction >= 0 && fraction <= 1)) throw new RepoError(`the unused share must be between 0% and 100%, not ${fraction * 100}%`, "usage");
  // A dry run only reads: beside snapshots and restores, like any reader.
  const lock = await acquireLock(repo, { mode: dryRun ? "shared" : "exclusive", command: "prune", waitMs: opts.lockWaitMs ?? 60_000 });
  try {
    const tempFilesDeleted = dryRun ? 0 : await removeWriterTempFiles(repo.target, repo.stagingDir, "all");
    await repo.loadIndex({ fromTarget: true });
    if (repo.unreadableIndexes.length || repo.unreadablePacks.length) {
      const what = repo.unreadableIndexes[0]?.error ?? repo.unreadablePacks[0].error;
      throw new RepoError(`${what}; nothing was deleted: run \`pi-guard repair index\` first`, "corrupt");
    }
    const snapshots = await repo.listSnapshots({ fromTarget: true });
    if (repo.unreadableSnapshots.length) {
      const u = repo.unreadableSnapshots[0];
      throw new RepoError(
        `snapshot ${u.id.slice(0, 8)} cannot be read (${u.error}), so prune cannot tell which data it needs; nothing was deleted (\`pi-guard forget ${u.id.slice(0, 8)}\` gives it up)`,
        "corrupt",
      );
    }
    opts.onProgress?.({ phase: "reading", done: 0, total: snapshots.length });
    const plan = await planPrune(repo, snapshots, { maxUnusedFraction: fraction });
    if (plan.missing.length && !opts.allowDamaged) throw damageError(`${plan.missing.length} blob(s) that snapshots use are missing`, plan.missing);
    if (plan.damagedPacks.length && !opts.allowDamaged) throw damageError(`${plan.damagedPacks.length} pack(s) that snapshots use have the wrong size`, plan.damagedPacks);
    lock.assertHeld();
    await pauseFor("planned");
    const report = baseReport(plan, snapshots.length, dryRun, tempFilesDeleted);
    if (dryRun || report.nothingToDo) {
      if (!dryRun) await deleteSupersededLeftovers(repo, plan, lock, report);
      return report;
    }
    await execute(repo, plan, lock, opts, report);
    return report;
  } finally {
    await lock.release();
  }
}

function damageError(what: string, ids: string[]): RepoError {
  const named = ids.slice(0, 3).map((id) => id.slice(0, 12)).join(", ");
  return new RepoError(`${what} (${named}${ids.length > 3 ? ", ..." : ""}); nothing was deleted: run \`pi-guard check --read-data\` (or prune with --allow-damaged to keep them as they are)`, "corrupt");
}

function baseReport(plan: PrunePlan, snapshots: number, dryRun: boolean, tempFilesDeleted: number): PruneReport {
  const deletedBytes = plan.remove.reduce((n, p) => n + p.size, 0);
  const repackedBytes = plan.repack.reduce((n, p) => n + p.size, 0);
  const moved = plan.repack.reduce((n, p) => n + p.used.length, 0);
  const nothingToDo = plan.remove.length === 0 && plan.repack.length === 0;
  return {
    dryRun,
    nothingToDo,
    snapshots,
    blobs: {
      used: plan.usedBlobs,
      repacked: moved,
      removed: plan.remove.reduce((n, p) => n + p.blobs, 0) + plan.repack.reduce((n, p) => n + p.blobs - p.used.length, 0),
      missing: plan.missing,
      damaged: [],
    },
    packs: {
      before: plan.packsBefore,
      deleted: plan.remove.length,
      repacked: plan.repack.length,
      written: 0,
      kept: plan.keep.length,
      after: plan.packsBefore - plan.remove.length - plan.repack.length,
      damagedKept: plan.damagedPacks,
    },
    bytes: { before: plan.bytesBefore, deleted: deletedBytes, repacked: repackedBytes, written: 0, after: plan.bytesBefore - deletedBytes - repackedBytes },
    indexFiles: { before: plan.indexFiles.length, deleted: 0 },
    tempFilesDeleted,
  };
}

/** Nothing to prune: still delete index files another one already supersedes (an earlier prune was cut short). */
async function deleteSupersededLeftovers(repo: Repository, plan: PrunePlan, lock: Lock, report: PruneReport): Promise<void> {
  for (const id of plan.supersededIndexFiles) {
    lock.assertHeld();
    await repo.target.delete(indexKey(id));
  }
  report.indexFiles.deleted = plan.supersededIndexFiles.length;
  if (plan.supersededIndexFiles.length) await repo.loadIndex(true);
}

async function execute(repo: Repository, plan: PrunePlan, lock: Lock, opts: PruneOptions, report: PruneReport): Promise<void> {
  const writer = new RepackWriter(repo);
  let indexWritten = false;
  try {
    const keepWhole = await repack(repo, plan.repack, writer, opts, report);
    const written = await writer.finish();
    report.packs.written = written.length;
    report.bytes.written = writer.bytesWritten;
    await pauseFor("packs-written");

    // Packs whose damaged blobs could not move stay as they are (with --allow-damaged).
    const stay: PackEntry[] = [...plan.keep, ...keepWhole.map((p) => p.entry)];
    const newIndex = { supersedes: plan.indexFiles, packs: [...stay, ...written] };
    assertCovers(newIndex.packs, plan, report.blobs.damaged);
    await lock.confirm();
    const saved = await repo.saveIndex(newIndex);
    indexWritten = true;
    report.indexFiles.written = saved.id;
    await pauseFor("index-written");

    for (const id of plan.indexFiles) {
      if (id === saved.id) continue;
      lock.assertHeld();
      await repo.target.delete(indexKey(id));
      report.indexFiles.deleted++;
    }
    await pauseFor("indexes-deleted");

    const stayIds = new Set(stay.map((p) => p.id));
    const doomed = [...plan.remove.map((p) => p.key), ...plan.repack.filter((p) => !stayIds.has(p.id)).map((p) => packKey(p.id))];
    for (let i = 0; i < doomed.length; i++) {
      if (i === Math.floor(doomed.length / 2)) await pauseFor("packs-deleting");
      lock.assertHeld();
      await repo.target.delete(doomed[i]);
      opts.onProgress?.({ phase: "deleting", done: i + 1, total: doomed.length });
    }
    const kept = keepWhole.length;
    report.packs.repacked -= kept;
    report.bytes.repacked -= keepWhole.reduce((n, p) => n + p.plan.size, 0);
    report.blobs.repacked -= keepWhole.reduce((n, p) => n + p.plan.used.length, 0);
    report.blobs.removed -= keepWhole.reduce((n, p) => n + p.plan.blobs - p.plan.used.length, 0);
    report.packs.kept += kept;
    await verifyAfter(repo, newIndex.packs, doomed, report);
    await repo.loadIndex(true);
  } catch (err) {
    // Before the index names them, the new packs are garbage: take them back.
    if (!indexWritten) await writer.abort();
    throw err;
  }
}

/**
 * Move the used blobs of each pack to be repacked into the writer, a pack at a time. A pack whose
 * used blobs cannot all be read is damaged: prune stops (nothing deleted yet) unless allowDamaged,
 * which keeps that pack whole instead.
 */
async function repack(
  repo: Repository,
  packs: PackPlan[],
  writer: RepackWriter,
  opts: PruneOptions,
  report: PruneReport,
): Promise<{ plan: PackPlan; entry: PackEntry }[]> {
  const reader = new BlobReader(repo, new SealPool(0));
  const keepWhole: { plan: PackPlan; entry: PackEntry }[] = [];
  let done = 0;
  for (const pack of packs) {
    const blobs = [...pack.used].sort((a, b) => a.offset - b.offset || a.inFrame - b.inFrame);
    const plains: Buffer[] = [];
    const damaged: string[] = [];
    // A pack's used blobs are held until all are verified, so a damaged pack adds nothing.
    for (let i = 0; i < blobs.length; ) {
      let bytes = 0;
      let j = i;
      while (j < blobs.length && (j === i || bytes + blobs[j].rawLength <= 4 * 1024 * 1024)) bytes += blobs[j++].rawLength;
      const batch = blobs.slice(i, j);
      try {
        plains.push(...(await reader.read(batch.map((b) => b.id))));
      } catch (err) {
        if (!(err instanceof RepoError)) throw err;
        for (const b of batch) {
          const one = await reader.read([b.id]).then((r) => r[0], (e: unknown) => {
            if (e instanceof RepoError) damaged.push(b.id);
            else throw e;
            return undefined;
          });
          if (one) plains.push(one);
        }
      }
      i = j;
    }
    if (damaged.length) {
      report.blobs.damaged.push(...damaged);
      if (!opts.allowDamaged) throw damageError(`${damaged.length} blob(s) of pack ${pack.id.slice(0, 12)} that snapshots use are damaged`, damaged);
      keepWhole.push({ plan: pack, entry: pack.entry });
      continue;
    }
    for (let k = 0; k < blobs.length; k++) await writer.add(blobs[k].type, blobs[k].id, plains[k]);
    opts.onProgress?.({ phase: "repacking", done: ++done, total: packs.length });
  }
  return keepWhole;
}

/** Before anything is deleted: every used blob that exists must be in a pack the new index names. */
function assertCovers(packs: PackEntry[], plan: PrunePlan, damaged: string[]): void {
  const named = new Set<string>();
  for (const p of packs) for (const b of p.blobs) named.add(b.id);
  const missing = new Set([...plan.missing, ...damaged]);
  const lost = [...plan.used].filter((id) => !named.has(id) && !missing.has(id));
  if (lost.length) throw new RepoError(`prune would lose ${lost.length} used blob(s) (${lost[0].slice(0, 12)}); nothing was deleted`, "io");
}

/** After deleting: data/ holds exactly the packs the new index names, and every deletion took. */
async function verifyAfter(repo: Repository, packs: PackEntry[], doomed: string[], report: PruneReport): Promise<void> {
  const listed = new Map<string, number>();
  for await (const obj of repo.target.list("data")) listed.set(obj.key, obj.size);
  const still = doomed.filter((k) => listed.has(k));
  if (still.length) throw new RepoError(`${still.length} pack(s) are still there after deleting them (${still[0]}); run prune again`, "io");
  let after = 0;
  for (const p of packs) {
    const size = listed.get(packKey(p.id));
    if (size === undefined) throw new RepoError(`pack ${p.id.slice(0, 12)} that the new index names is gone`, "io");
    after += size;
  }
  report.packs.after = packs.length;
  report.bytes.after = after;
}
