import type { Target } from "../targets/target.js";
import { indexKey, type IndexFile, type PackEntry } from "./format.js";
import { acquireLock } from "./lock.js";
import { scanUnindexedPacks } from "./pack-scan.js";
import type { Repository } from "./repository.js";
import { cleanStaging } from "./staging.js";

/**
 * Leftovers of writers that died: `.tmp-` files under data/, index/ and snapshots/ (only targets
 * that can leave them clean them), and staging files in `stagingDir`. `scope` says whose: "all"
 * for a holder of the exclusive lock (no writer can be running, so every such file is a dead
 * writer's); "dead" for an appender, which runs beside other appenders and may only remove staging
 * files whose owner tag names a process of this host that is gone (docs/FORMAT.md §9). keys/ and locks/
 * are left alone: `key add` and lockers write there under no lock or any lock.
 */
export async function removeWriterTempFiles(target: Target, stagingDir: string, scope: "all" | "dead" = "all"): Promise<number> {
  const removed = await cleanStaging(stagingDir, scope === "all" ? 0 : Infinity);
  // An appender runs on every change: walking object folders that grow with the repository would
  // make each snapshot cost more than the last. Their rare `.tmp-` leftovers wait for prune or check.
  if (scope === "dead") return removed;
  return removed + ((await target.cleanTemp?.(0, ["data", "index", "snapshots", "listing"], "all")) ?? 0);
}

export interface RepairIndexReport {
  /** Index files that were read, and those that could not be. */
  indexFiles: number;
  damagedIndexFiles: string[];
  /** Packs in the new index, and those of them described only by their own header. */
  packs: number;
  packsFromHeaders: string[];
  /** Index entries dropped because their pack is gone (a later snapshot can store the data again). */
  missingPacks: string[];
  /** Objects in data/ that no index names and that do not describe themselves: deleted. */
  deletedPacks: { key: string; error: string }[];
  tempFilesDeleted: number;
  /** The snapshot listing written, the listing objects it replaced, and those of them that were damaged. */
  listing?: { written: string | null; deleted: string[]; damaged: string[] };
  /** The index file written, and the ones it replaced (deleted after it was written); without a new
   * index, the files an earlier, interrupted repair had already replaced. */
  newIndex?: string;
  replaced: string[];
}

/**
 * Rebuild the index from what is really in data/: entries of readable index files whose pack is
 * present with the indexed size are kept; every other pack is described from its own header
 * (a damaged index's packs, leftovers of an interrupted snapshot). One new index file replaces all
 * the old ones: it is written first and lists them in `supersedes`, and only then are they deleted,
 * so a crash at any point leaves a repository whose index is at least as good as before.
 */
export async function repairIndex(repo: Repository, opts: { lockWaitMs?: number } = {}): Promise<RepairIndexReport> {
  const lock = await acquireLock(repo, { mode: "exclusive", command: "repair index", waitMs: opts.lockWaitMs ?? 60_000 });
  try {
    const tempFilesDeleted = await removeWriterTempFiles(repo.target, repo.stagingDir, "all");
    const present = new Map<string, number>();
    for await (const obj of repo.target.list("data")) present.set(obj.key.split("/").pop()!, obj.size);

    const listed: string[] = [];
    for await (const obj of repo.target.list("index")) listed.push(obj.key.slice("index/".length));
    const kept: PackEntry[] = [];
    const damagedIndexFiles: string[] = [];
    const missingPacks = new Set<string>();
    const keptIds = new Set<string>();
    const indexedWithOtherSize = new Map<string, PackEntry>();
    const readable: { id: string; index: IndexFile }[] = [];
    const unreadable: string[] = [];
    for (const id of listed) {
      try {
        readable.push({ id, index: await repo.readIndexFile(id) });
      } catch {
        unreadable.push(id);
      }
    }
    // Files another index supersedes are left over from an interrupted consolidation: not damage.
    const superseded = new Set(readable.flatMap((f) => f.index.supersedes));
    damagedIndexFiles.push(...unreadable.filter((id) => !superseded.has(id)));
    for (const { index } of readable) {
      for (const pack of index.packs) {
        if (keptIds.has(pack.id)) continue;
        const size = present.get(pack.id);
        if (size === undefined) missingPacks.add(pack.id);
        else if (size === pack.size) {
          kept.push(pack);
          keptIds.add(pack.id);
        }
        // A size mismatch: the pack is re-described from its header below if it can be.
        else indexedWithOtherSize.set(pack.id, pack);
      }
    }
    const scan = await scanUnindexedPacks(repo, (id) => keptIds.has(id));
    const deletedPacks: RepairIndexReport["deletedPacks"] = [];
    for (const bad of scan.unreadable) {
      const indexed = indexedWithOtherSize.get(bad.id);
      if (indexed) {
        // A readable index still locates this pack's frames: keep that (check goes on naming it).
        kept.push(indexed);
        keptIds.add(bad.id);
        continue;
      }
      // In no readable index and not self-describing: nothing can ever locate a blob in it.
      await repo.target.delete(bad.key);
      deletedPacks.push({ key: bad.key, error: bad.error });
    }
    const packs = [...kept, ...scan.found];
    const report: RepairIndexReport = {
      indexFiles: listed.length - damagedIndexFiles.length,
      damagedIndexFiles,
      packs: packs.length,
      packsFromHeaders: scan.found.map((p) => p.id),
      missingPacks: [...missingPacks],
      deletedPacks,
      tempFilesDeleted,
      replaced: [],
    };
    const changed = damagedIndexFiles.length > 0 || scan.found.length > 0 || report.missingPacks.length > 0;
    if (changed) {
      const saved = await repo.saveIndex({ supersedes: listed, packs });
      report.newIndex = saved.id;
      report.replaced = listed;
    } else report.replaced = listed.filter((id) => superseded.has(id));
    for (const id of report.replaced) await repo.target.delete(indexKey(id));
    await repo.loadIndex(true);
    // The snapshot listing (docs/FORMAT.md §7a) is rebuilt as one object, damaged ones deleted.
    const listing = await repo.consolidateListing({ after: "repair" });
    report.listing = { written: listing.written ?? null, deleted: listing.deleted, damaged: repo.unreadableListings.map((u) => u.id) };
    return report;
  } finally {
    await lock.release();
  }
}
