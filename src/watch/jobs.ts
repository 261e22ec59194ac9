/**
 * What a scheduled job does: job name → engine call. The map is injectable, so `watch` can run
 * jobs on its open repository and tests can run real jobs beside crafted ones.
 */
import { promises as fs } from "node:fs";
import { META_ROOT_NAME, type Config, type ScheduledJob } from "../config/config.js";
import type { Repository } from "../repo/repository.js";

export interface JobResult {
  ok: boolean;
  /** One line: what was done, or why it failed. */
  summary: string;
  details?: unknown;
}

export interface JobContext {
  config: Config;
  /** The repository to work on; `watch` hands its open one, `run-scheduled` opens it once. */
  repo(): Promise<Repository>;
  lockWaitMs: number;
}

export type JobFn = (ctx: JobContext) => Promise<JobResult>;
export type JobMap = Record<ScheduledJob, JobFn>;

async function snapshotJob(ctx: JobContext): Promise<JobResult> {
  // As `pi-guard snapshot` does: an empty snapshot of a missing agent dir would become "latest".
  const sources = ctx.config.roots.filter((r) => r.name !== META_ROOT_NAME);
  const present = await Promise.all(sources.map((r) => fs.stat(r.path).then((s) => s.isDirectory(), (e: NodeJS.ErrnoException) => e.code !== "ENOENT" && e.code !== "ENOTDIR")));
  if (!present.some(Boolean)) return { ok: false, summary: `nothing to back up: ${ctx.config.agentDir} does not exist; no snapshot was taken` };
  const { snapshotAgentDir } = await import("../engine.js");
  const result = await snapshotAgentDir(ctx.config, await ctx.repo(), { lockWaitMs: ctx.lockWaitMs });
  const s = result.snapshot.summary;
  const skipped = result.snapshot.skipped ?? [];
  const what = `snapshot ${result.id.slice(0, 8)}: ${s.files} files, ${s.filesNew} new, ${s.filesChanged} changed`;
  if (skipped.length) return { ok: false, summary: `${what}; incomplete: ${skipped.length} path(s) could not be read`, details: { id: result.id, skipped } };
  return { ok: true, summary: what, details: { id: result.id } };
}

function checkJob(readData: boolean): JobFn {
  return async (ctx) => {
    const repo = await ctx.repo();
    const { acquireLock, removeStaleLocks } = await import("../repo/lock.js");
    const { checkRepository } = await import("../repo/check.js");
    await removeStaleLocks(repo);
    const lock = await acquireLock(repo, { exclusive: false, command: readData ? "check --read-data" : "check", waitMs: ctx.lockWaitMs });
    let report;
    try {
      await repo.target.cleanTemp?.(60 * 60 * 1000);
      report = await checkRepository(repo, { readData });
      lock.assertHeld();
    } finally {
      await lock.release();
    }
    const errors = report.problems.filter((p) => p.severity === "error");
    const counts = `${report.snapshots} snapshots, ${report.packs} packs, ${report.blobs} blobs${readData ? `, ${report.packsRead} packs read` : ""}`;
    return report.ok
      ? { ok: true, summary: `${counts}: no errors`, details: report }
      : { ok: false, summary: `${counts}: DAMAGED: ${errors[0]?.message ?? "see pi-guard check"}${errors.length > 1 ? ` (and ${errors.length - 1} more)` : ""}`, details: report };
  };
}

/**
 * forget, prune and retention (forget by config.retention, then prune) come with the retention
 * slice; until it is merged they fail honestly. The one place to wire them:
 *   forget:    forget(repo, { policy: ctx.config.retention, lockWaitMs })
 *   prune:     prune(repo, { lockWaitMs })
 *   retention: forget, then prune, then repo.refreshIndex()
 */
const notInThisBuild =
  (job: ScheduledJob): JobFn =>
  async () => ({ ok: false, summary: `job "${job}" is not available in this build of pi-guard` });

export const ENGINE_JOBS: JobMap = {
  snapshot: snapshotJob,
  check: checkJob(false),
  "check-read-data": checkJob(true),
  forget: notInThisBuild("forget"),
  prune: notInThisBuild("prune"),
  retention: notInThisBuild("retention"),
};

/** Run one job; an error becomes a failed result, never an exception. */
export async function runJob(job: ScheduledJob, ctx: JobContext, jobs: JobMap = ENGINE_JOBS): Promise<JobResult> {
  const fn = jobs[job];
  if (!fn) return { ok: false, summary: `unknown job "${job}"` };
  try {
    return await fn(ctx);
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    return { ok: false, summary: message.split("\n")[0] };
  }
}

/** A JobContext that opens the repository once, on first use. */
export function jobContext(config: Config, open: () => Promise<Repository>, lockWaitMs: number): JobContext {
  let repo: Promise<Repository> | undefined;
  return { config, lockWaitMs, repo: () => (repo ??= open()) };
}
