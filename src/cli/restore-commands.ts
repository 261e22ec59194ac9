import type { Command } from "commander";
import { context } from "./context.js";
import { EXIT, formatBytes, formatDuration, info, printJson, table, warn } from "./output.js";
import { Progress } from "./progress.js";

interface RestoreFlags {
  target?: string;
  path?: string[];
  session?: string;
  dryRun?: boolean;
  delete?: boolean;
}

export function registerRestoreCommands(program: Command): void {
  program
    .command("restore")
    .description("put back the agent dir (or part of it) as of a time or snapshot")
    .argument("<when>", 'latest, a snapshot id, an ISO time, or e.g. "2h ago", "yesterday 14:00"')
    .option("-t, --target <dir>", "restore into this folder instead of in place")
    .option("-p, --path <glob...>", "only files matching these globs (relative to the agent dir)")
    .option("-s, --session <id>", "only the session with this id (or id prefix)")
    .option("-n, --dry-run", "show what would change, change nothing")
    .option("--delete", "also delete files that the snapshot does not have (within the restored scope)")
    .addHelpText(
      "after",
      `
<when> picks the newest snapshot at or before that moment. An in-place restore first takes a
snapshot of what is there now (tag pre-restore), swaps each file in atomically and keeps modes
(0600 for auth.json). It never deletes files unless --delete is given. To undo it, run the
command it prints: a restore of its pre-restore snapshot with --delete.

Examples:
  $ pi-guard restore latest
  $ pi-guard restore "2h ago" --dry-run
  $ pi-guard restore 2026-11-30T09:00 --target /tmp/pi-then
  $ pi-guard restore latest --session 0b9c5c3e
  $ pi-guard restore latest --path 'sessions/**' --path auth.json`,
    )
    .action(async (when: string, opts: RestoreFlags, cmd: Command) => {
      const ctx = context(cmd);
      const repo = await ctx.open();
      const { restore } = await import("../engine.js");
      const progress = new Progress(!ctx.out.json && !ctx.out.quiet);
      const result = await restore(ctx.config, repo, when, {
        targetDir: opts.target,
        paths: opts.path,
        session: opts.session,
        dryRun: opts.dryRun,
        deleteExtra: opts.delete,
        lockWaitMs: ctx.lockWaitMs,
        onProgress: (p) => progress.update(`${p.files} files, ${formatBytes(p.bytes)}  ${p.current}`),
      });
      progress.done();
      const { report } = result;
      const counts = { create: 0, replace: 0, unchanged: 0, delete: 0 };
      for (const f of report.files) counts[f.action]++;
      if (ctx.out.json) {
        printJson({
          snapshotId: result.snapshot.id,
          snapshotTime: result.snapshot.snapshot.time,
          dryRun: !!opts.dryRun,
          undoSnapshot: result.undoSnapshot ?? null,
          ...counts,
          bytesWritten: report.bytesWritten,
          durationMs: report.durationMs,
          failed: report.failed,
          files: report.files.filter((f) => f.action !== "unchanged").map(({ root, path, action, size }) => ({ root, path, action, size })),
        });
      } else {
        if (opts.dryRun) {
          for (const f of report.files) if (f.action !== "unchanged") info(ctx.out, `${f.action.padEnd(8)} ${f.path}`);
        }
        info(
          ctx.out,
          table([
            ["snapshot", `${result.snapshot.id.slice(0, 8)}  ${result.snapshot.snapshot.time}`],
            [opts.dryRun ? "would" : "files", `${counts.create} created, ${counts.replace} replaced, ${counts.unchanged} unchanged${counts.delete ? `, ${counts.delete} deleted` : ""}`],
            ["written", `${formatBytes(report.bytesWritten)} in ${formatDuration(report.durationMs)}`],
          ]),
        );
        if (result.undoSnapshot) info(ctx.out, `undo with: pi-guard restore ${result.undoSnapshot.slice(0, 8)} --delete`);
      }
      if (report.failed.length) {
        for (const f of report.failed) warn(`not restored: ${f.path}: ${f.error}`);
        warn(`${report.failed.length} file(s) were not restored because their data is damaged; run \`pi-guard check --read-data\``);
        process.exitCode = EXIT.damaged;
      }
    });

  program
    .command("archive")
    .description("write a plain .tar.gz of the agent dir as of a time, readable by any tar")
    .argument("<when>", 'latest, a snapshot id, an ISO time, or e.g. "2h ago"')
    .requiredOption("-o, --output <file>", "the .tar.gz to write (- for stdout)")
    .option("-p, --path <glob...>", "only files matching these globs")
    .addHelpText("after", `\nExamples:\n  $ pi-guard archive latest -o pi-agent.tar.gz\n  $ pi-guard archive "yesterday 18:00" -o - | tar tz`)
    .action(async (when: string, opts: { output: string; path?: string[] }, cmd: Command) => {
      const ctx = context(cmd);
      const repo = await ctx.open();
      const { chooseSnapshot } = await import("../engine.js");
      const { writeArchive } = await import("../restore/archive.js");
      const { withLock } = await import("../repo/lock.js");
      const { record, result } = await withLock(repo, { exclusive: false, command: "archive", waitMs: ctx.lockWaitMs }, async () => {
        const record = await chooseSnapshot(repo, when);
        return { record, result: await writeArchive(repo, record, opts.output, { paths: opts.path }) };
      });
      if (opts.output === "-") return;
      if (ctx.out.json) printJson({ snapshotId: record.id, output: opts.output, ...result });
      else info(ctx.out, `wrote ${opts.output}: ${result.files} files, ${formatBytes(result.bytes)} from snapshot ${record.id.slice(0, 8)}`);
    });

  program
    .command("demo")
    .description("re-enact the npm reify that deleted a user's sessions, in a temp folder, and restore them")
    .option("--size <MiB>", "size of the demo agent dir in MiB", "24")
    .option("--keep", "keep the temp folder")
    .action(async (opts: { size: string; keep?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const { runDemo } = await import("../demo.js");
      const result = await runDemo({ sizeMiB: Number(opts.size), keep: !!opts.keep, log: (l: string) => info(ctx.out, l) });
      if (ctx.out.json) printJson(result);
      if (!result.identical) process.exitCode = EXIT.failure;
    });
}
