/**
 * What a scheduled job does: job name → engine call. The map is injectable, so `watch` can run
 * jobs on its open repository and tests can run real jobs beside crafted ones.
 */
import type { Config, ScheduledJob } from "../config/config.js";
import { RepoError } from "../repo/errors.js";
import type { Repository } from "../repo/repository.js";
import type { CheckReport } from "../repo/check.js";
import type { Engine } from "../engine/types.js";

export interface JobResult {
  ok: boolean;
  /** One line: what was done, or why it failed. */
  summary: string;
  details?: unknown;
}

export interface JobContext {
  config: Config;
  /** The engine the config selects (engine/open.ts): the snapshot, check and forget jobs run on either. */
  engine(): Promise<Engine>;
  /** The native repository, for the jobs only pi-guard's own format has (prune, retention); `watch` hands its open one. */
  repo(): Promise<Repository>;
  lockWaitMs: number;
}

export type JobFn = (ctx: JobContext) => Promise<JobResult>;
export type JobMap = Record<ScheduledJob, JobFn>;

/**
 * The snapshot policy of `pi-guard snapshot` (the engine's backup, snapshot/backup.ts), judged by
 * the same findings (engine/verdict.ts): a missing agent dir fails, a suspected loss is tagged and
 * fails, each mirror gets the snapshot, and one that did not is a failure.
 */
async function snapshotJob(ctx: JobContext): Promise<JobResult> {
  const [engine, { snapshotFindings }, { shipped }] = await Promise.all([ctx.engine(), import("../engine/verdict.js"), import("../repo/ship.js")]);
  const r = await engine.backup({ lockWaitMs: ctx.lockWaitMs });
  // Without allowEmpty, backup throws rather than take no snapshot.
  const made = r.snapshot!;
  const s = made.summary;
  const problems = (await snapshotFindings(r, ctx.config.repo)).filter((f) => f.level !== "warning");
  const what = `snapshot ${made.id.slice(0, 8)}: ${s.files} files, ${s.filesNew} new, ${s.filesChanged} changed`;
  const sent = r.mirrors.filter(shipped).map((m) => `shipped to ${m.mirror}`);
  const details = { id: made.id, tags: made.tags, skipped: made.skipped, suspectLoss: made.loss ?? null, mirrors: r.mirrors.map((m) => ({ mirror: m.mirror, ok: shipped(m), error: m.error ?? null })) };
  return { ok: problems.length === 0, summary: [what, ...sent, ...problems.map((p) => p.message)].join("; "), details };
}

function checkJob(readData: boolean): JobFn {
  return async (ctx) => {
    const engine = await ctx.engine();
    const r = await engine.check({ readData, lockWaitMs: ctx.lockWaitMs });
    const report = r.details as Partial<CheckReport>;
    const counts = engine.kind === "native" ? `${report.snapshots} snapshots, ${report.packs} packs, ${report.blobs} blobs${readData ? `, ${report.packsRead} packs read` : ""}` : `restic check${readData ? " --read-data" : ""}`;
    const errors = r.problems;
    return r.ok
      ? { ok: true, summary: `${counts}: no errors`, details: r.details }
      : { ok: false, summary: `${counts}: DAMAGED: ${errors[0] ?? "see pi-guard check"}${errors.length > 1 ? ` (and ${errors.length - 1} more)` : ""}`, details: r.details };
  };
}

async function forgetIn(engine: Pick<Engine, "forget">, ctx: JobContext): Promise<JobResult> {
  const { emptiedGroupText } = await import("../repo/retention.js");
  // Never allowRemoveAll: a schedule has no one to confirm that emptying a group was meant.
  const r = await engine.forget({ policy: ctx.config.retention, lockWaitMs: ctx.lockWaitMs });
  if (r.refused) {
    const groups = r.emptiedGroups.map((g) => `the policy keeps no snapshot of ${emptiedGroupText(g)}`).join("; ");
    return { ok: false, summary: `REFUSED: ${groups}; nothing was forgotten; fix "retention" in ${ctx.config.configFile}`, details: r };
  }
  const unreadable = r.unreadable.length ? `; ${r.unreadable.length} unreadable snapshot(s) left alone` : "";
  const summary = `forgot ${r.removed} snapshot(s), kept ${r.keep.length}${unreadable}`;
  return { ok: r.removed === r.remove.length && r.unreadable.length === 0, summary, details: r };
}

async function pruneIn(repo: Repository, ctx: JobContext): Promise<JobResult> {
  const { prune } = await import("../repo/prune.js");
  const r = await prune(repo, { lockWaitMs: ctx.lockWaitMs });
  const damage = r.blobs.missing.length + r.blobs.damaged.length + r.packs.damagedKept.length;
  const summary = r.nothingToDo
    ? `nothing to prune: ${r.packs.after} packs, ${r.bytes.after} bytes`
    : `deleted ${r.packs.deleted} pack(s), repacked ${r.packs.repacked} into ${r.packs.written}: ${r.bytes.before} → ${r.bytes.after} bytes`;
  return { ok: damage === 0, summary: damage ? `${summary}; DAMAGED: ${damage} missing or damaged blob(s)/pack(s), see pi-guard check` : summary, details: r };
}

/** forget by config.retention, then prune, in one copy of the repository. */
async function retentionIn(repo: Repository, ctx: JobContext): Promise<JobResult> {
  const { nativeEngine } = await import("../engine/native.js");
  const forgot = await forgetIn(nativeEngine(ctx.config, async () => repo), ctx);
  if (!forgot.ok) return { ...forgot, summary: `${forgot.summary}; prune not run` };
  const pruned = await pruneIn(repo, ctx);
  return { ok: pruned.ok, summary: `${forgot.summary}; ${pruned.summary}`, details: { forget: forgot.details, prune: pruned.details } };
}

/**
 * What the default daily schedule runs: retention in the repository, then in each mirror (a mirror
 * keeps what is shipped to it, so without this it would only grow). Each copy is done on its own:
 * a mirror that is down fails its part, and the others are still done.
 */
async function retentionJob(ctx: JobContext): Promise<JobResult> {
  const repo = await ctx.repo();
  const parts: ({ where: string } & JobResult)[] = [{ where: ctx.config.repo, ...(await retentionIn(repo, ctx)) }];
  for (const mirror of ctx.config.mirrors) {
    const part = await (async () => {
      const [{ openReplica }, { openTarget }] = await Promise.all([import("../repo/replicate.js"), import("../targets/open.js")]);
      const { repo: copy } = await openReplica(repo, openTarget({ repo: mirror, retry: ctx.config.retry }), { dataDir: ctx.config.dataDir });
      return retentionIn(copy, ctx);
    })().catch((err: unknown): JobResult => ({ ok: false, summary: ((err as Error)?.message ?? String(err)).split("\n")[0] }));
    parts.push({ where: mirror, ...part });
  }
  if (parts.length === 1) return parts[0];
  return {
    ok: parts.every((p) => p.ok),
    summary: parts.map((p) => `${p.where}: ${p.ok ? "" : "FAILED: "}${p.summary}`).join(" | "),
    details: parts.map(({ where, ok, summary, details }) => ({ where, ok, summary, details })),
  };
}

export const ENGINE_JOBS: JobMap = {
  snapshot: snapshotJob,
  check: checkJob(false),
  "check-read-data": checkJob(true),
  forget: async (ctx) => forgetIn(await ctx.engine(), ctx),
  prune: async (ctx) => pruneIn(await ctx.repo(), ctx),
  retention: retentionJob,
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

/**
 * A JobContext whose engine is opened once, on first use: `open` gives the engine the config
 * selects (openEngine), or for `watch` the native engine over its open repository. The native-only
 * jobs are refused in one line on another engine.
 */
export function jobContext(config: Config, open: () => Promise<Engine & { repository?: () => Promise<Repository> }>, lockWaitMs: number): JobContext {
  let engine: ReturnType<typeof open> | undefined;
  const opened = () => (engine ??= open());
  return {
    config,
    lockWaitMs,
    engine: opened,
    repo: async () => {
      const e = await opened();
      if (!e.repository) throw new RepoError(`this job works only on pi-guard's own repositories, not on a ${e.kind} one (docs/RESTIC.md)`, "usage");
      return e.repository();
    },
  };
}
