/**
 * Schedules: cron expressions (read by node-cron) for the jobs in `config.schedules`, the record
 * of what ran in `<stateDir>/schedule.json`, and the Scheduler that `watch` starts.
 *
 * When is a job due? At `now`, a job is due when its most recent fire time at or before `now` is
 * later than the moment it is counted from: its last run's start, or, when it never ran, the
 * moment pi-guard first saw the schedule (`since`, recorded the first time anything reads the
 * schedules to run them). So a fire time missed while the machine slept or the watcher was down
 * runs once when it is next checked (as anacron does), never once per missed fire; and a fresh
 * install does not start a full `check --read-data` the minute it is set up, but at its first
 * fire time after that.
 */
import { createRequire } from "node:module";
import { promises as fs, constants } from "node:fs";
import path from "node:path";
import type * as NodeCronModule from "node-cron";
import type { Schedule, ScheduledJob } from "../config/config.js";
import { SCHEDULED_JOBS } from "../config/config.js";
import { makeDirs, syncDir, writeFully } from "../fs-safe.js";
import { pidAlive } from "../pid.js";

type NodeCron = typeof NodeCronModule;
let nodeCron: NodeCron | undefined;
// Loaded as CommonJS, lazily: most commands never look at a schedule.
const cron = (): NodeCron => (nodeCron ??= createRequire(import.meta.url)("node-cron") as NodeCron);

/** Why `expr` is not a cron expression node-cron accepts, or undefined when it is one. */
export function cronError(expr: string): string | undefined {
  if (typeof expr !== "string" || expr.trim() === "") return "empty cron expression";
  const fields = expr.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) return `a cron expression has 5 fields (or 6, with seconds first), not ${fields}`;
  const v = cron().validateDetailed(expr);
  if (v.valid) return undefined;
  return v.errors.map((e) => `${e.field}: ${e.message}`).join("; ") || "invalid cron expression";
}

/** One line per problem in a list of schedules (used by the config loader). */
export function scheduleProblems(schedules: Schedule[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  schedules.forEach((s, i) => {
    const bad = cronError(s.cron);
    if (bad) problems.push(`schedules.${i}.cron: "${s.cron}" is not a valid cron expression (${bad})`);
    // One record per job name in schedule.json: a second time for a job goes in the same expression ("0 9,17 * * *").
    if (seen.has(s.job)) problems.push(`schedules.${i}: job "${s.job}" is scheduled twice; list both times in one cron expression`);
    seen.add(s.job);
  });
  return problems;
}

const SEARCH_DAYS = 8 * 366; // Long enough for "29 Feb on a Monday"-style expressions to fire at least once.

/** Fire times of one cron expression, in local time (as cron and node-cron read them). */
export class CronSeries {
  private readonly fields: NodeCronModule.ParsedFields;
  private readonly matcher: NodeCronModule.ScheduledTask;

  constructor(readonly expr: string) {
    const bad = cronError(expr);
    if (bad) throw new Error(`invalid cron expression "${expr}": ${bad}`);
    this.fields = cron().parse(expr);
    // A created task is stopped: it only lends us its matcher (L, W, # and names included).
    this.matcher = cron().createTask(expr, () => undefined);
  }

  private dayMatches(y: number, m: number, d: number): boolean {
    const f = this.fields;
    if (!f.month.includes(m + 1)) return false;
    const probe = new Date(y, m, d, f.hour[0], f.minute[0], f.second[0]);
    return probe.getDate() === d && this.matcher.match(probe);
  }

  /** The first fire time strictly after `from`. */
  next(from: Date): Date | undefined {
    const f = this.fields;
    const start = new Date(from.getFullYear(), from.getMonth(), from.getDate());
    for (let i = 0; i < SEARCH_DAYS; i++) {
      const day = new Date(start.getFullYear(), start.getMonth(), start.getDate() + i);
      const [y, m, d] = [day.getFullYear(), day.getMonth(), day.getDate()];
      if (!this.dayMatches(y, m, d)) continue;
      for (const h of f.hour) {
        if (i === 0 && h < from.getHours()) continue;
        for (const mi of f.minute) {
          for (const s of f.second) {
            const t = new Date(y, m, d, h, mi, s);
            // A time that does not exist (a daylight-saving gap) normalises to another hour: skip it.
            if (t.getHours() === h && t.getTime() > from.getTime()) return t;
          }
        }
      }
    }
    return undefined;
  }

  /** The last fire time at or before `at`. */
  previous(at: Date): Date | undefined {
    const f = this.fields;
    const start = new Date(at.getFullYear(), at.getMonth(), at.getDate());
    for (let i = 0; i < SEARCH_DAYS; i++) {
      const day = new Date(start.getFullYear(), start.getMonth(), start.getDate() - i);
      const [y, m, d] = [day.getFullYear(), day.getMonth(), day.getDate()];
      if (!this.dayMatches(y, m, d)) continue;
      for (const h of [...f.hour].reverse()) {
        if (i === 0 && h > at.getHours()) continue;
        for (const mi of [...f.minute].reverse()) {
          for (const s of [...f.second].reverse()) {
            const t = new Date(y, m, d, h, mi, s);
            if (t.getHours() === h && t.getTime() <= at.getTime()) return t;
          }
        }
      }
    }
    return undefined;
  }

  dispose(): void {
    void this.matcher.destroy();
  }
}

function withSeries<T>(expr: string, fn: (s: CronSeries) => T): T {
  const series = new CronSeries(expr);
  try {
    return fn(series);
  } finally {
    series.dispose();
  }
}

/** The next `count` fire times of each schedule after `from`. */
export function nextRuns(schedules: Schedule[], from: Date, count: number): { job: ScheduledJob; cron: string; next: Date[] }[] {
  return schedules.map((s) =>
    withSeries(s.cron, (series) => {
      const next: Date[] = [];
      let t: Date | undefined = from;
      while (next.length < count && (t = series.next(t))) next.push(t);
      return { job: s.job, cron: s.cron, next };
    }),
  );
}

/** The upcoming jobs, soonest first: the `nextJobs` of the watcher's state file and of `status`. */
export function upcomingJobs(schedules: Schedule[], from: Date): { job: ScheduledJob; cron: string; next: string }[] {
  return nextRuns(schedules, from, 1)
    .filter((r) => r.next.length)
    .map((r) => ({ job: r.job, cron: r.cron, next: r.next[0].toISOString() }))
    .sort((a, b) => a.next.localeCompare(b.next));
}

/** How long upcomingJobsFrom keeps a list at most: a fire time beyond the search window comes into it. */
const UPCOMING_KEEP_MS = 60_000;

/**
 * upcomingJobs for one set of schedules as the clock moves on (the watcher's state, refreshed twice
 * a snapshot and on every tick): the list holds until the soonest of its times comes, so it is
 * computed again then, when the clock goes back, or after a minute, not on every call.
 */
export function upcomingJobsFrom(schedules: Schedule[]): (now: Date) => ReturnType<typeof upcomingJobs> {
  let from = Infinity;
  let until = -Infinity;
  let jobs: ReturnType<typeof upcomingJobs> = [];
  return (now) => {
    const t = now.getTime();
    if (t < from || t >= until) {
      jobs = upcomingJobs(schedules, now);
      from = t;
      until = Math.min(t + UPCOMING_KEEP_MS, jobs.length ? Date.parse(jobs[0].next) : Infinity);
    }
    return jobs;
  };
}

export interface DueJob {
  job: ScheduledJob;
  cron: string;
  /** The fire time that made it due. */
  fireTime: Date;
}

/**
 * Jobs due at `now` (see the top of this file). `countFrom` is, per job, its last run's start or
 * when it was first seen; a job with neither is not due (the caller records `since` first).
 */
export function dueJobs(schedules: Schedule[], countFrom: Partial<Record<string, Date | string>>, now: Date): DueJob[] {
  const due: DueJob[] = [];
  for (const s of schedules) {
    const from = countFrom[s.job];
    const fromMs = from === undefined ? NaN : new Date(from).getTime();
    if (!Number.isFinite(fromMs)) continue;
    const fire = withSeries(s.cron, (series) => series.previous(now));
    if (fire && fire.getTime() > fromMs) due.push({ job: s.job, cron: s.cron, fireTime: fire });
  }
  return due;
}

// ---------------------------------------------------------------------------------------------
// schedule.json: what ran, when, and how it went.

export interface JobRun {
  start: string;
  end: string;
  ok: boolean;
  /** One line: what the job did, or why it failed. */
  summary: string;
  /** "schedule" when it was due, "manual" for `run-scheduled --job`. */
  trigger: "schedule" | "manual";
}

export interface ScheduleState {
  version: 1;
  jobs: Partial<Record<ScheduledJob, { since?: string; lastRun?: JobRun }>>;
}

export const scheduleStateFile = (stateDir: string): string => path.join(stateDir, "schedule.json");
const scheduleLockFile = (stateDir: string): string => path.join(stateDir, "schedule.lock");

const isTime = (v: unknown): v is string => typeof v === "string" && Number.isFinite(Date.parse(v));

function validRun(v: unknown): JobRun | undefined {
  if (!v || typeof v !== "object") return undefined;
  const r = v as Record<string, unknown>;
  if (!isTime(r.start) || !isTime(r.end) || typeof r.ok !== "boolean" || typeof r.summary !== "string") return undefined;
  return { start: r.start, end: r.end, ok: r.ok, summary: r.summary.slice(0, 2000), trigger: r.trigger === "manual" ? "manual" : "schedule" };
}

/**
 * Read schedule.json. The file is ours but treated as hostile: anything unusable in it is
 * dropped (and named in `problem`), never trusted and never a crash.
 */
export async function readScheduleState(stateDir: string): Promise<{ state: ScheduleState; problem?: string }> {
  const file = scheduleStateFile(stateDir);
  const empty: ScheduleState = { version: 1, jobs: {} };
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { state: empty };
    return { state: empty, problem: `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { state: empty, problem: `${file} is not valid JSON; it will be rewritten` };
  }
  const jobs = (raw as { jobs?: unknown })?.jobs;
  if (!jobs || typeof jobs !== "object" || Array.isArray(jobs)) return { state: empty, problem: `${file} has no job records; it will be rewritten` };
  const state: ScheduleState = { version: 1, jobs: {} };
  for (const job of SCHEDULED_JOBS) {
    const rec = (jobs as Record<string, unknown>)[job] as Record<string, unknown> | undefined;
    if (!rec || typeof rec !== "object") continue;
    const since = isTime(rec.since) ? rec.since : undefined;
    const lastRun = validRun(rec.lastRun);
    if (since || lastRun) state.jobs[job] = { since, lastRun };
  }
  return { state };
}

/** Write schedule.json atomically: a temp file, fsynced, renamed over the old one. */
export async function writeScheduleState(stateDir: string, state: ScheduleState): Promise<void> {
  await makeDirs(stateDir, 0o700);
  const file = scheduleStateFile(stateDir);
  const temp = `${file}.tmp-${process.pid}`;
  const handle = await fs.open(temp, "w", 0o600);
  try {
    await writeFully(handle, Buffer.from(JSON.stringify(state, null, 2) + "\n"), 0);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(temp, file);
  await syncDir(stateDir);
}


/**
 * One runner of scheduled jobs at a time per state dir (the watcher, or `run-scheduled` from
 * system cron): an O_EXCL file holding the pid. A file whose pid is dead is taken over.
 * Returns undefined, with the holder's pid, when another live process holds it.
 */
export async function acquireScheduleLock(stateDir: string): Promise<{ release(): Promise<void> } | { heldBy: number }> {
  await makeDirs(stateDir, 0o700);
  const file = scheduleLockFile(stateDir);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await fs.open(file, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
      try {
        await writeFully(handle, Buffer.from(`${process.pid}\n`), 0);
      } finally {
        await handle.close();
      }
      return { release: () => fs.unlink(file).catch(() => undefined) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = Number((await fs.readFile(file, "utf8").catch(() => "")).trim());
    if (Number.isSafeInteger(holder) && holder > 0 && holder !== process.pid && pidAlive(holder)) return { heldBy: holder };
    // Dead, unreadable or our own leftover: remove and try again.
    await fs.unlink(file).catch(() => undefined);
  }
  return { heldBy: -1 };
}

export interface JobOutcome extends JobRun {
  job: ScheduledJob;
}

export interface RunScheduledOptions {
  schedules: Schedule[];
  stateDir: string;
  /** Runs one job; a thrown error is recorded as a failed run. */
  run: (job: ScheduledJob) => Promise<{ ok: boolean; summary: string }>;
  now?: () => Date;
  /** Run this job now whether it is due or not (`run-scheduled --job`). */
  only?: ScheduledJob;
  /** Called before each job starts (the watcher logs it). */
  onStart?: (job: ScheduledJob) => void;
  /** Checked between jobs: once true, no further job starts. */
  stopping?: () => boolean;
}

export interface RunScheduledReport {
  /** Jobs that ran, in order. */
  ran: JobOutcome[];
  /** Set when another process holds the schedule lock: nothing ran. */
  busy?: { pid: number };
  /** A problem with schedule.json (it was rewritten). */
  stateProblem?: string;
}

/**
 * Run the due jobs (or `only`) one after another, recording each run in schedule.json as soon
 * as it ends, so a crash mid-way loses at most the record of the job that was running.
 */
export async function runScheduled(opts: RunScheduledOptions): Promise<RunScheduledReport> {
  const now = opts.now ?? (() => new Date());
  const lock = await acquireScheduleLock(opts.stateDir);
  if ("heldBy" in lock) return { ran: [], busy: { pid: lock.heldBy } };
  try {
    const { state, problem } = await readScheduleState(opts.stateDir);
    const started = now();
    let changed = problem !== undefined;
    for (const s of opts.schedules) {
      const rec = (state.jobs[s.job] ??= {});
      if (!rec.since && !rec.lastRun) {
        rec.since = started.toISOString();
        changed = true;
      }
    }
    if (changed) await writeScheduleState(opts.stateDir, state);
    const countFrom = Object.fromEntries(Object.entries(state.jobs).map(([job, rec]) => [job, rec?.lastRun?.start ?? rec?.since]));
    const todo: ScheduledJob[] = opts.only ? [opts.only] : dueJobs(opts.schedules, countFrom, started).map((d) => d.job);
    const ran: JobOutcome[] = [];
    for (const job of todo) {
      if (opts.stopping?.()) break;
      opts.onStart?.(job);
      const start = now();
      let result: { ok: boolean; summary: string };
      try {
        result = await opts.run(job);
      } catch (err) {
        result = { ok: false, summary: (err as Error)?.message ?? String(err) };
      }
      const outcome: JobOutcome = {
        job,
        start: start.toISOString(),
        end: now().toISOString(),
        ok: result.ok,
        summary: result.summary.split("\n")[0],
        trigger: opts.only ? "manual" : "schedule",
      };
      ran.push(outcome);
      const { job: _job, ...record } = outcome;
      (state.jobs[job] ??= {}).lastRun = record;
      await writeScheduleState(opts.stateDir, state);
    }
    return { ran, stateProblem: problem };
  } finally {
    await lock.release();
  }
}

export interface SchedulerOptions extends Omit<RunScheduledOptions, "only" | "stopping"> {
  /** Longest sleep between checks, so a changed clock or a suspended machine is noticed (default 60 s). */
  maxSleepMs?: number;
  /** After each round that ran something, or could not run (busy, error). */
  onRound?: (report: RunScheduledReport | { error: string }) => void;
}

/**
 * Runs due jobs from a long-running process (`watch`): checks at start (catching up a missed
 * fire time), then sleeps until the next fire time (at most maxSleepMs) and checks again. Jobs
 * run one at a time and never overlap: a round starts only after the previous one ended.
 */
export class Scheduler {
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  private stopped = true;

  constructor(private readonly opts: SchedulerOptions) {
    for (const s of opts.schedules) {
      const bad = cronError(s.cron);
      if (bad) throw new Error(`invalid cron expression "${s.cron}" for job ${s.job}: ${bad}`);
    }
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.tick();
  }

  /** Stop scheduling; waits for a job that is running to finish (no new job starts). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.round;
  }

  /** The promise of the round in progress, if any (for tests and for a clean shutdown). */
  get busy(): Promise<void> | undefined {
    return this.round;
  }

  private tick(): void {
    if (this.stopped || this.round) return;
    this.round = this.runRound().finally(() => {
      this.round = undefined;
      this.arm();
    });
  }

  private async runRound(): Promise<void> {
    try {
      const report = await runScheduled({ ...this.opts, stopping: () => this.stopped });
      if (report.ran.length || report.busy || report.stateProblem) this.opts.onRound?.(report);
    } catch (err) {
      this.opts.onRound?.({ error: (err as Error)?.message ?? String(err) });
    }
  }

  private arm(): void {
    if (this.stopped || this.opts.schedules.length === 0) return;
    const now = (this.opts.now ?? (() => new Date()))();
    const soonest = upcomingJobs(this.opts.schedules, now)[0];
    const wait = soonest ? Date.parse(soonest.next) - now.getTime() : Infinity;
    const sleep = Math.max(10, Math.min(wait + 5, this.opts.maxSleepMs ?? 60_000));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.tick();
    }, sleep);
    this.timer.unref?.();
  }
}

/** A word for /bin/sh, single-quoted; crontab also reads an unescaped % as a newline. */
function shellWord(s: string): string {
  const quoted = /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
  return quoted.replace(/%/g, "\\%");
}

/**
 * The system crontab line that runs `job` at the same times: `<cron> <env> <node> <pi-guard>
 * run-scheduled --job <job>`, or for `snapshot` `… snapshot --quiet` (see crontabPlan). System cron
 * has no seconds field, and it fires when the day of month OR the day of week matches where
 * node-cron needs both: such expressions get a note instead of, or beside, the line.
 */
export function crontabLine(s: Schedule, program: { node: string; bin: string }, env: Record<string, string>): { line?: string; note?: string } {
  const fields = s.cron.trim().split(/\s+/);
  if (fields.length === 6) return { note: `"${s.cron}" has a seconds field, which system cron does not have` };
  const vars = Object.entries(env).map(([k, v]) => `${k}=${shellWord(v)}`);
  const command = s.job === "snapshot" ? ["snapshot", "--quiet"] : ["run-scheduled", "--job", s.job];
  const line = [fields.join(" "), ...vars, shellWord(program.node), shellWord(program.bin), ...command].join(" ");
  const restricted = (f: string) => f !== "*" && f !== "?";
  const note = restricted(fields[2]) && restricted(fields[4])
    ? "both day of month and day of week are set: system cron runs when either matches, pi-guard's schedule only when both do"
    : undefined;
  return { line, note };
}

/** How often system cron snapshots when the config has no "snapshot" schedule. */
export const CRON_SNAPSHOT_DEFAULT = "*/5 * * * *";

export interface CrontabPlan {
  /** Every line to paste into a crontab, the snapshot line first. */
  lines: string[];
  /** The snapshot line: the config's "snapshot" schedule, or every 5 minutes when it has none. */
  snapshot: { cron: string; line: string | null; fromConfig: boolean; note: string | null };
}

/**
 * The crontab for a machine without a watcher. The configured jobs alone would give retention and
 * checks but no backup at all, so a snapshot line is always there: the config's own "snapshot"
 * schedule (every minute, the finest cron has, if it has a seconds field), or every 5 minutes,
 * minutes on which the default schedules never fire. It runs `pi-guard snapshot`, not
 * `run-scheduled`: that takes only the repository's append lock, never the schedule lock, so a long
 * `check-read-data` does not turn each snapshot in its shadow into "another pi-guard is running".
 */
export function crontabPlan(schedules: Schedule[], program: { node: string; bin: string }, env: Record<string, string>): CrontabPlan {
  const configured = schedules.find((s) => s.job === "snapshot");
  let snapshot: CrontabPlan["snapshot"];
  if (configured && configured.cron.trim().split(/\s+/).length === 6) {
    const line = crontabLine({ job: "snapshot", cron: "* * * * *" }, program, env).line!;
    snapshot = { cron: "* * * * *", line, fromConfig: true, note: `"${configured.cron}" has a seconds field, which system cron does not have: every minute instead` };
  } else {
    const cron = configured?.cron ?? CRON_SNAPSHOT_DEFAULT;
    const made = crontabLine({ job: "snapshot", cron }, program, env);
    snapshot = { cron, line: made.line ?? null, fromConfig: !!configured, note: made.note ?? null };
  }
  const others = schedules.filter((s) => s.job !== "snapshot").map((s) => crontabLine(s, program, env).line);
  return { lines: [snapshot.line, ...others].filter((l): l is string => !!l), snapshot };
}
