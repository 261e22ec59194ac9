import type { Command } from "commander";
import { context, type Context } from "./context.js";
import { formatBytes, info, printJson, table, warn } from "./output.js";
import { day, listFilter, listRow, sessionsHost, type ListFlags } from "./sessions-common.js";
import { searchSessionsCommand, type SearchFlags } from "./sessions-search.js";
import { RepoError } from "../repo/errors.js";
import type { SessionRecord } from "../sessions/catalog.js";
import type { SessionView } from "../sessions/view.js";
import type { StatsOptions } from "../library/sessions.js";

function where(s: SessionRecord): string {
  const snaps = s.snapshotCount ? `${s.snapshotCount} snapshot${s.snapshotCount === 1 ? "" : "s"}` : "";
  if (s.deleted) return `DELETED, in ${snaps} (last ${s.lastSnapshot?.snapshotId.slice(0, 8)})`;
  return snaps ? `live + ${snaps}` : "live only";
}

/** The filters and options `stats` and `dashboard` share. */
export type StatsFlags = StatsOptions;

function withStatsFlags(cmd: Command): Command {
  return cmd
    .option("--since <time>", "usage from this time on; a bare date is that day's midnight in --tz (\"2026-11-01\", \"2 weeks ago\")")
    .option("--until <time>", "usage up to this time; a bare date means to the end of that day in --tz")
    .option("--project <text>", "only sessions whose project path (header cwd) contains this")
    .option("--agent <name>", "only sessions of this agent (pi-guard agents lists them)")
    .option("--tz <zone>", "IANA time zone whose midnights cut the days (default: this machine's zone)")
    .option("--gap <hours>", "a stretch without a snapshot longer than this is a gap", "24");
}

/**
 * `sessions list`'s output. Ids are shown by their
 * shortest prefix that no other id of `all` (every session, not only those listed) starts with,
 * so each one shown can be typed back (src/sessions/short-id.ts).
 */
async function printSessionList(ctx: Context, list: SessionRecord[], short: Map<string, string>): Promise<void> {
  if (ctx.out.json) {
    printJson(list.map((s) => ({ ...listRow(s), shortId: short.get(s.id) })));
    return;
  }
  if (list.length === 0) {
    info(ctx.out, "no sessions match");
    return;
  }
  const { formatCost, formatTokens } = await import("../sessions/describe.js");
  const { fitListRows, terminalWidth } = await import("../sessions/list-layout.js");
  const rows = [["ID", "NAME", "PROJECT", "AGENT", "STARTED", "LAST ACTIVITY", "TURNS", "TOKENS", "COST", "SIZE", "WHERE"]];
  for (const s of list) {
    rows.push([short.get(s.id)!, s.name ?? "", s.project, s.agent, day(s.started), day(s.lastActivity), String(s.turns), formatTokens(s.tokens), formatCost(s.cost), formatBytes(s.size), where(s) + (s.tags.length ? `  #${s.tags.join(" #")}` : "")]);
  }
  // Narrow terminals leave out STARTED, SIZE, COST and TOKENS (in that order) before the name gets short.
  // AGENT comes after PROJECT: fitListRows cuts columns 1 and 2 (name and project).
  info(ctx.out, table(fitListRows(rows, terminalWidth(), [4, 9, 8, 7])));
}

/** `sessions show`'s output. */
async function printSessionView(ctx: Context, record: SessionRecord, view: SessionView, source: string, opts: { full?: boolean }): Promise<void> {
  if (ctx.out.json) {
    printJson({
      session: listRow(record),
      source,
      header: view.header,
      leafId: view.leafId,
      leaves: view.leaves.map((e) => e.id),
      branchPoints: view.branchPoints.map((e) => ({ id: e.id, children: (view.tree.children.get(e.id) ?? []).map((c) => c.id) })),
      labels: Object.fromEntries(view.labels),
      compactions: view.compactions.map((e) => e.id),
      path: view.path,
      warnings: view.warnings,
    });
    return;
  }
  const { renderSession } = await import("../sessions/render-terminal.js");
  info(ctx.out, renderSession(view, { toolLines: opts.full ? 0 : 8, source }));
  for (const w of view.warnings) warn(w);
}

/** The filters `sessions list` and `sessions search` share. */
function withListFilters(cmd: Command): Command {
  return cmd
    .option("--project <text>", "only sessions whose project path (header cwd) contains this")
    .option("--tag <tag>", "only sessions with this pi-guard tag")
    .option("--since <time>", "only sessions active at or after this time (no zone: local time)")
    .option("--until <time>", "only sessions started at or before this time (no zone: local time)")
    .option("--date <day>", "only sessions active on this local day (YYYY-MM-DD)")
    .option("--deleted", "only sessions that are in a snapshot but gone from disk")
    .option("--host <host>", "only sessions seen on this host")
    .option("--agent <name>", "only sessions of this agent (pi, claude, codex, ...)")
    .option("--live", "skip snapshots: live files only (no repository needed)");
}

export function registerSessionsCommands(program: Command): void {
  const sessions = program.command("sessions").description("list, show and tag pi sessions, live and in every snapshot");

  withListFilters(
    sessions
      .command("list")
      .alias("ls")
      .description("list sessions from the live sessions dir and from every snapshot"),
  )
    .addHelpText(
      "after",
      `
Sessions are read from the live files and from every snapshot. Summaries are cached in
$XDG_DATA_HOME/pi-guard/catalog (rebuildable; delete it any time). Snapshot objects that cannot
be read are named on stderr; when none can be read, that is damage: the live sessions are
listed and the exit code is 3.

Examples:
  $ pi-guard sessions list
  $ pi-guard sessions list --deleted            # only in backups now
  $ pi-guard sessions list --project my-app --since "3 days ago"
  $ pi-guard sessions list --json | jq '.[0].id'`,
    )
    .action(async (opts: ListFlags, cmd: Command) => {
      const ctx = context(cmd);
      const { listSessions } = await import("../library/sessions.js");
      const listed = await listSessions(sessionsHost(ctx), listFilter(opts));
      await printSessionList(ctx, listed.sessions, listed.shortIds);
    });

  sessions
    .command("show")
    .argument("<id>", "session id or a unique prefix of it")
    .description("print a session's branch tree and its conversation along one branch")
    .option("--branch <entry>", "show the path to this entry (an id or prefix from the tree) instead of pi's leaf")
    .option("--full", "print tool output and system prompt sections in full (default: the first 8 lines)")
    .addHelpText(
      "after",
      `
The tree folds straight runs of entries; it shows branch points, leaves, labels, compactions and
entries a context edit changed. pi 1.x system prompts are shown with their sections and tools,
and each later system update as what it changed.
\`*\` marks the path being shown. Sessions deleted from disk are read from the newest snapshot.

Examples:
  $ pi-guard sessions show 01a2
  $ pi-guard sessions show 01a2 --branch 7f3c9e21
  $ pi-guard sessions show 01a2 --json           # header, tree summary and the path's entries`,
    )
    .action(async (id: string, opts: { branch?: string; full?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const { showSession } = await import("../library/sessions.js");
      const shown = await showSession(sessionsHost(ctx), id, opts.branch);
      await printSessionView(ctx, shown.record, shown.view, shown.source, opts);
    });

  withListFilters(
    sessions
      .command("search")
      .argument("<query>", "words that must all occur; \"a phrase\"; word* for a prefix")
      .description("full-text search over live sessions and every snapshot, ranked (BM25), with snippets"),
  )
    .option("-n, --limit <n>", "at most this many sessions", "20")
    .option("--all", "rank every matching entry (by default, when more than 10,000 entries match, the newest 10,000 are ranked)")
    .addHelpText(
      "after",
      `
The index lives in $XDG_DATA_HOME/pi-guard/search/index.sqlite. Each search first re-indexes the
sessions whose bytes changed; delete the file any time and the next search rebuilds it.

Examples:
  $ pi-guard sessions search "python decorator"
  $ pi-guard sessions search '"connection refused"' --project api --since "1 week ago"
  $ pi-guard sessions search 'refactor*' --deleted --json`,
    )
    .action((query: string, opts: SearchFlags, cmd: Command) => searchSessionsCommand(context(cmd), query, opts));

  sessions
    .command("delete")
    .alias("rm")
    .argument("<id>", "session id or a unique prefix of it")
    .description("snapshot, then move a session file into pi-guard's trash (never deleted)")
    .addHelpText(
      "after",
      `
A snapshot of the agent dir (and pi-guard's tags) is taken first; the file then moves to
$XDG_DATA_HOME/pi-guard/trash/<time>--<id>/. The session stays listed as DELETED.

Examples:
  $ pi-guard sessions delete 01a2
  $ pi-guard restore <snapshot id> --session 01a2   # bring it back (delete prints this command)`,
    )
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const ctx = context(cmd);
      const { trashSession } = await import("../library/sessions.js");
      const r = await trashSession(sessionsHost(ctx), id);
      if (ctx.out.json) printJson(r);
      else info(ctx.out, `moved ${r.from}\n   to ${r.to}\nsnapshot ${r.snapshotId.slice(0, 8)} holds it; to bring it back: ${r.restoreCommand}`);
    });

  sessions
    .command("merge")
    .argument("<a>", "first session (id or prefix); the merged session takes its project")
    .argument("<b>", "second session (id or prefix)")
    .description("write a new session holding the messages of both, shared ones once (never overwrites)")
    .option("-o, --output <file>", "write here instead of into pi's sessions dir")
    .addHelpText(
      "after",
      `
Each session contributes the messages on its current branch; the result has a new id, is named
"merge of A + B", and pi can open and continue it. Messages both hold (a fork and its parent)
are written once: such sessions are joined at the fork point, each continuation a branch of the
tree (the newer one current). Sessions with nothing in common become one chain in time order.

Examples:
  $ pi-guard sessions merge 01a2 7f3c
  $ pi-guard sessions merge 01a2 7f3c --output /tmp/merged.jsonl`,
    )
    .action(async (a: string, b: string, opts: { output?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const { mergeSessionsById } = await import("../library/sessions.js");
      const m = await mergeSessionsById(sessionsHost(ctx), a, b, opts.output);
      if (ctx.out.json) printJson({ id: m.id, file: m.file, from: m.from, messages: m.messages, shared: m.shared });
      else info(ctx.out, `merged ${m.shortIds[0]} + ${m.shortIds[1]} (${m.messages} messages${m.shared ? `, ${m.shared} shared written once` : ""}) into ${m.id}: ${m.file}`);
    });

  for (const remove of [false, true]) {
    sessions
      .command(remove ? "untag" : "tag")
      .argument("<id>", "session id or a unique prefix of it")
      .argument("<tags...>", remove ? "tags to remove" : "tags to add")
      .description(remove ? "remove pi-guard tags from a session" : "add pi-guard tags to a session (pi's files are not touched)")
      .addHelpText(
        "after",
        `
Tags live in $XDG_DATA_HOME/pi-guard/meta/tags.json; \`sessions delete\` snapshots that folder too.

Examples:
  $ pi-guard sessions ${remove ? "untag" : "tag"} 01a2 python decorator
  $ pi-guard sessions list --tag python`,
      )
      .action(async (id: string, names: string[], _opts: unknown, cmd: Command) => {
        const ctx = context(cmd);
        const { tagSession } = await import("../library/sessions.js");
        const { id: sessionId, shortId: short, tags } = await tagSession(sessionsHost(ctx), id, names, remove);
        if (ctx.out.json) printJson({ id: sessionId, tags });
        else info(ctx.out, `${short}: ${tags.length ? tags.map((t) => `#${t}`).join(" ") : "no tags"}`);
      });
  }

  for (const parent of [program, sessions]) registerStatsCommand(parent);

  withStatsFlags(
    program
      .command("dashboard")
      .description("write one self-contained HTML page with charts of sessions, turns, tokens, cost and snapshots")
      .option("-o, --output <file>", "where to write the page", "pi-guard-dashboard.html")
      .option("--range <days>", "the last N days (30d, 90d, ...) or all of the history; default 30d (--since replaces it)"),
  )
    .addHelpText(
      "after",
      `
The page makes no network requests and runs no script; the numbers are those of \`pi-guard stats
--json\` with the same range and filters (the snapshot timeline always spans every snapshot).
Charts have a bar per day; over more than 120 days, a bar per week, then per month.

Examples:
  $ pi-guard dashboard --output ~/pi-dashboard.html
  $ pi-guard dashboard --range 90d --tz Europe/Berlin
  $ pi-guard dashboard --range all --agent pi`,
    )
    .action(async (opts: StatsFlags & { output: string; range?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const { writeDashboard } = await import("../library/sessions.js");
      const { stats, bytes } = await writeDashboard(sessionsHost(ctx), opts);
      if (ctx.out.json) printJson({ output: opts.output, bytes, sessions: stats.totals.sessions, snapshots: stats.totals.snapshots, range: stats.range });
      else info(ctx.out, `wrote ${opts.output} (${formatBytes(bytes)}): ${stats.totals.sessions} sessions, ${stats.totals.snapshots} snapshots`);
    });

  program
    .command("export")
    .argument("<id>", "session id or a unique prefix of it")
    .description("export a session (live or only in a snapshot) to Markdown, JSON or HTML")
    .option("-f, --format <format>", "markdown, json or html (default: from the --output extension, else markdown)")
    .option("-o, --output <file>", "write here (atomically) instead of to stdout; never into the agent dir")
    .option("--force", "with --output: replace a file that is there")
    .option("--branch <entry>", "export the path to this entry instead of pi's leaf")
    .option("--redact", "mask API keys and tokens (known key shapes and the keys in auth.json, models.json, mcp.json and mcp-auth.json, and in the session's <cwd>/.pi/mcp.json); home dirs become ~")
    .addHelpText(
      "after",
      `
Markdown reads well on GitHub; JSON has a stable shape (docs/SESSIONS.md); HTML is one
self-contained page (what pi --export shows: tool calls with their output, thinking, the
system prompt and tools, pi's tree and token breakdown; plus search, branch switches, cost per
message, light/dark, print) that makes no network requests and embeds the session so
\`pi-guard salvage --from-html\` can recover it.

--output is written to a temp file beside it and renamed into place, so a failed export leaves
no partial file. It is refused inside the agent dir or any other folder pi-guard backs up
(symlinks resolved: a live session must never become its own export), and an existing file is
replaced only with --force.

Examples:
  $ pi-guard export 01a2 > session.md
  $ pi-guard export 01a2 --format html --output session.html
  $ pi-guard export 01a2 --format json --branch 7f3c9e21 --redact -o branch.json`,
    )
    .action(async (id: string, opts: ExportFlags, cmd: Command) => {
      const ctx = context(cmd);
      const { checkExport, exportSessionById } = await import("../library/sessions.js");
      // The format and the output are checked before any work, so that a mistake fails fast and alone.
      const format = await checkExport(ctx.config, opts);
      const r = await exportSessionById(sessionsHost(ctx), id, opts, format);
      if (!opts.output) return;
      if (ctx.out.json) printJson({ id: r.id, format, output: opts.output, bytes: r.bytes, source: r.source, redacted: !!opts.redact });
      else info(ctx.out, `exported ${r.id} (${format}, ${formatBytes(r.bytes)}) to ${opts.output} from ${r.source}`);
    });
}

/** `stats`, under the program and under `sessions`: the same command in both places. */
function registerStatsCommand(parent: Command): void {
  withStatsFlags(
    parent
      .command("stats")
      .description("usage per day, week, month or session (tokens by kind, cost, models), per model and project; snapshot gaps; what the dashboard draws"),
  )
    .option("--by <view>", "one row per day, week (ISO), month or session", "day")
    .addHelpText(
      "after",
      `
Tokens and cost are counted as pi counts a session's totals, each entry once across forks and
merges. Days are cut at midnight in --tz; weeks are ISO weeks (Monday first). Rows without any
activity are left out of the text; --json lists every day, week and month of the range, and
every session, whatever --by says.

Examples:
  $ pi-guard stats                                   # per day, all of the history
  $ pi-guard stats --since "2 weeks ago" --by week
  $ pi-guard stats --by month --tz America/New_York --project my-app
  $ pi-guard stats --by session --since 2026-11-01 --until 2026-11-30
  $ pi-guard stats --json | jq '.days[-1]'`,
    )
    .action(async (opts: StatsFlags & { by: string }, cmd: Command) => {
      const ctx = context(cmd);
      const { renderStatsText, STATS_VIEWS } = await import("../sessions/stats-text.js");
      const view = STATS_VIEWS.find((v) => v === opts.by);
      if (!view) throw new RepoError(`--by must be one of ${STATS_VIEWS.join(", ")}, not "${opts.by}"`, "usage");
      const { sessionStats } = await import("../library/sessions.js");
      const stats = await sessionStats(sessionsHost(ctx), opts);
      if (ctx.out.json) printJson(stats);
      else info(ctx.out, renderStatsText(stats, view, table));
    });
}

export interface ExportFlags {
  format?: string;
  output?: string;
  force?: boolean;
  branch?: string;
  redact?: boolean;
}
