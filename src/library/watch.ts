/**
 * The long-running watcher, as `pi-guard watch` starts it: one watcher per agent dir (a second
 * one is refused), the repository kept open behind a request counter, the JSON log, the scheduled
 * jobs on that open repository, and the loss guard of every batch (src/watch/watcher.ts). The
 * caller decides only what it is told and when it stops; nothing here prints or handles signals.
 */
import type { Config } from "../config/config.js";
import type { JobOutcome } from "../watch/schedule.js";
import type { Repository } from "../repo/repository.js";
import type { OpenTargetOptions } from "../targets/open.js";
import type { StopResult, Watcher, WatchReport } from "../watch/watcher.js";

export interface WatchOptions {
  config: Config;
  /** Opens the repository (with the storage wrapper the watcher counts requests through). */
  open(opts: OpenTargetOptions): Promise<Repository>;
  lockWaitMs: number;
  /** Quiet time after the last change, in ms, as typed (default: the config's watch.debounceMs). */
  debounce?: string;
  /** Run the config's scheduled jobs from this watcher (default true). */
  schedules?: boolean;
  /** Each JSON line of the log, as written (`watch --json` prints them). */
  echo?: (line: string) => void;
  /** What the user is told: a repository warning. */
  onWarning?: (message: string) => void;
  /** A log file that cannot be written. */
  onLogFailure?: (message: string) => void;
  /** Each snapshot, failure, suspected loss, mirror and alert event. */
  onReport?: (report: WatchReport) => void;
  /** Each scheduled job that ran (it is in the log already). */
  onJob?: (job: JobOutcome) => void;
}

export interface RunningWatcher {
  readonly watcher: Watcher;
  /** What the sources are (the agent dir, a sessions dir outside it, pi-guard's metadata). */
  readonly roots: string[];
  /** Walk the sources and start watching them. */
  start(): Promise<void>;
  /** Take the pending snapshot and stop, within `timeoutMs`. */
  stop(timeoutMs?: number): Promise<StopResult>;
  /** A new config (the file re-read); a bad one is refused and the running config kept. */
  reload(config: Config): Promise<void>;
  /** A line in the watcher's JSON log. */
  log(level: "info" | "warn" | "error", event: string, fields: Record<string, unknown>): void;
  /** Close the log and release the watcher lock (after stop). */
  close(): Promise<void>;
}

/** `--debounce`: a whole number of ms from 0 to 600000, or the config's. */
export async function parseDebounce(value: string | undefined): Promise<number | undefined> {
  const debounceMs = value === undefined ? undefined : Number(value);
  if (debounceMs !== undefined && (!Number.isSafeInteger(debounceMs) || debounceMs < 0 || debounceMs > 600_000)) {
    const { RepoError } = await import("../repo/errors.js");
    throw new RepoError(`--debounce must be a whole number of milliseconds from 0 to 600000, not "${value}"`, "usage");
  }
  return debounceMs;
}

/** Set up the watcher of `config.agentDir` (refused when one runs already); it starts with start(). */
export async function openWatcher(opts: WatchOptions): Promise<RunningWatcher> {
  const debounceMs = await parseDebounce(opts.debounce);
  const [{ assertRepoOutsideAgentDir }, { watcherFiles }, { acquireWatcherLock }, { WatchLog }, { Watcher }] = await Promise.all([
    import("../engine.js"),
    import("../watch/state.js"),
    import("../watch/watcher-lock.js"),
    import("../watch/log.js"),
    import("../watch/watcher.js"),
  ]);
  const [{ Scheduler, upcomingJobsFrom }, { jobContext, runJob }] = await Promise.all([import("../watch/schedule.js"), import("../watch/jobs.js")]);
  const config = opts.config;
  assertRepoOutsideAgentDir(config);
  const files = watcherFiles(config.stateDir, config.agentDir);
  const lock = await acquireWatcherLock(files.lock, config.agentDir);
  try {
    const { CountingTarget } = await import("../targets/counting.js");
    let counting: InstanceType<typeof CountingTarget> | undefined;
    const repo = await opts.open({ wrapStorage: (t, { multipart }) => (counting = new CountingTarget(t, multipart)) });
    const log = new WatchLog({ file: files.log, maxBytes: config.watch.log.maxBytes, keep: config.watch.log.keep, echo: opts.echo, onFailure: opts.onLogFailure });
    repo.onWarning = (message) => {
      log.write("warn", "warning", { message });
      opts.onWarning?.(message);
    };
    const { engineOver } = await import("../engine/open.js");
    const jobs = jobContext(config, () => engineOver(config, repo), opts.lockWaitMs);
    const upcoming = upcomingJobsFrom(config.schedules);
    const scheduler =
      opts.schedules === false
        ? undefined
        : Object.assign(
            new Scheduler({
              schedules: config.schedules,
              stateDir: config.stateDir,
              run: (job) => runJob(job, jobs),
              onStart: (job) => log.write("info", "job-start", { job }),
              onRound: (r) => {
                if ("error" in r) return log.write("error", "error", { where: "schedule", message: r.error });
                for (const j of r.ran) {
                  log.write(j.ok ? "info" : "error", "job", { job: j.job, ok: j.ok, summary: j.summary });
                  opts.onJob?.(j);
                }
              },
            }),
            { nextJobs: () => upcoming(new Date()) },
          );
    const watcher = new Watcher({
      config,
      repo,
      log,
      scheduler,
      stateFile: files.state,
      alertFile: files.alert,
      requestFile: files.request,
      socketFile: files.socket,
      debounceMs,
      requestCounts: () => counting!.counts,
      onReport: opts.onReport,
    });
    return {
      watcher,
      roots: config.roots.map((r) => r.path),
      start: () => watcher.start(),
      stop: (timeoutMs = 4500) => watcher.stop(timeoutMs),
      reload: (next) => watcher.reload(next),
      log: (level, event, fields) => log.write(level, event, fields),
      async close() {
        try {
          await log.close();
        } finally {
          await lock.release();
        }
      },
    };
  } catch (err) {
    await lock.release();
    throw err;
  }
}
