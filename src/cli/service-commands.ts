import type { Command } from "commander";
import { context, type Context } from "./context.js";
import { EXIT, formatBytes, info, printJson, table, warn } from "./output.js";
import { formatLocalTime } from "../present/time.js";
import { SCHEDULED_JOBS } from "../config/config.js";
import type { StatusSent } from "../library/service.js";
import type { StatusReport } from "../watch/status.js";

/** "3d 4h", "2h 5m", "4m 10s", "850 ms". */
export function formatAge(ms: number): string {
  if (ms < 0) return `in the future (${formatAge(-ms)})`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.floor(ms / 1000);
  const parts: [number, string][] = [[Math.floor(s / 86400), "d"], [Math.floor((s % 86400) / 3600), "h"], [Math.floor((s % 3600) / 60), "m"], [s % 60, "s"]];
  const first = parts.findIndex(([n]) => n > 0);
  return parts.slice(first, first + 2).filter(([n]) => n > 0).map(([n, u]) => `${n}${u}`).join(" ");
}

const both = (iso: string) => `${formatLocalTime(new Date(iso)).replace("T", " ")} (${iso.replace(/\.\d+Z$/, "Z")})`;

export function registerOpsCommands(program: Command): void {
  registerStatus(program);
  registerSchedule(program);
  registerRunScheduled(program);
  registerService(program);
}

function registerStatus(program: Command): void {
  program
    .command("status")
    .description("is everything backed up? the last snapshot and its age, the watcher, the mirrors, the repository, the next jobs")
    .option("--max-age <duration>", "unhealthy when the last good snapshot, or a mirror, is older than this (e.g. 90s, 15m, 1h, 2d; default: config health.maxAge / health.mirrorMaxLag)")
    .option("--alert", "run the config's alerts.command when health changed since the last alert (for cron without a watcher)")
    .option("--agent <name>", "also whether this agent (pi, claude, …) is guarded and which good snapshot holds it")
    .addHelpText(
      "after",
      `
The last good snapshot is the newest one that is not an import, a pre-restore snapshot or a
suspected loss ("suspect-loss": taken by watch when most files vanished at once). Works on restic
repositories too (no object counts, no mirrors there).

Exit codes: 0 healthy; 1 unhealthy, when any of these holds:
  - no good snapshot yet, or a suspected loss is pending (the newest snapshot is one, or the
    watcher reports one);
  - the last good snapshot is older than --max-age (or config health.maxAge; without either,
    age alone never fails);
  - the watcher's snapshots have been failing, or changes have waited unsaved, for longer than
    health.stuckAfter (default the larger of 2 min and 2 x watch.remoteBatchMs); or the watcher
    is hung (its state file not rewritten for 5 min);
  - a mirror lacks a snapshot for longer than --max-age (or health.mirrorMaxLag, default 15 min),
    or, with no watcher running, cannot be reached.
A repository that cannot be opened is exit 1 too (3 when its data is damaged).

With a watcher running, each mirror's lag is the watcher's; otherwise status lists each mirror
(at most 10 s each). --alert runs alerts.command (docs/OPERATIONS.md) when the set of problems
differs from the last one alerted, remembered in the state dir; while a watcher runs, the watcher
sends the alerts and --alert sends none.

Examples:
  $ pi-guard status
  $ pi-guard status --max-age 1h --json
  $ pi-guard status --agent claude
  $ pi-guard status --max-age 15m -q || notify-send "pi-guard: backups are behind"
  */10 * * * * pi-guard status --alert -q`,
    )
    .action(async (opts: StatusFlags, cmd: Command) => {
      const ctx = context(cmd);
      const { checkStatus } = await import("../library/service.js");
      const { report, sent } = await checkStatus(ctx.config, () => ctx.engine(), opts);
      printStatus(ctx, report, sent);
    });
}

export interface StatusFlags {
  maxAge?: string;
  alert?: boolean;
  agent?: string;
}

/** Print a status report (both engines) and the alert sent with it, and set the exit code. */
export function printStatus(ctx: Context, r: StatusReport, sent: StatusSent | undefined): void {
  if (!r.healthy) process.exitCode = EXIT.failure;
  if (ctx.out.json) return printJson(sent ? { ...r, alert: sent } : r);
  for (const p of r.problems) warn(p);
  if (sent?.outcome && !sent.outcome.run.ok) warn(`the alert command failed: ${sent.outcome.run.error}`);
  const rows: string[][] = [];
  const snap = (s: { id: string; time: string; ageMs: number }) => `${s.id.slice(0, 8)}  ${both(s.time)}, ${formatAge(s.ageMs)} ago`;
  const ago = (iso: string) => `${both(iso)}, ${formatAge(Date.now() - Date.parse(iso))} ago`;
  rows.push(["last good snapshot", r.lastGoodSnapshot ? snap(r.lastGoodSnapshot) : "none"]);
  const agent = r.agent;
  if (agent) rows.push([`agent ${agent.name}`, `${agent.dir}: ${agent.guarded ? "guarded" : "NOT GUARDED"}${agent.lastGoodSnapshot ? `, in ${agent.lastGoodSnapshot.id.slice(0, 8)} (${agent.lastGoodSnapshot.time})` : ", in no good snapshot"}`]);
  if (r.newestSnapshot && r.newestSnapshot.id !== r.lastGoodSnapshot?.id) {
    rows.push(["newest snapshot", `${snap(r.newestSnapshot)}${r.newestSnapshot.suspectLoss ? "  SUSPECTED LOSS" : ""}`]);
  }
  for (const c of r.cleanups ?? []) {
    for (const a of c.agents) {
      const sample = a.sample.slice(0, 5).join(", ");
      rows.push([`${a.agent} cleanup`, `${both(c.time)}: removed ${a.sessions} session file(s) older than ${a.days} days (${sample}${a.sessions > 5 ? ", ..." : ""}); kept in snapshot ${c.against.slice(0, 8)}`]);
    }
  }
  const w = r.watcher;
  if (w.state === "running") {
    const cpu = w.cpu?.percent === null || w.cpu === undefined ? "CPU too early to tell" : `CPU ${w.cpu.percent} % (last ${formatAge(w.cpu.overMs)})`;
    rows.push(["watcher", `running, pid ${w.pid}, up ${formatAge(w.uptimeMs ?? 0)}, ${cpu}, RSS ${formatBytes(w.rssBytes ?? 0)}`]);
    rows.push(["watcher snapshots", `${w.snapshots?.made ?? 0} made, ${w.snapshots?.failed ?? 0} failed`]);
    if (w.failingSince) rows.push(["watcher failing", `since ${ago(w.failingSince)} (${w.failures} attempts)`]);
    if (w.pendingSince) rows.push(["unsaved changes", `since ${ago(w.pendingSince)}`]);
    const f = w.fullScan;
    if (f) rows.push(["full scan", `${ago(f.time)}: ${f.files} files against ${f.snapshot.slice(0, 8)}, ${f.differences ? `${f.differences} differed, ${f.missed} missed by the watches${f.sample.length ? ` (${f.sample.join(", ")})` : ""}` : "no difference"}`]);
  } else rows.push(["watcher", w.message]);
  if (w.lastError) rows.push(["watcher last error", `${w.lastError.time}: ${w.lastError.message}`]);
  const requests = (q: NonNullable<typeof w.requests>) => `${q.puts} PUT, ${q.gets} GET, ${q.lists} LIST in ${formatAge(q.overMs)}; ${q.putsPerDay === null ? `PUTs/day: ${q.why}` : `about ${q.putsPerDay} PUTs/day (extrapolated from this run)`}`;
  if (w.requests) rows.push(["watcher requests", requests(w.requests)]);
  for (const m of w.mirrorRequests ?? []) rows.push([`mirror requests`, `${m.mirror}: ${requests(m)}`]);
  for (const m of r.mirrors) rows.push(["mirror", `${m.mirror}: ${mirrorLine(m)}`]);
  const o = r.repository.objects;
  rows.push(["repository", r.engine === "restic" ? `${r.repository.location} (restic)` : r.repository.location]);
  rows.push(["snapshots", String(r.repository.snapshots)]);
  if (o) rows.push(["objects", `${o.data.count} packs, ${o.index.count} index, ${o.snapshots.count} snapshot, ${o.keys.count} key, ${o.locks.count} lock`]);
  if (r.repository.bytes !== null) rows.push(["size", formatBytes(r.repository.bytes)]);
  for (const s of r.schedules) rows.push([`next ${s.job}`, `${both(s.next)}${s.lastRun ? `; last ${s.lastRun.ok ? "ok" : "FAILED"} ${s.lastRun.start}` : ""}`]);
  rows.push(["status", r.healthy ? "healthy" : `UNHEALTHY (${r.problems.length} problem${r.problems.length === 1 ? "" : "s"})`]);
  if (sent) rows.push(["alert", sent.skipped ?? (sent.outcome ? `${sent.outcome.event} alert ${sent.outcome.run.ok ? "sent" : "FAILED"}` : "nothing changed since the last alert; none sent")]);
  info(ctx.out, table(rows));
  for (const n of r.notes) info(ctx.out, `note: ${n}`);
}

function mirrorLine(m: StatusReport["mirrors"][number]): string {
  if (m.unreachable) return `cannot be reached: ${m.unreachable}`;
  const last = m.lastShipped ? `last shipped ${m.lastShipped.id.slice(0, 8)} of ${both(m.lastShipped.time)}` : "nothing shipped yet";
  const failing = m.lastAttempt && !m.lastAttempt.ok ? `: ${m.lastAttempt.error}` : "";
  if (!m.behind) return `in sync (${last})${failing ? `; the last attempt failed${failing}` : ""}`;
  return `behind by ${m.behind} snapshot${m.behind === 1 ? "" : "s"} since ${both(m.behindSince ?? "")}${failing} (${last})`;
}

function registerSchedule(program: Command): void {
  program
    .command("schedule")
    .description("list the scheduled jobs, their next runs and last results, with equivalent crontab lines")
    .addHelpText(
      "after",
      `
Schedules live in the config file ("schedules": [{"job": "retention", "cron": "17 3 * * *"}]);
jobs: ${SCHEDULED_JOBS.join(", ")}. Times are local (TZ), as in cron. The watcher (watch)
runs them, and snapshots about a second after each change: it is the better way
(pi-guard service install --enable). Without a watcher, put the printed lines in your crontab
(crontab -e): they include a snapshot line (pi-guard snapshot --quiet) at the config's "snapshot"
schedule, or every 5 minutes when it has none, since the jobs alone back nothing up.

Examples:
  $ pi-guard schedule
  $ pi-guard schedule --json | jq '.schedules[].next[0]'`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = context(cmd);
      const { listSchedules } = await import("../library/service.js");
      const listing = await listSchedules(ctx.config);
      if (listing.stateProblem) warn(listing.stateProblem);
      const { crontab, crontabProblem: envProblem } = listing;
      const schedules = listing.schedules.map((s) => ({ ...s, next: s.next.map((d) => ({ utc: d.toISOString(), local: formatLocalTime(d) })) }));
      if (ctx.out.json) return printJson({ stateFile: listing.stateFile, schedules, crontab, crontabProblem: envProblem });
      if (schedules.length === 0) return info(ctx.out, `no schedules: "schedules" is empty in ${ctx.config.configFile}`);
      const rows = [["JOB", "CRON", "NEXT RUNS: LOCAL (UTC)", "LAST RUN"]];
      for (const s of schedules) {
        const last = s.lastRun ? `${s.lastRun.ok ? "ok" : "FAILED"} ${s.lastRun.start}: ${s.lastRun.summary}` : "never";
        const next = s.next.map((n) => both(n.utc));
        rows.push([s.job, s.cron, next[0] ?? "never", last], ...next.slice(1).map((n) => ["", "", n, ""]));
      }
      info(ctx.out, table(rows));
      info(ctx.out, `\nfor a machine without the watcher, the same jobs for system cron (crontab -e), with a snapshot line:`);
      if (envProblem || !crontab) return info(ctx.out, `  (not available: ${envProblem})`);
      // Cron leaves everything since its last snapshot unsaved; the watcher is seconds behind.
      info(ctx.out, "# the watcher is better: it snapshots about a second after each change (pi-guard service install --enable)");
      if (crontab.snapshot.note) info(ctx.out, `# snapshot: ${crontab.snapshot.note}`);
      if (crontab.snapshot.line) info(ctx.out, crontab.snapshot.line);
      for (const s of schedules.filter((s) => s.job !== "snapshot")) {
        if (s.crontab) info(ctx.out, s.crontab);
        if (s.crontabNote) info(ctx.out, `# ${s.job}: ${s.crontabNote}`);
      }
    });
}

function registerRunScheduled(program: Command): void {
  program
    .command("run-scheduled")
    .description("run the scheduled jobs that are due now (for system cron), or one named job")
    .option("--job <name>", `run this job now, due or not (${SCHEDULED_JOBS.join(", ")})`)
    .addHelpText(
      "after",
      `
A job is due when a fire time of its cron expression has passed since its last run. A job that
never ran counts from when pi-guard first saw it, so a fresh setup waits for the first fire time.
Runs are recorded in $XDG_STATE_HOME/pi-guard/schedule.json. Jobs run one at a time; when a
watcher (or another run-scheduled) is running jobs, this one runs nothing and exits 1.

Exit codes: 0 when every job that ran succeeded, or when nothing was due (it says so: checking
was the work); 1 when a job failed or another process was running jobs; 2 for a bad job name.

Examples:
  $ pi-guard run-scheduled
  $ pi-guard run-scheduled --job check-read-data --json
  */10 * * * * /usr/bin/node /opt/pi-guard/bin/pi-guard.js run-scheduled -q`,
    )
    .action(async (opts: { job?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const { runScheduledJobs } = await import("../library/service.js");
      const { report, next } = await runScheduledJobs(ctx.config, () => ctx.engine(), { job: opts.job, lockWaitMs: ctx.lockWaitMs, onStart: (job) => info(ctx.out, `running ${job}...`) });
      const failed = report.ran.filter((r) => !r.ok);
      if (report.busy) {
        process.exitCode = EXIT.failure;
        warn(`another pi-guard (pid ${report.busy.pid}) is running scheduled jobs; nothing was run`);
      } else if (failed.length) process.exitCode = EXIT.failure;
      if (report.stateProblem) warn(report.stateProblem);
      if (ctx.out.json) return printJson({ ran: report.ran, busy: report.busy ?? null, nothingDue: !report.busy && report.ran.length === 0, next });
      for (const r of report.ran) {
        const line = `${r.ok ? "ok" : "FAILED"}  ${r.job}  (${formatAge(Date.parse(r.end) - Date.parse(r.start))}): ${r.summary}`;
        if (r.ok) info(ctx.out, line);
        else warn(line);
      }
      if (!report.busy && report.ran.length === 0) {
        info(ctx.out, next.length ? `nothing due; next: ${next[0].job} at ${both(next[0].next)}` : "nothing due: no schedules configured");
      }
    });
}

function registerService(program: Command): void {
  const service = program
    .command("service")
    .description("install, remove or inspect the background service that runs pi-guard watch")
    .addHelpText(
      "after",
      `
Linux: a systemd user unit, $XDG_CONFIG_HOME/systemd/user/pi-guard-watch.service (Restart=on-failure).
macOS: a launchd agent, ~/Library/LaunchAgents/dev.pi-guard.watch.plist (KeepAlive on failure).
The service needs a key file or a password file (PI_GUARD_PASSWORD_FILE): it cannot answer a
prompt, and the password itself is never written into the service file. For an S3 repository the
endpoint, region and profile go into the service file; the AWS keys come from a profile
(~/.aws/credentials) or, with install --save-aws-credentials, from a 0600 file it names.
install first runs the service's program with only the service's environment, and writes nothing
unless that opens the repository.

Examples:
  $ pi-guard service install --dry-run
  $ pi-guard service install --enable
  $ pi-guard service status --json
  $ pi-guard service uninstall --disable`,
    );
  const platformOpt = ["--platform <os>", "linux (systemd) or darwin (launchd); default: this machine's"] as const;

  service
    .command("install")
    .description("check that the service would open the repository, write the service file (and with --enable, load and start it)")
    .option(...platformOpt)
    .option("-n, --dry-run", "check, and print the file that would be written; write nothing")
    .option("--enable", "also run the commands that load and start it (systemctl --user / launchctl)")
    .option("--save-aws-credentials", "keep this shell's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for the service in $XDG_CONFIG_HOME/pi-guard/aws-credentials (mode 0600), which the service file names")
    .addHelpText(
      "after",
      `
The check runs the service's own node and pi-guard with nothing but the environment the service
file sets (as \`env -i\` would): the repository and each mirror must open, waiting out a storage
outage for at most 10 s. Otherwise install exits 1 with the reason and writes nothing.

S3: AWS_ENDPOINT_URL(_S3), AWS_REGION, AWS_PROFILE, AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE,
PI_GUARD_S3_PATH_STYLE and the like are copied into the service file. AWS keys set only in this
shell are refused (exit 2): put them in ~/.aws/credentials as a profile, or pass
--save-aws-credentials. Temporary keys (AWS_SESSION_TOKEN) are refused either way.

Examples:
  $ pi-guard service install
  $ AWS_PROFILE=backup pi-guard service install --enable
  $ pi-guard service install --save-aws-credentials --enable
  $ pi-guard service install --platform darwin --dry-run`,
    )
    .action(async (opts: { platform?: string; dryRun?: boolean; enable?: boolean; saveAwsCredentials?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const { installWatchService } = await import("../library/service.js");
      const { plan, replaced, enableText, awsCredentialsFile, ran, enableFailed, enableNote } = await installWatchService(ctx.config, {
        ...opts,
        onCheck: () => info(ctx.out, `checking that the service opens ${ctx.config.repo} with only its own environment...`),
      });
      if (opts.dryRun) {
        if (ctx.out.json) return printJson({ dryRun: true, platform: plan.platform, file: plan.file, content: plan.content, awsCredentialsFile, enable: enableText, ran: [] });
        info(ctx.out, `would write ${plan.file}:\n\n${plan.content}${awsCredentialsFile ? `\nand the AWS keys into ${awsCredentialsFile} (mode 0600)\n` : ""}\nthen enable it with: ${enableText}`);
        return;
      }
      if (enableFailed) process.exitCode = EXIT.failure;
      if (ctx.out.json) return printJson({ dryRun: false, platform: plan.platform, file: plan.file, replaced, content: plan.content, awsCredentialsFile, enable: enableText, ran });
      if (awsCredentialsFile) info(ctx.out, `saved this shell's AWS keys in ${awsCredentialsFile} (mode 0600)`);
      info(ctx.out, `${replaced ? "replaced" : "wrote"} ${plan.file}:\n\n${plan.content}`);
      (process.exitCode === EXIT.failure ? warn : (l: string) => info(ctx.out, l))(enableNote);
    });

  service
    .command("uninstall")
    .description("remove the service file pi-guard wrote, and its saved AWS keys (with --disable, stop it first)")
    .option(...platformOpt)
    .option("-n, --dry-run", "say what would be removed, remove nothing")
    .option("--disable", "first stop and disable it (systemctl --user disable --now / launchctl unload)")
    .addHelpText("after", `\nOnly files with pi-guard's marker line are removed.\n\nExamples:\n  $ pi-guard service uninstall --disable\n  $ pi-guard service uninstall --json`)
    .action(async (opts: { platform?: string; dryRun?: boolean; disable?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const { uninstallWatchService } = await import("../library/service.js");
      const { platform, file, awsCredentialsFile: credFile, disableText, ran } = await uninstallWatchService(ctx.config, opts);
      const withCreds = credFile !== null;
      if (opts.dryRun) {
        if (ctx.out.json) return printJson({ dryRun: true, file, removed: false, removedAwsCredentials: false, ran: [] });
        return info(ctx.out, `would remove ${file}${withCreds ? ` and ${credFile}` : ""}${opts.disable ? ` after: ${disableText}` : ""}`);
      }
      if (ctx.out.json) return printJson({ dryRun: false, file, removed: true, removedAwsCredentials: withCreds, ran });
      info(ctx.out, `removed ${file}${withCreds ? ` and ${credFile}` : ""}`);
      if (!opts.disable) info(ctx.out, `if it was running, stop it with: ${disableText}${platform === "linux" ? " (then systemctl --user daemon-reload)" : ""}`);
    });

  service
    .command("status")
    .description("is the service file installed, and is the service running?")
    .option(...platformOpt)
    .addHelpText("after", `\nExit code 0 when installed, 1 when not.\n\nExamples:\n  $ pi-guard service status\n  $ pi-guard service status --json`)
    .action(async (opts: { platform?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const { watchServiceStatus } = await import("../library/service.js");
      const { platform, file, state, installed, activity } = await watchServiceStatus(ctx.config, opts.platform);
      if (!installed) process.exitCode = EXIT.failure;
      if (ctx.out.json) return printJson({ platform, file, installed, foreign: state === "foreign", activity });
      info(
        ctx.out,
        table([
          ["service file", `${file}: ${installed ? "installed" : state === "foreign" ? "present, but not written by pi-guard" : "not installed"}`],
          [activity.tool, activity.available ? (activity.state ?? "") : `not available here`],
        ]),
      );
    });

  // What install runs, with the service's environment only: open what the watcher opens at its start.
  service
    .command("probe", { hidden: true })
    .description("open the repository and each mirror as the watcher would, then exit (run by service install)")
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = context(cmd);
      const { probeService } = await import("../library/service.js");
      const probed = await probeService(ctx.config, (o) => ctx.open(o));
      if (ctx.out.json) return printJson(probed);
      info(ctx.out, `opened ${ctx.config.repo}`);
    });
}
