import type { Command } from "commander";
import { context, type Context } from "./context.js";
import { formatBytes, info, printJson, table, warn } from "./output.js";
import { RepoError } from "../repo/errors.js";
import { registerRepairIndexCommand } from "./repair-index-command.js";
import type { OpenFilesOutcome } from "../library/salvage.js";

const collect = (value: string, previous: string[]) => [...previous, value];

interface SalvageFlags {
  fromHtml: string[];
  fromLog: string[];
  fromTerminal: string[];
  out?: string;
  install?: boolean;
  cwd?: string;
  sessionId?: string;
  fromOpenFiles?: boolean;
  match: string[];
  fromHermes: string[];
  fromJournal: string[];
  fromJournals?: boolean;
  session: string[];
  since?: string;
  all?: boolean;
}

export function registerSalvageCommands(program: Command): void {
  const repair = program
    .command("repair")
    .description("fix a damaged session file (torn or glued lines, lost header) into a copy pi can load; `repair index` rebuilds the repository index")
    .argument("[file]", "the session .jsonl file (a file named index: ./index)")
    .option("--in-place", "replace the file itself, after saving a backup beside it")
    .option("--out <file>", "write the repaired session here (never overwritten)")
    .option("--cwd <path>", "project dir for a header that has to be rebuilt")
    .option("--from <location>", "with --to: heal the repository at --to from this copy of it (see below)")
    .option("--to <location>", "the repository location to heal (a mirror, or the primary)")
    .option("--dry-run", "with --from/--to: only report what is damaged and what would be healed")
    .addHelpText(
      "after",
      `
Without --in-place the original is never touched: the repaired copy is FILE.repaired.jsonl
(or FILE.repaired-2.jsonl ... if that exists). With --in-place the original is first copied to
FILE.<time>.bak and the repaired file is swapped in atomically. New files (the copy, the backup)
are 0600: they hold session text.

A header that has to be rebuilt takes its project dir (cwd) from --cwd, else from the name of
pi's folder the file is in (--home-me-my-app--; lossy, so the reading that exists on this machine
is taken, and the output says so), else the repair is refused (exit 2) until --cwd names it.

Examples:
  $ pi-guard repair ~/.pi/agent/sessions/--home-me-proj--/2026-01-01T10-00-00-000Z_<id>.jsonl
  $ pi-guard repair broken.jsonl --in-place --json
  $ pi-guard repair index              # rebuild a damaged repository index (see \`pi-guard repair index --help\`)
  $ pi-guard repair --from /srv/pi-guard --to s3://my-backups/pi/laptop --dry-run

repair --from A --to B heals B, a copy of the same repository (a mirror), from A. It reads every
pack of B in full; blobs in missing or damaged packs are written again into new packs (from the
damaged pack itself where they still verify, otherwise from A), damaged snapshot objects are
replaced by A's, and one new index replaces B's index files; only then are the damaged objects
deleted. Takes B's exclusive lock. What A cannot supply either is named and kept (exit 3).
Afterwards \`pi-guard check --read-data --repo B\` passes.`,
    )
    .action(async (file: string | undefined, opts: { inPlace?: boolean; out?: string; cwd?: string; from?: string; to?: string; dryRun?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      if (opts.from || opts.to) {
        if (!opts.from || !opts.to || file !== undefined) throw new RepoError("repair of a repository takes both --from <location> and --to <location>, and no file", "usage");
        const { runRepairFrom } = await import("./repair-from-command.js");
        return runRepairFrom(ctx, opts.from, opts.to, !!opts.dryRun);
      }
      if (file === undefined) throw new RepoError("missing the session file to repair (or --from/--to to heal a repository)", "usage");
      const { repairSessionFile } = await import("../library/salvage.js");
      const result = await repairSessionFile(file, { inPlace: opts.inPlace, out: opts.out, fallbackCwd: opts.cwd });
      const r = result.report;
      if (ctx.out.json) {
        printJson({
          file: result.file,
          changed: r.changed,
          output: result.output,
          backup: result.backup,
          entries: r.entries,
          recoveredEntries: r.recoveredEntries,
          droppedLines: r.droppedLines,
          headerSynthesized: r.headerSynthesized,
          actions: r.actions,
        });
        return;
      }
      if (!r.changed) {
        info(ctx.out, `${file}: no damage found, nothing written (${r.entries} entries)`);
        return;
      }
      for (const action of r.actions) info(ctx.out, `  ${action}`);
      const rows = [
        ["entries", `${r.entries} (${r.recoveredEntries} taken back out of glued lines)`],
        ["written", result.output ?? ""],
      ];
      if (result.backup) rows.push(["backup", result.backup]);
      info(ctx.out, table(rows));
    });
  registerRepairIndexCommand(repair);

  program
    .command("salvage")
    .description("rebuild pi sessions from what survived: exported HTML, event logs, files still held open")
    .option("--from-html <file>", "a page written by `pi --export` (repeatable)", collect, [])
    .option("--from-log <file>", "pi --mode json/rpc output or a web UI log (repeatable)", collect, [])
    .option("--from-terminal <file>", "scrollback copied from pi's terminal screen, with or without escapes; - for stdin (repeatable)", collect, [])
    .option("--from-hermes <db>", "a pi-hermes-memory sessions.db or hermes-agent state.db, opened read-only (repeatable)", collect, [])
    .option("--from-journal <file>", "an in-flight journal of pi-guard's pi extension: the answer pi was streaming when it died (repeatable)", collect, [])
    .option("--from-journals", "every in-flight journal in pi-guard's state dir whose pi is gone and did not save the answer")
    .option("--session <id>", "with --from-hermes: take this session (repeatable)", collect, [])
    .option("--since <time>", 'with --from-hermes: sessions started since then ("2026-01-01", "3 days ago"; no zone: local time)')
    .option("--all", "with --from-hermes: take every session")
    .option("--from-open-files", "copy out deleted files that running processes still hold open (Linux; prints the steps on macOS)")
    .option("--match <glob>", "with --from-open-files: also take held files matching this (repeatable)", collect, [])
    .option("--out <dir>", "write the results here (default: <data dir>/salvage)")
    .option("--install", "put each session into pi's sessions dir for its cwd (never over an existing file)")
    .option("--cwd <path>", "project dir for sessions whose source does not name one (for --from-log it wins over the log's lines); with --from-hermes, also picks that project's sessions")
    .option("--session-id <uuid>", "with --from-log: the session's id when no line of the log names it (wins over a line that does)")
    .addHelpText(
      "after",
      `
Sources are only read. Sessions found in several sources are merged into one file per session id,
keeping the richest copy of each message; a "pi-guard/salvage" custom entry records where it all
came from. Nothing is written unless every source could be read.

--from-journal/--from-journals read what pi-guard's pi extension kept of an answer pi was
streaming when it died (kill -9, a crash, a closed terminal; docs/EXTENSION.md). Each gives a copy
of the session (a new id; its header names the original as parentSession, so --install puts it
beside the original, which is never touched) ending in the partial answer, an assistant message
with stopReason "aborted" whose errorMessage says it was recovered. A journal whose answer the
session file already holds, or whose pi still runs, is skipped and named.

--from-open-files copies deleted files under the agent dir (sessions, hermes databases, logs) or
matching --match out of /proc/<pid>/fd before their process exits, byte for byte.

Examples:
  $ pi-guard salvage --from-html pi-session-2026-01-01.html --install
  $ pi-guard salvage --from-log web-ui.log --from-log rpc.jsonl --out ./recovered --json
  $ pi-guard salvage --from-log rotated.log --session-id 0f8e2c1a-5b7d-4e2f-9a31-6c0d8e4b2f17 --cwd ~/proj --install
  $ pi-guard salvage --from-hermes ~/.pi/agent/pi-hermes-memory/sessions.db --cwd ~/proj --install
  $ tmux capture-pane -e -p -S - | pi-guard salvage --from-terminal - --cwd ~/proj
  $ pi-guard salvage --from-hermes state.db --since "2 days ago" --from-log web-ui.log
  $ pi-guard salvage --from-open-files --match '*.log'
  $ pi-guard salvage --from-journals --install`,
    )
    .action(async (opts: SalvageFlags, cmd: Command) => {
      const ctx = context(cmd);
      const { salvageSessions } = await import("../library/salvage.js");
      const outcome = await salvageSessions(
        ctx.config,
        {
          html: opts.fromHtml,
          logs: opts.fromLog,
          terminals: opts.fromTerminal,
          hermes: opts.fromHermes,
          journals: opts.fromJournal,
          allJournals: opts.fromJournals,
          sessions: opts.session,
          since: opts.since,
          all: opts.all,
          openFiles: opts.fromOpenFiles,
          match: opts.match,
          out: opts.out,
          install: opts.install,
          cwd: opts.cwd,
          sessionId: opts.sessionId,
        },
        { onSkippedJournal: (file, why) => warn(`skipped ${file}: ${why}`), onOpenFiles: (o) => printOpenFiles(ctx, o) },
      );
      const { openFiles, result } = outcome;
      if (outcome.noJournals) {
        if (ctx.out.json) printJson({ sessions: [], sources: [], journals: [] });
        else info(ctx.out, `no in-flight journal needs salvage in ${outcome.noJournals.dir}`);
        return;
      }
      if (!result) {
        if (ctx.out.json) printJson({ openFiles });
        return;
      }
      if (ctx.out.json) {
        printJson({ ...result.report, ...(openFiles ? { openFiles } : {}) });
        return;
      }
      const { formatReport } = await import("../present/salvage.js");
      info(ctx.out, formatReport(result.report));
    });
}

/** The held-open files copied out: the steps to take on macOS, else one row per copy. */
function printOpenFiles(ctx: Context, o: OpenFilesOutcome): void {
  if (o.steps !== undefined) return info(ctx.out, o.steps);
  if (o.files.length === 0) info(ctx.out, "no deleted files held open by running processes were found");
  else {
    const rows = [["PID", "COMMAND", "FD", "SIZE", "WAS", "COPY"]];
    for (const f of o.files) rows.push([String(f.pid), f.command.slice(0, 40), String(f.fd), formatBytes(f.size), f.path, f.copy]);
    info(ctx.out, table(rows));
  }
  if (o.unreadable > 0) info(ctx.out, `(${o.unreadable} processes of other users were not searched; run as root to include them)`);
}
