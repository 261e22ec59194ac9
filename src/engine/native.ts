/**
 * The engine interface over pi-guard's own repository format: each method is the library call
 * that already does the work (engine.ts, snapshot/backup.ts, repo/retention.ts, repo/check-run.ts,
 * watch/status.ts), opened once and mapped to the shared result shapes.
 */
import type { Config } from "../config/config.js";
import type { Repository } from "../repo/repository.js";
import { RepoError } from "../repo/errors.js";
import type { Snapshot } from "../repo/format.js";
import type { LossVerdict } from "../snapshot/loss-guard.js";
import type { Engine, EngineBackupResult, EngineSnapshot, EngineSnapshotTaken } from "./types.js";

const listed = (r: { id: string; snapshot: { time: string; host: string; user: string; tags: string[]; roots: { name: string; path: string }[]; agents?: Record<string, string> } }): EngineSnapshot => ({
  id: r.id,
  time: r.snapshot.time,
  host: r.snapshot.host,
  user: r.snapshot.user,
  tags: r.snapshot.tags,
  roots: r.snapshot.roots.map((x) => ({ name: x.name, path: x.path })),
  ...(r.snapshot.agents ? { agents: { ...r.snapshot.agents } } : {}),
});

/** `open` unlocks the repository (it may ask for a password); it is called at most once. */
/** A native snapshot as the engine reports one taken (by `backup`, or by a watcher handed the work). */
export function snapshotTaken(id: string, s: Snapshot, loss: LossVerdict | undefined): EngineSnapshotTaken {
  return {
    id,
    time: s.time,
    parent: s.parent ?? null,
    tags: s.tags,
    summary: s.summary,
    skipped: s.skipped ?? [],
    changedWhileRead: s.changedWhileRead ?? [],
    special: s.special ?? [],
    ...(loss ? { loss } : {}),
    ...(s.cleanup ? { cleanup: s.cleanup } : {}),
  };
}

export function nativeEngine(config: Config, open: () => Promise<Repository>): Engine & { repository(): Promise<Repository> } {
  let opened: Promise<Repository> | undefined;
  const repo = () => (opened ??= open());
  return {
    kind: "native",
    location: config.repo,
    repository: repo,
    async init(opts = {}) {
      const { assertNotAMirror } = await import("../repo/replicate.js");
      assertNotAMirror(config);
      const { initRepository } = await import("../engine.js");
      const made = await initRepository(config, opts);
      opened = Promise.resolve(made.repo);
      return { id: made.repo.config.id, credential: made.credential, keyFile: made.keyFile };
    },
    async backup(opts = {}): Promise<EngineBackupResult> {
      const { backup } = await import("../snapshot/backup.js");
      const r = await backup(config, repo, opts);
      const s = r.snapshot;
      return {
        engine: "native",
        created: r.created,
        lossAccepted: r.lossAccepted,
        mirrors: r.mirrors,
        snapshot: s && snapshotTaken(s.id, s.snapshot, s.loss),
      };
    },
    async listSnapshots(opts = {}) {
      const r = await repo();
      const { listingDamage } = await import("../repo/snapshot-damage.js");
      const all = await r.listSnapshots();
      // Snapshot objects that are all unreadable are damage, never "no snapshots yet".
      const damage = listingDamage(all.length, r.unreadableSnapshots, config);
      if (damage) throw damage;
      for (const bad of r.unreadableSnapshots) opts.onUnreadable?.(bad.error);
      return all.map(listed);
    },
    async findSnapshot(when, opts = {}) {
      const { chooseSnapshotAt } = await import("../engine.js");
      const chosen = await chooseSnapshotAt(await repo(), when, { host: opts.host });
      return { snapshot: listed(chosen.record), resolved: chosen.resolved, warnings: chosen.warnings };
    },
    async restore(when, opts = {}) {
      const { restore } = await import("../engine.js");
      const { delete: deleteExtra, ...rest } = opts;
      const r = await restore(config, await repo(), when, { ...rest, deleteExtra });
      return { ...r, engine: "native", snapshot: { id: r.snapshot.id, snapshot: { time: r.snapshot.snapshot.time, host: r.snapshot.snapshot.host } } };
    },
    async forget(opts) {
      const { prune: pruneOpts, ...rest } = opts;
      if (pruneOpts && opts.dryRun) throw new RepoError("--prune after a --dry-run would prune nothing that the forget removed; run them without --dry-run, or `pi-guard prune --dry-run`", "usage");
      const [{ forget }, r] = await Promise.all([import("../repo/retention.js"), repo()]);
      const report = await forget(r, rest);
      // A refused forget changed nothing: a prune after it would only be work nobody asked for.
      if (!pruneOpts || report.refused) return report;
      const { prune } = await import("../repo/prune.js");
      const pruned = await prune(r, { maxUnusedFraction: pruneOpts.maxUnusedFraction, allowDamaged: pruneOpts.allowDamaged, lockWaitMs: opts.lockWaitMs, onProgress: pruneOpts.onProgress });
      return { ...report, prune: { engine: "native" as const, report: pruned } };
    },
    async sessions(opts = {}) {
      const { openCatalog } = await import("../library/catalog.js");
      return openCatalog(config, repo, opts);
    },
    async check(opts = {}) {
      const { runCheck } = await import("../repo/check-run.js");
      const report = await runCheck(await repo(), { readData: opts.readData, lockWaitMs: opts.lockWaitMs, location: config.repo, otherCopies: config.mirrors });
      const problems = report.problems.filter((p) => p.severity === "error").map((p) => p.message);
      return { ok: report.ok, readData: !!opts.readData, problems, details: report };
    },
    async status(opts = {}) {
      const { gatherStatus } = await import("../watch/status.js");
      const report = await gatherStatus(config, await repo(), opts);
      if (!opts.agent) return report;
      const [{ agentStatus, withAgentStatus }, r] = await Promise.all([import("../agents/status.js"), repo()]);
      return withAgentStatus(report, agentStatus(config, await r.listSnapshots(), opts.agent));
    },
  };
}
