import type { Command } from "commander";
import { context, type Context } from "./context.js";
import type { RestoreReport } from "../restore/restorer.js";
import { EXIT, formatBytes, formatDuration, info, printJson, table, warn } from "./output.js";
import { Progress } from "./progress.js";
import { formatLocalTime, LOCAL_TIME_NOTE, type ResolvedTime } from "../restore/select.js";

export interface RestoreFlags {
  target?: string;
  path?: string[];
  session?: string;
  dryRun?: boolean;
  delete?: boolean;
  host?: string;
}

/** A path from a snapshot can hold control characters (a terminal escape, say): show them escaped. */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** What a restore did (or, dry, would do), and a non-zero exit for what it could not do. Shared with the restic engine. */
export function printRestoreResult(
  ctx: Context,
  opts: RestoreFlags,
  result: { snapshot: { id: string; snapshot: { time: string; host: string } }; report: RestoreReport; undoSnapshot?: string; resolved?: ResolvedTime },
  /** The flags that undo it: --delete removes the files the restore created (the restic engine has no --delete). */
  undoFlags = " --delete",
): void {
  const { report } = result;
  const counts = { create: 0, replace: 0, unchanged: 0, delete: 0 };
  for (const f of report.files) counts[f.action]++;
  if (ctx.out.json) {
    printJson({
      snapshotId: result.snapshot.id,
      snapshotTime: result.snapshot.snapshot.time,
      host: result.snapshot.snapshot.host,
      resolved: result.resolved ?? null,
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
      for (const f of report.files) if (f.action !== "unchanged") info(ctx.out, `${f.action.padEnd(8)} ${printable(f.path)}`);
    }
    info(
      ctx.out,
      table([
        ...(result.resolved ? [["time", `"${result.resolved.input}" = ${result.resolved.utc} UTC = ${result.resolved.local} local`]] : []),
        ["snapshot", `${result.snapshot.id.slice(0, 8)}  ${result.snapshot.snapshot.time} (${formatLocalTime(new Date(result.snapshot.snapshot.time))} local), host ${result.snapshot.snapshot.host}`],
        [opts.dryRun ? "would" : "files", `${counts.create} created, ${counts.replace} replaced, ${counts.unchanged} unchanged${counts.delete ? `, ${counts.delete} deleted` : ""}`],
        ["written", `${formatBytes(report.bytesWritten)} in ${formatDuration(report.durationMs)}`],
      ]),
    );
    if (result.undoSnapshot) info(ctx.out, `undo with: pi-guard restore ${result.undoSnapshot.slice(0, 8)}${undoFlags}`);
  }
  if (report.failed.length) {
    for (const f of report.failed) warn(`not restored: ${printable(f.path)}: ${printable(f.error)}`);
    const damaged = report.failed.some((f) => f.kind === "damaged");
    warn(`${report.failed.length} path(s) were not restored${damaged ? "; for damaged data run `pi-guard check --read-data`" : ""}`);
    process.exitCode = damaged ? EXIT.damaged : EXIT.failure;
  }
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
    .option("--host <host>", "choose among this host's snapshots (default: this host's, when several hosts share the repository)")
    .addHelpText(
      "after",
      `
<when> picks the newest snapshot at or before that moment. An in-place restore that will change
something first takes a snapshot of what is there now (tag pre-restore), swaps each file in
atomically and keeps modes (0600 for auth.json). It never deletes files unless --delete is
given, and never replaces a folder. To undo it, run the command it prints: a restore of its
pre-restore snapshot with --delete. A path it refuses (unsafe, or a folder in the way) or
cannot write is named, and the exit status is non-zero (3 when the data is damaged).

${LOCAL_TIME_NOTE}
A moment in the future is an error. The moment <when> was read as is printed in UTC and local time.

Several hosts in one repository: <when> is chosen among the snapshots of --host, or, without it,
of this host (PI_GUARD_HOST, else the machine's name); a repository whose snapshots are all of one
host needs no --host. If there are several hosts and none is this one, restore refuses and lists
them. A snapshot id is taken whatever its host.

Examples:
  $ pi-guard restore latest
  $ pi-guard restore "2h ago" --dry-run
  $ pi-guard restore 2026-11-30T09:00 --target /tmp/pi-then
  $ pi-guard restore latest --session 0b9c5c3e
  $ pi-guard restore latest --path 'sessions/**' --path auth.json
  $ pi-guard restore latest --repo s3://bucket/pi --key-file ./key --host laptop --target ~/restored`,
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
        host: opts.host,
        lockWaitMs: ctx.lockWaitMs,
        onProgress: (p) => progress.update(`${p.files} files, ${formatBytes(p.bytes)}  ${p.current}`),
      });
      progress.done();
      printRestoreResult(ctx, opts, result);
    });

  program
    .command("archive")
    .description("write a plain .tar.gz of the agent dir as of a time, readable by any tar")
    .argument("<when>", 'latest, a snapshot id, an ISO time, or e.g. "2h ago"')
    .requiredOption("-o, --output <file>", "the .tar.gz to write (- for stdout)")
    .option("-p, --path <glob...>", "only files matching these globs")
    .option("--host <host>", "choose among this host's snapshots (as restore does)")
    .addHelpText(
      "after",
      `\nA node the archive cannot hold safely (a ".." or absolute name, a name that is not UTF-8, anything\nbelow a symlink) is left out and named, and the exit code is 1.\n${LOCAL_TIME_NOTE}\n\nExamples:\n  $ pi-guard archive latest -o pi-agent.tar.gz\n  $ pi-guard archive "yesterday 18:00" -o - | tar tz`,
    )
    .action(async (when: string, opts: { output: string; path?: string[]; host?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const repo = await ctx.open();
      const { chooseSnapshotAt } = await import("../engine.js");
      const { writeArchive } = await import("../restore/archive.js");
      const { withLock } = await import("../repo/lock.js");
      const { record, resolved, result } = await withLock(repo, { exclusive: false, command: "archive", waitMs: ctx.lockWaitMs }, async () => {
        const { record, resolved } = await chooseSnapshotAt(repo, when, { host: opts.host });
        return { record, resolved, result: await writeArchive(repo, record, opts.output, { paths: opts.path }) };
      });
      for (const f of result.skipped) warn(`not archived: ${printable(f.path)}: ${printable(f.error)}`);
      if (result.skipped.length) process.exitCode = EXIT.failure;
      if (opts.output === "-") return;
      if (ctx.out.json) printJson({ snapshotId: record.id, resolved: resolved ?? null, output: opts.output, ...result });
      else {
        if (resolved) info(ctx.out, `"${resolved.input}" = ${resolved.utc} UTC = ${resolved.local} local`);
        info(ctx.out, `wrote ${opts.output}: ${result.files} files, ${formatBytes(result.bytes)} from snapshot ${record.id.slice(0, 8)}`);
        if (result.skipped.length) warn(`${result.skipped.length} path(s) of the snapshot are not in the archive`);
      }
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
