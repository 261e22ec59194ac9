/**
 * Operations without a watcher of their own: `status` (is everything backed up, and the alert
 * when that changed), the scheduled jobs (`schedule`, `run-scheduled`) and the background service
 * that runs the watcher (`service install|uninstall|status|probe`). Each takes parsed options and
 * returns what it found or did; what it refuses (a bad duration, an unknown job or platform, a
 * service file pi-guard did not write, a service that cannot open the repository) it refuses here.
 */
import type { Config, ScheduledJob } from "../config/config.js";
import type { Engine } from "../engine/types.js";
import type { Repository } from "../repo/repository.js";
import type { OpenTargetOptions } from "../targets/open.js";
import type { AlertOutcome } from "../watch/alert.js";
import type { CrontabPlan, JobRun, RunScheduledReport } from "../watch/schedule.js";
import type { CommandRun, ServicePlan, ServicePlatform } from "../watch/service.js";
import type { StatusReport } from "../watch/status.js";

export interface StatusRequest {
  /** Unhealthy when the last good snapshot, or a mirror, is older than this ("90s", "15m", "1h", "2d"). */
  maxAge?: string;
  /** Run the config's alerts.command when health changed since the last alert. */
  alert?: boolean;
  /** Also whether this agent is guarded, and which good snapshot holds it. */
  agent?: string;
}

export interface StatusSent {
  outcome?: AlertOutcome;
  /** Why no alert was sent (a watcher sends them). */
  skipped?: string;
}

/** The status request checked: usage errors before any repository is opened. */
export async function statusOptions(config: Pick<Config, "alerts" | "configFile">, req: StatusRequest): Promise<{ maxAgeMs?: number; alert: boolean; agent?: string }> {
  const { RepoError } = await import("../repo/errors.js");
  if (req.alert && !config.alerts) throw new RepoError(`--alert: there is no alerts.command in ${config.configFile} (docs/OPERATIONS.md)`, "usage");
  let maxAgeMs: number | undefined;
  if (req.maxAge !== undefined) {
    const { parseDuration } = await import("../watch/health.js");
    maxAgeMs = parseDuration(req.maxAge);
    if (maxAgeMs === undefined) throw new RepoError(`--max-age must be a duration such as 90s, 15m, 1h or 2d, not "${req.maxAge}"`, "usage");
  }
  const agent = req.agent === undefined ? undefined : (await import("../agents/registry.js")).agentByName(req.agent).name;
  return { ...(maxAgeMs !== undefined ? { maxAgeMs } : {}), alert: !!req.alert, ...(agent !== undefined ? { agent } : {}) };
}

/** `status` on either engine; with `alert`, the alert sent when the problems changed. */
export async function checkStatus(config: Config, engine: () => Promise<Pick<Engine, "status">>, req: StatusRequest): Promise<{ report: StatusReport; sent?: StatusSent }> {
  const { maxAgeMs, alert, agent } = await statusOptions(config, req);
  const report = await (await engine()).status({ maxAgeMs, agent });
  const sent = alert ? await (await import("../watch/alert.js")).statusAlert(config, report) : undefined;
  return { report, ...(sent ? { sent } : {}) };
}

export interface ScheduleListing {
  stateFile: string;
  schedules: { job: ScheduledJob; cron: string; next: Date[]; lastRun: JobRun | null; crontab: string | null; crontabNote: string | null }[];
  /** The same jobs for system cron, with a snapshot line; null when the service environment cannot be made. */
  crontab: CrontabPlan | null;
  crontabProblem: string | null;
  /** The schedule state file could not be read (it is started afresh). */
  stateProblem?: string;
}

/** `schedule`: each job's next `count` runs and last result, and the crontab lines of a machine without a watcher. */
export async function listSchedules(config: Config, now = new Date(), count = 3): Promise<ScheduleListing> {
  const [{ crontabLine, crontabPlan, nextRuns, readScheduleState, scheduleStateFile }, { programPaths, unattendedEnvironment }, { RepoError }] = await Promise.all([
    import("../watch/schedule.js"),
    import("../watch/service.js"),
    import("../repo/errors.js"),
  ]);
  const { state, problem } = await readScheduleState(config.stateDir);
  let env: Record<string, string> | undefined;
  let envProblem: string | null = null;
  try {
    env = await unattendedEnvironment(config);
  } catch (err) {
    if (!(err instanceof RepoError)) throw err;
    envProblem = err.message;
  }
  const programs = programPaths();
  const schedules = nextRuns(config.schedules, now, count).map((r) => {
    const cron = env ? crontabLine({ job: r.job, cron: r.cron }, programs, env) : {};
    return { job: r.job, cron: r.cron, next: r.next, lastRun: state.jobs[r.job]?.lastRun ?? null, crontab: cron.line ?? null, crontabNote: cron.note ?? null };
  });
  return {
    stateFile: scheduleStateFile(config.stateDir),
    schedules,
    crontab: env ? crontabPlan(config.schedules, programs, env) : null,
    crontabProblem: envProblem,
    ...(problem ? { stateProblem: problem } : {}),
  };
}

/**
 * `run-scheduled`: the jobs due now (or `job`, due or not), one at a time, each recorded; none
 * when another process runs jobs (report.busy). `next`: the jobs to come.
 */
export async function runScheduledJobs(
  config: Config,
  engine: () => Promise<Engine & { repository?: () => Promise<Repository> }>,
  opts: { job?: string; lockWaitMs: number; onStart?: (job: ScheduledJob) => void },
): Promise<{ report: RunScheduledReport; next: { job: ScheduledJob; cron: string; next: string }[] }> {
  const { SCHEDULED_JOBS } = await import("../config/config.js");
  if (opts.job !== undefined && !(SCHEDULED_JOBS as readonly string[]).includes(opts.job)) {
    const { RepoError } = await import("../repo/errors.js");
    throw new RepoError(`--job must be one of ${SCHEDULED_JOBS.join(", ")}, not "${opts.job}"`, "usage");
  }
  const [{ runScheduled, upcomingJobs }, { jobContext, runJob }] = await Promise.all([import("../watch/schedule.js"), import("../watch/jobs.js")]);
  const jobCtx = jobContext(config, engine, opts.lockWaitMs);
  const report = await runScheduled({ schedules: config.schedules, stateDir: config.stateDir, only: opts.job as ScheduledJob | undefined, run: (job) => runJob(job, jobCtx), onStart: opts.onStart });
  return { report, next: upcomingJobs(config.schedules, new Date()) };
}

/** `--platform`: linux (systemd) or darwin (launchd); undefined: this machine's. */
export async function parsePlatform(p: string | undefined): Promise<ServicePlatform | undefined> {
  if (p === undefined) return undefined;
  if (p !== "linux" && p !== "darwin") {
    const { RepoError } = await import("../repo/errors.js");
    throw new RepoError(`--platform must be linux or darwin, not "${p}"`, "usage");
  }
  return p;
}

export interface ServiceInstall {
  plan: ServicePlan;
  replaced: boolean;
  /** The commands that load and start it, as one shell line. */
  enableText: string;
  awsCredentialsFile: string | null;
  /** What enabling ran (with `enable`). */
  ran: CommandRun[];
  /** Asked to enable and it did not happen: the install is not whole. */
  enableFailed: boolean;
  /** What became of enabling, in words (how to, done, or why not). */
  enableNote: string;
}

/**
 * `service install`: plan the service file, check that the service's own program opens the
 * repository with only the service's environment (nothing is written otherwise), write it, and
 * with `enable` load and start it.
 */
export async function installWatchService(
  config: Config,
  opts: { platform?: string; dryRun?: boolean; enable?: boolean; saveAwsCredentials?: boolean; onCheck?: () => void },
): Promise<ServiceInstall> {
  const { planService, installService, haveCommand, runCommands } = await import("../watch/service.js");
  const plan = await planService(config, { platform: await parsePlatform(opts.platform), saveAwsCredentials: opts.saveAwsCredentials });
  const enableText = plan.enable.map((c) => c.join(" ")).join(" && ");
  const base = { plan, enableText, awsCredentialsFile: plan.awsCredentials?.file ?? null };
  opts.onCheck?.();
  const { replaced } = await installService(plan, { dryRun: opts.dryRun });
  if (opts.dryRun) return { ...base, replaced, ran: [], enableFailed: false, enableNote: `enable it with: ${enableText}` };
  if (!opts.enable) return { ...base, replaced, ran: [], enableFailed: false, enableNote: `enable it with: ${enableText}` };
  if (!haveCommand(plan.enable[0][0])) return { ...base, replaced, ran: [], enableFailed: true, enableNote: `${plan.enable[0][0]} is not available here: nothing was enabled; on the machine that runs it: ${enableText}` };
  const ran = runCommands(plan.enable);
  const bad = ran.find((r) => !r.ok);
  return { ...base, replaced, ran, enableFailed: !!bad, enableNote: bad ? `\`${bad.command}\` failed: ${bad.output.split("\n")[0]}` : "enabled and started" };
}

export interface ServiceUninstall {
  platform: ServicePlatform;
  file: string;
  /** The AWS keys file install saved, when there is one of pi-guard's. */
  awsCredentialsFile: string | null;
  /** The commands that stop and disable it, as one shell line. */
  disableText: string;
  removed: boolean;
  ran: CommandRun[];
}

/** `service uninstall`: only a file with pi-guard's marker line goes (and its saved AWS keys); with `disable`, stopped first. */
export async function uninstallWatchService(config: Config, opts: { platform?: string; dryRun?: boolean; disable?: boolean }): Promise<ServiceUninstall> {
  const [{ awsCredentialsFile, defaultPlatform, serviceFile, ownedFileState, removeOwnedFile, haveCommand, runCommands, SYSTEMD_UNIT }, { RepoError }] = await Promise.all([import("../watch/service.js"), import("../repo/errors.js")]);
  const platform = (await parsePlatform(opts.platform)) ?? defaultPlatform();
  const file = serviceFile(platform, config);
  const state = await ownedFileState(file);
  if (state === "absent") throw new RepoError(`no service file at ${file}: nothing to remove`, "not-found");
  if (state === "foreign") throw new RepoError(`${file} was not written by pi-guard; it is left alone`, "exists");
  const credFile = awsCredentialsFile(config);
  const withCreds = (await ownedFileState(credFile)) === "ours";
  const disable = platform === "darwin" ? [["launchctl", "unload", "-w", file]] : [["systemctl", "--user", "disable", "--now", SYSTEMD_UNIT.replace(/\.service$/, "")]];
  const result = { platform, file, awsCredentialsFile: withCreds ? credFile : null, disableText: disable.map((c) => c.join(" ")).join(" && ") };
  if (opts.dryRun) return { ...result, removed: false, ran: [] };
  let ran: CommandRun[] = [];
  if (opts.disable) {
    if (!haveCommand(disable[0][0])) throw new RepoError(`${disable[0][0]} is not available here: nothing was disabled or removed`, "not-found");
    ran = runCommands(disable);
    const bad = ran.find((r) => !r.ok);
    if (bad) throw new RepoError(`\`${bad.command}\` failed (${bad.output.split("\n")[0]}); ${file} was kept`, "io");
  }
  await removeOwnedFile(file);
  if (withCreds) await removeOwnedFile(credFile);
  return { ...result, removed: true, ran };
}

/** `service status`: is the service file pi-guard's and installed, and what the service manager says. */
export async function watchServiceStatus(config: Config, platformFlag?: string) {
  const { defaultPlatform, serviceFile, ownedFileState, serviceActivity } = await import("../watch/service.js");
  const platform = (await parsePlatform(platformFlag)) ?? defaultPlatform();
  const file = serviceFile(platform, config);
  const state = await ownedFileState(file);
  return { platform, file, state, installed: state === "ours", activity: serviceActivity(platform) };
}

/**
 * What `service install` runs with the service's environment only: open the repository and each
 * mirror as the watcher does at its start, waiting out a storage outage for a short while only.
 */
export async function probeService(config: Config, open: (opts: OpenTargetOptions) => Promise<Repository>): Promise<{ repo: string; id: string; mirrors: string[] }> {
  const [{ assertRepoOutsideAgentDir, openTarget }, { CHECK_RETRY_MS }, { RepoError }] = await Promise.all([import("../engine.js"), import("../watch/service.js"), import("../repo/errors.js")]);
  assertRepoOutsideAgentDir(config);
  const retry = { maxMs: CHECK_RETRY_MS };
  const repo = await open({ retry });
  for (const mirror of config.mirrors) {
    try {
      await openTarget({ repo: mirror, retry: config.retry }, process.env, { retry }).head("config");
    } catch (err) {
      throw err instanceof RepoError ? new RepoError(`mirror ${mirror}: ${err.message}`, err.kind) : err;
    }
  }
  return { repo: config.repo, id: repo.config.id, mirrors: config.mirrors };
}
