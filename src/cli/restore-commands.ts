import type { SqliteMergeReport } from "../restore/sqlite-merge.js";
import type { Command } from "commander";
import { context, type Context } from "./context.js";
import type { UndoResult } from "../engine.js";
import type { EngineRestoreResult } from "../engine/types.js";
import { RepoError } from "../repo/errors.js";
import type { DiscardReport } from "../restore/discards.js";
import { META_LAYOUT_HELP } from "../present/layout.js";
import type { RestoreReport } from "../restore/restorer.js";
import { EXIT, formatBytes, formatDuration, info, printJson, table, warn } from "./output.js";
import { Progress } from "./progress.js";
import { formatLocalTime, LOCAL_TIME_NOTE } from "../present/time.js";

export interface RestoreFlags {
  target?: string;
  path?: string[];
  session?: string;
  dryRun?: boolean;
  delete?: boolean;
  host?: string;
  withMeta?: boolean;
  /** commander's --no-lock: false when given. */
  lock?: boolean;
  undo?: boolean;
  force?: boolean;
  agent?: string;
}

/** A path from a snapshot can hold control characters (a terminal escape, say): show them escaped. */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** A path as the dry run lists it: a root other than the agent dir is named first. */
const shown = (f: { root: string; path: string }) => printable(f.root === "agent" ? f.path : `${f.root}:${f.path}`);

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

/** "4 newer messages (6 entries, 3.2 KiB)": how much of a session a restore drops. */
const loss = (d: { messages: number; entries: number; bytes: number }, newer: boolean) =>
  `${d.messages} ${newer ? "newer " : ""}message${d.messages === 1 ? "" : "s"} (${d.entries} ${d.entries === 1 ? "entry" : "entries"}, ${formatBytes(d.bytes)})`;

/** The discards row of the summary: what of the current state the restore throws away. */
function discardSummary(d: DiscardReport): string | undefined {
  const parts: string[] = [];
  if (d.sessions.length) parts.push(`${loss(d, !d.sessions.some((s) => s.action === "delete"))} in ${plural(d.sessions.length, "session")}`);
  if (d.meta.length) parts.push("pi-guard's session tags roll back to the snapshot's");
  return parts.length ? parts.join("; ") : undefined;
}


/** What a restore did (or, dry, would do), and a non-zero exit for what it could not do. Shared with the restic engine. */
/** One merge of a session's rows into a live database, in a line: what it added, replaced and deleted. */
function rowsLine(r: SqliteMergeReport): string {
  const sum = (k: "added" | "replaced" | "deleted") => r.tables.reduce((n, t) => n + t[k], 0);
  const deleted = sum("deleted");
  return `session ${printable(r.sessionId)} into ${printable(r.live)}: ${sum("added")} rows added, ${sum("replaced")} replaced, ${deleted} deleted${deleted ? " (newer than the snapshot: discarded)" : ""}; other sessions untouched`;
}

export function printRestoreResult(
  ctx: Context,
  opts: RestoreFlags,
  /** Native or restic: only the snapshot's id, time and host are printed. */
  result: EngineRestoreResult,
  /** The restic engine keeps no journal: its undo is a restore of the pre-restore snapshot. */
  resticUndo = false,
): void {
  const { report } = result;
  for (const w of result.warnings) warn(w);
  const counts = { create: 0, replace: 0, unchanged: 0, delete: 0 };
  for (const f of report.files) counts[f.action]++;
  const undoCommand = result.undo ? `pi-guard restore --undo ${result.undo}` : result.undoSnapshot && resticUndo ? `pi-guard restore ${result.undoSnapshot.slice(0, 8)}` : undefined;
  if (ctx.out.json) {
    printJson({
      snapshotId: result.snapshot.id,
      snapshotTime: result.snapshot.snapshot.time,
      host: result.snapshot.snapshot.host,
      resolved: result.resolved ?? null,
      dryRun: !!opts.dryRun,
      undoSnapshot: result.undoSnapshot ?? null,
      undo: undoCommand ? { id: result.undo ?? result.undoSnapshot, command: undoCommand } : null,
      ...counts,
      bytesWritten: report.bytesWritten,
      durationMs: report.durationMs,
      warnings: result.warnings,
      discards: result.discards ?? null,
      failed: report.failed,
      checks: result.checks ?? [],
      rows: result.rows ?? [],
      files: report.files.filter((f) => f.action !== "unchanged").map(({ root, path, action, size }) => ({ root, path, action, size })),
    });
  } else {
    if (opts.dryRun) {
      const lost = new Map((result.discards?.sessions ?? []).map((d) => [`${d.root}\0${d.path}`, d]));
      for (const f of report.files) {
        if (f.action === "unchanged") continue;
        const d = lost.get(`${f.root}\0${f.path}`);
        const note = d ? `  drops ${d.action === "delete" ? `the whole session: ${loss(d, false)}` : loss(d, true)}` : "";
        info(ctx.out, `${f.action.padEnd(8)} ${shown(f)}${note}`);
      }
    }
    const discards = result.discards && discardSummary(result.discards);
    info(
      ctx.out,
      table([
        ...(result.resolved ? [["time", `"${result.resolved.input}" = ${result.resolved.utc} UTC = ${result.resolved.local} local`]] : []),
        ["snapshot", `${result.snapshot.id.slice(0, 8)}  ${result.snapshot.snapshot.time} (${formatLocalTime(new Date(result.snapshot.snapshot.time))} local), host ${result.snapshot.snapshot.host}`],
        [opts.dryRun ? "would" : "files", `${counts.create} created, ${counts.replace} replaced, ${counts.unchanged} unchanged${counts.delete ? `, ${counts.delete} deleted` : ""}`],
        ...(result.rows ?? []).map((r) => [opts.dryRun ? "would merge" : "merged", rowsLine(r)]),
        ...(discards ? [[opts.dryRun ? "discards" : "discarded", discards]] : []),
        ["written", `${formatBytes(report.bytesWritten)} in ${formatDuration(report.durationMs)}`],
      ]),
    );
    if (undoCommand) info(ctx.out, `undo with: ${undoCommand}`);
    const passed = (result.checks ?? []).filter((c) => c.ok).length;
    if (passed) info(ctx.out, `checks: ${passed} passed (the agent lists what was restored)`);
  }
  exitForFailures(report, "restored");
  exitForChecks(result.checks ?? [], !!opts.dryRun);
}

/**
 * A failed check means the agent may not list or resume what was restored: named, and the exit is
 * non-zero, though the files (the snapshot's exact bytes) were written.
 */
function exitForChecks(checks: NonNullable<EngineRestoreResult["checks"]>, dryRun: boolean): void {
  const failed = checks.filter((c) => !c.ok);
  if (!failed.length) return;
  for (const c of failed) warn(`check failed: ${printable(c.name)}: ${printable(c.message)}`);
  warn(`${failed.length} check(s) failed: the agent may not list what ${dryRun ? "this restore would write" : "was restored"} (the snapshot's own bytes${dryRun ? "" : " were written"})`);
  if (!process.exitCode) process.exitCode = EXIT.failure;
}

function exitForFailures(report: RestoreReport, done: string): void {
  if (!report.failed.length) return;
  for (const f of report.failed) warn(`not ${done}: ${printable(f.path)}: ${printable(f.error)}`);
  const damaged = report.failed.some((f) => f.kind === "damaged");
  warn(`${report.failed.length} path(s) were not ${done}${damaged ? "; for damaged data run `pi-guard check --read-data`" : ""}`);
  process.exitCode = damaged ? EXIT.damaged : EXIT.failure;
}

function printUndoResult(ctx: Context, opts: RestoreFlags, result: UndoResult): void {
  const { journal, report } = result;
  for (const w of result.warnings) warn(w);
  // A file already as it was before the restore (one its swap failed for) needs nothing.
  const files = report.files.filter((f) => f.action !== "unchanged");
  const counts = { back: 0, deleted: 0 };
  for (const f of files) counts[f.action === "delete" ? "deleted" : "back"]++;
  if (ctx.out.json) {
    printJson({
      undone: journal.id,
      dryRun: !!opts.dryRun,
      snapshotId: journal.snapshot,
      preRestore: journal.preRestore,
      undoSnapshot: result.undoSnapshot ?? null,
      putBack: counts.back,
      deleted: counts.deleted,
      warnings: result.warnings,
      // What is still to undo (what failed); the journal keeps it for another try.
      left: opts.dryRun ? null : journal.changes.map(({ root, path }) => ({ root, path })),
      failed: report.failed,
      files: files.map(({ root, path, action }) => ({ root, path, action })),
    });
  } else {
    if (opts.dryRun) for (const f of files) info(ctx.out, `${f.action.padEnd(8)} ${shown(f)}`);
    info(
      ctx.out,
      table([
        ["restore", `${journal.id} (${journal.time}) of snapshot ${journal.snapshot.slice(0, 8)}${journal.preRestore ? `, pre-restore snapshot ${journal.preRestore.slice(0, 8)}` : ""}`],
        [opts.dryRun ? "would" : "undone", `${counts.back} put back, ${counts.deleted} deleted`],
        ...(result.undoSnapshot ? [["saved", `what --force replaced is in snapshot ${result.undoSnapshot.slice(0, 8)}`]] : []),
      ]),
    );
  }
  exitForFailures(report, "undone");
}

/** --undo takes the restore's id and --force; the flags that choose what to restore do not go with it. */
function checkFlags(opts: RestoreFlags): void {
  if (opts.withMeta && !opts.target) throw new RepoError("--with-meta goes with --target (in place, pi-guard's metadata goes back to its own folder anyway)", "usage");
  if (!opts.undo) {
    if (opts.force) throw new RepoError("--force goes with --undo only (a restore never needs it: it saves what it replaces first)", "usage");
    return;
  }
  const bad = (["target", "path", "session", "delete", "host"] as const).filter((k) => opts[k] !== undefined && opts[k] !== false);
  if (bad.length) throw new RepoError(`--undo puts back what one restore changed; it takes no --${bad[0].replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`, "usage");
}

export function registerRestoreCommands(program: Command): void {
  program
    .command("restore")
    .description("put back the agent dir (or part of it) as of a time or snapshot")
    .argument("<when>", 'latest, a snapshot id, an ISO time, or e.g. "2h ago", "yesterday 14:00" (with --undo: the restore\'s id)')
    .option("-t, --target <dir>", "restore into this folder instead of in place")
    .option("-p, --path <glob...>", "only files matching these globs (relative to the agent dir)")
    .option("-s, --session <id>", "only the session with this id (or a unique prefix), of any agent, with what must come back with it")
    .option("--agent <name>", "only this agent's data (pi, claude, …: see pi-guard agents)")
    .option("-n, --dry-run", "show what would change (and what it would discard), change nothing")
    .option("--delete", "also delete files that the snapshot does not have (within the restored scope)")
    .option("--host <host>", "choose among this host's snapshots (default: this host's, when several hosts share the repository)")
    .option("--with-meta", "with --target: also pi-guard's own metadata (session tags), as .pi-guard-meta/")
    .option("--undo", "undo the in-place restore <when> names (the id it printed, or latest)")
    .option("--force", "with --undo: also undo files that changed since the restore (snapshotted first)")
    .option("--no-lock", "take no repository lock (nothing is written into the repository unless a pre-restore snapshot must be)")
    .addHelpText(
      "after",
      `
<when> picks the newest snapshot at or before that moment; "latest" skips pre-restore, imported
and suspect-loss snapshots, and snapshots dated in the future (a clock that was wrong: named in a
warning; name one by id to take it anyway). An in-place restore swaps each file in atomically and
keeps modes (0600 for auth.json). It never deletes files unless --delete is given, and never
replaces a folder. A path it refuses (unsafe, or a folder in the way) or cannot write is named,
and the exit status is non-zero (3 when the data is damaged).

One session: --session ID looks the id (whole, or a unique prefix) up among the sessions of every
agent the chosen snapshot holds; --agent NAME narrows it. An ambiguous prefix names the matches
(exit 2); an id only another snapshot holds names that snapshot and the command (exit 1). The
session's files come back with what the agent needs beside them, from the same snapshot: a
Claude Code transcript's <uuid>/ folder, a Codex rollout's state_5.sqlite. --path brings those
companions of the files it names too. The agent's checks (will it list what is restored?) run on
the snapshot's bytes before anything is written: --json lists them as "checks"; a failed one is
named, and the exit status is 1 although the files were restored.
A session that lives in a SQLite database which is there now (opencode.db, Codex's state_5.sqlite)
is merged into it: the database then holds the snapshot's rows of that session (its newer rows
are discarded, and counted), and no other session's row changes; the dry run counts what the merge
would do, and --undo merges the session back as it was (refused once the agent wrote to it since,
unless --force). Where the database is gone, the session's files come back whole. A --path whose
files would bring such a database along unnamed is refused; name the database in --path too to
replace it.

What it discards: the dry run (and the restore's own report) counts, per session it replaces or
deletes, the entries and messages of the live file past the part the snapshot shares with it,
and says when pi-guard's own session tags roll back.

Undo: before it replaces or deletes anything, an in-place restore snapshots what is there (tag
pre-restore); and it records what it changed (in $XDG_STATE_HOME/pi-guard/restores/). The command
it prints, pi-guard restore --undo <id>, puts back exactly the files it replaced or deleted and
deletes the ones it created; sessions made after the restore are left alone. A file that changed
since the restore is named and refused; --force undoes it too, after a snapshot of the current
state. A restore that only creates files (a new machine, an empty agent dir) has nothing to save
and takes no snapshot.

The repository: a restore takes a shared lock, so that forget and prune wait. A repository that
takes no writes (read-only credentials or mount) is read without one, with a warning, as with
--no-lock; every byte is still checked, so data pruned meanwhile makes the restore fail loudly.

${META_LAYOUT_HELP}

${LOCAL_TIME_NOTE}
A moment in the future is an error. The moment <when> was read as is printed in UTC and local time.

Several hosts in one repository: <when> is chosen among the snapshots of --host, or, without it,
of this host (PI_GUARD_HOST, else the machine's name); a repository whose snapshots are all of one
host needs no --host. If there are several hosts and none is this one, restore refuses and lists
them. A snapshot id is taken whatever its host.

Examples:
  $ pi-guard restore latest
  $ pi-guard restore "2h ago" --dry-run
  $ pi-guard restore --undo 20261130-140512-a1b2c3
  $ pi-guard restore 2026-11-30T09:00 --target /tmp/pi-then
  $ pi-guard restore latest --session 0b9c5c3e
  $ pi-guard restore latest --session 3f2a91c0-77b1 --agent claude
  $ pi-guard restore latest --agent claude --path 'projects/**/3f2a91c0-77b1-4c1e-9d0a-5b6f7e8d9c0a.jsonl'
  $ pi-guard restore "1h ago" --agent claude
  $ pi-guard restore latest --path 'sessions/**' --path auth.json
  $ pi-guard restore latest --repo s3://bucket/pi --key-file ./key --host laptop --target ~/restored`,
    )
    .action(async (when: string, opts: RestoreFlags, cmd: Command) => {
      checkFlags(opts);
      const ctx = context(cmd);
      if (opts.agent !== undefined) (await import("../agents/registry.js")).agentByName(opts.agent);
      const engine = await ctx.engine();
      if (opts.undo) {
        if (!engine.repository) throw new RepoError(`--undo is not available on a ${engine.kind} repository: undo a restore there by restoring the pre-restore snapshot it printed (docs/RESTIC.md)`, "usage");
        const { undoRestore } = await import("../engine.js");
        const result = await undoRestore(ctx.config, await engine.repository(), when, { force: opts.force, dryRun: opts.dryRun, lockWaitMs: ctx.lockWaitMs, noLock: opts.lock === false });
        return printUndoResult(ctx, opts, result);
      }
      const progress = new Progress(!ctx.out.json && !ctx.out.quiet);
      const result = await engine
        .restore(when, {
          targetDir: opts.target,
          paths: opts.path,
          session: opts.session,
          agent: opts.agent,
          dryRun: opts.dryRun,
          delete: opts.delete,
          host: opts.host,
          withMeta: opts.withMeta,
          noLock: opts.lock === false,
          lockWaitMs: ctx.lockWaitMs,
          onProgress: (p) => progress.update(`${p.files} files, ${formatBytes(p.bytes)}  ${p.current}`),
        })
        .finally(() => progress.done());
      printRestoreResult(ctx, opts, result, engine.kind === "restic");
    });

  program
    .command("archive")
    .description("write a plain .tar.gz of the agent dir as of a time, readable by any tar")
    .argument("<when>", 'latest, a snapshot id, an ISO time, or e.g. "2h ago"')
    .requiredOption("-o, --output <file>", "the .tar.gz to write (- for stdout)")
    .option("-p, --path <glob...>", "only files matching these globs")
    .option("--host <host>", "choose among this host's snapshots (as restore does)")
    .option("--with-meta", "also pi-guard's own metadata (session tags), as .pi-guard-meta/")
    .option("--no-lock", "take no repository lock (as restore --no-lock)")
    .addHelpText(
      "after",
      `\nA node the archive cannot hold safely (a ".." or absolute name, a name that is not UTF-8, anything\nbelow a symlink) is left out and named, and the exit code is 1.\n${META_LAYOUT_HELP}\n${LOCAL_TIME_NOTE}\n\nExamples:\n  $ pi-guard archive latest -o pi-agent.tar.gz\n  $ pi-guard archive "yesterday 18:00" -o - | tar tz`,
    )
    .action(async (when: string, opts: { output: string; path?: string[]; host?: string; withMeta?: boolean; lock?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const repo = await ctx.open();
      const { archiveSnapshot } = await import("../engine.js");
      const { record, resolved, warnings, result } = await archiveSnapshot(repo, when, opts.output, {
        paths: opts.path,
        host: opts.host,
        withMeta: opts.withMeta,
        noLock: opts.lock === false,
        lockWaitMs: ctx.lockWaitMs,
      });
      for (const w of warnings) warn(w);
      for (const f of result.skipped) warn(`not archived: ${printable(f.path)}: ${printable(f.error)}`);
      if (result.skipped.length) process.exitCode = EXIT.failure;
      if (opts.output === "-") return;
      if (ctx.out.json) printJson({ snapshotId: record.id, resolved: resolved ?? null, output: opts.output, warnings, ...result });
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
      const { runDemo } = await import("../library/demo.js");
      const result = await runDemo({ sizeMiB: Number(opts.size), keep: !!opts.keep, log: (l: string) => info(ctx.out, l) });
      if (ctx.out.json) printJson(result);
      if (!result.identical) process.exitCode = EXIT.failure;
    });
}
