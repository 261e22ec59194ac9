import type { Command } from "commander";
import { context } from "./context.js";
import { EXIT, formatBytes, warn } from "./output.js";

/** `pi-guard watch`: the long-running watcher (engine in src/watch/watcher.ts). */
export function registerWatchCommands(program: Command): void {
  program
    .command("watch")
    .description("watch the agent dir and snapshot every change after a short debounce (runs until stopped)")
    .option("--no-schedules", "do not run the scheduled jobs (config schedules) from this process; see pi-guard schedule")
    .option("--debounce <ms>", "quiet time after the last change before a snapshot (default: config watch.debounceMs, 250; a snapshot never waits more than watch.maxDelayMs, 1000, after the first change)")
    .addHelpText(
      "after",
      `
Keeps one repository open and snapshots each batch of changes to the sources (the agent dir, a
sessions dir outside it, pi-guard's metadata) once they have been quiet for the debounce, and at
most watch.maxDelayMs after the first change. Failed snapshots are logged and retried with backoff.
New folders, a restore, and files of a suspected loss coming back are checked against what is
watched (chokidar can miss a folder made inside a new one), and every watch.fullScanMs (default
5 min) the sources are compared with the last snapshot by a stat walk, a backstop for a change no
watch event reported.

If a batch would drop most of the files at once, or the sessions dir vanishes, the snapshot is
still taken but tagged "suspect-loss": \`pi-guard restore latest\` skips it and restores the last
whole state, and the state file marks the loss (\`pi-guard status\` exits non-zero) until the files
come back. To accept a deliberate deletion, run \`pi-guard snapshot --accept-loss\` once.

Log: JSON lines in $XDG_STATE_HOME/pi-guard/watch-<hash>.log (rotated); --json also prints them
to stdout. A human line per snapshot goes to stderr unless --quiet.
Signals: SIGTERM/SIGINT take the pending snapshot and exit (0 when it was saved) within 5 s;
SIGHUP reloads the config file. A second watcher of the same agent dir refuses to start.
Health: on every tick the watcher judges what \`pi-guard status\` would (a suspected loss, snapshots
failing or changes unsaved for longer than health.stuckAfter, a mirror behind by more than
health.mirrorMaxLag, the last good snapshot older than health.maxAge), writes it to the state file,
and runs the config's alerts.command on each change (docs/OPERATIONS.md).
Scheduled jobs (config "schedules": retention daily, check --read-data weekly by default) run
from the watcher, one at a time, on its open repository; --no-schedules leaves them to system
cron (\`pi-guard schedule\` prints the crontab lines).
See docs/WATCH.md.

Examples:
  $ pi-guard watch
  $ pi-guard watch --debounce 250 --quiet
  $ pi-guard watch --json | jq -c 'select(.event == "snapshot")'`,
    )
    .action(async (opts: { debounce?: string; schedules: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const human = (line: string) => {
        if (!ctx.out.quiet) warn(line);
      };
      const { openWatcher } = await import("../library/watch.js");
      const config = ctx.config;
      const running = await openWatcher({
        config,
        open: (o) => ctx.open(o),
        lockWaitMs: ctx.lockWaitMs,
        debounce: opts.debounce,
        schedules: opts.schedules,
        echo: ctx.out.json ? (line) => process.stdout.write(line + "\n") : undefined,
        onLogFailure: warn,
        onWarning: human,
        onJob: (j) => (j.ok ? human : warn)(`scheduled ${j.job}: ${j.ok ? "" : "FAILED: "}${j.summary}`),
        onReport: (r) => {
          if (r.kind === "snapshot" && r.cleanupLine) human(r.cleanupLine);
          if (r.kind === "snapshot" && r.suspect) {
            // Loud even with --quiet: this is the accident pi-guard exists for.
            warn(
              `WARNING: suspected loss: ${r.suspect.reason === "sessions" ? "every session file vanished" : r.suspect.reason === "rows" ? `a database lost most rows of its sessions table (${(r.suspect.rows ?? []).map((x) => `${x.file}: ${x.now} of ${x.before} left`).join(", ")})` : `${r.suspect.lost} of ${r.suspect.filesBefore} files vanished at once`}; ` +
                `snapshot ${r.id.slice(0, 8)} is tagged suspect-loss. \`pi-guard restore latest\` restores the last whole state; \`pi-guard snapshot --accept-loss\` accepts the deletion`,
            );
          } else if (r.kind === "snapshot") human(`snapshot ${r.id.slice(0, 8)}  ${r.files} files, ${formatBytes(r.bytesNew)} new, ${r.ms} ms`);
          else if (r.kind === "error") warn(`snapshot failed (retry in ${Math.round(r.retryInMs / 1000)} s): ${r.message}`);
          else if (r.kind === "mirror-error") {
            warn(`mirror ${r.mirror} failed (retry in ${Math.round(r.retryInMs / 1000)} s): ${r.message}; the snapshots themselves succeeded and are safe in ${config.repo}`);
          } else if (r.kind === "mirror-recovered") human(`mirror ${r.mirror} is reachable again and has the newest snapshot`);
          else if (r.kind === "recovered") human(`the files are back: snapshot ${r.id.slice(0, 8)} is whole again; suspected loss cleared`);
          else if (r.kind === "accepted") human(`snapshot ${r.id.slice(0, 8)} was taken by hand after the suspected loss: the deletion is accepted`);
          else if (r.kind === "missed") warn(`the full scan found ${r.differences} change(s) no watch event had reported (${r.sample.join(", ")}); taking a snapshot and rebuilding the watches`);
          else if (r.kind === "alert") {
            const what = r.outcome.event === "healthy" ? "healthy again" : `unhealthy: ${r.problems.map((p) => p.message).join("; ")}`;
            if (r.outcome.run.ok) human(`alert sent: ${what}`);
            else warn(`the alert command failed (${what}): ${r.outcome.run.error}`);
          }
        },
      });
      let exitCode: number = EXIT.failure;
      try {
        const stopped = new Promise<number>((resolve) => {
          let stopping = false;
          const stop = (signal: NodeJS.Signals) => {
            if (stopping) return;
            stopping = true;
            human(`${signal}: taking the pending snapshot and stopping`);
            void running
              .stop()
              .then((r) => {
                if (!r.flushed) warn(`stopped with changes not in any snapshot: ${r.error ?? "unknown error"}`);
                resolve(r.flushed ? EXIT.ok : EXIT.failure);
              })
              .catch((err: unknown) => {
                warn(`stopping failed: ${(err as Error).message}`);
                resolve(EXIT.failure);
              });
          };
          process.on("SIGTERM", stop);
          process.on("SIGINT", stop);
          process.on("SIGHUP", () => {
            const failed = (err: unknown) => {
              running.log("error", "error", { where: "reload", message: (err as Error).message });
              warn(`SIGHUP: config not reloaded: ${(err as Error).message}`);
            };
            try {
              // The config file is hostile input too: a bad one keeps the running config.
              running.reload(context(cmd).config).then(() => human("SIGHUP: config reloaded"), failed);
            } catch (err) {
              failed(err);
            }
          });
        });
        // A signal during start-up (chokidar still walking a big tree) must not wait for it.
        const started = await Promise.race([running.start().then(() => true), stopped.then(() => false)]);
        if (started) human(`watching ${running.roots.join(", ")} (debounce ${running.watcher.debounceMs} ms; pid ${process.pid})`);
        exitCode = await stopped;
      } finally {
        await running.close();
      }
      process.exitCode = exitCode;
      // Whatever still holds the event loop (a seal worker, a stuck read) must not outlive the 5 s promise.
      setTimeout(() => process.exit(exitCode), 300).unref();
    });
}
