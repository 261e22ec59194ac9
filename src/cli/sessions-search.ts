// `sessions search`'s action: the command table's (sessions-commands.ts) and the plain search's
// (search-plain.ts, which start.ts runs without commander), one body for both. The output is
// made whole before a byte of it is written: the plain search hands a search it cannot finish
// over to the command table, which must then be the first to print anything.
import type { Context } from "./context.js";
import { jsonText } from "./output.js";
import { cut, day, listFilter, listRow, sessionsHost, type ListFlags } from "./sessions-common.js";
import { RepoError } from "../repo/errors.js";
import type { SessionsHost } from "../library/sessions.js";

/** The search's options as commander gives them (--limit still a string). */
export interface SearchFlags extends ListFlags {
  limit: string;
  all?: boolean;
}

type Report = Awaited<ReturnType<typeof import("../library/sessions.js").searchSessions>>;

/** The search over `host`'s catalog, with the options checked as the command checks them. */
export async function searchReport(host: SessionsHost, query: string, opts: SearchFlags): Promise<Report> {
  const limit = Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new RepoError(`--limit must be a whole number above 0, not "${opts.limit}"`, "usage");
  const { searchSessions } = await import("../library/sessions.js");
  return searchSessions(host, query, { ...listFilter(opts), limit, all: opts.all });
}

/** What the command writes to stdout for `report` (empty with --quiet and no --json). */
export function searchOutput(out: Context["out"], query: string, report: Report): string {
  const { index: sync, results, capped, queryMs, shortIds: short } = report;
  if (out.json) return jsonText({ query, queryMs, index: sync, ...(capped && { capped }), results: results.map((r) => ({ ...r, session: listRow(r.session) })) });
  if (out.quiet) return "";
  if (results.length === 0) return `no sessions match "${query}" (${queryMs} ms)\n`;
  const lines: string[] = [];
  for (const r of results) {
    const s = r.session;
    lines.push(`${short.get(s.id)}  ${s.name ?? cut(s.project, 40)}  ${day(s.lastActivity)}  ${s.deleted ? "DELETED  " : ""}score ${r.score.toFixed(2)}`);
    for (const h of r.hits) lines.push(`    ${h.entryId} ${h.kind.padEnd(10)} ${h.snippet}`);
  }
  lines.push(`${results.length} session${results.length === 1 ? "" : "s"} in ${queryMs} ms${sync.indexed ? ` (indexed ${sync.indexed} changed session${sync.indexed === 1 ? "" : "s"} in ${sync.ms} ms)` : ""}`);
  if (capped) lines.push(`more than ${capped.ranked.toLocaleString("en-US")} entries match: ranked the newest ${capped.ranked.toLocaleString("en-US")} (--all ranks every one)`);
  return lines.join("\n") + "\n";
}

export async function searchSessionsCommand(ctx: Context, query: string, opts: SearchFlags): Promise<void> {
  const text = searchOutput(ctx.out, query, await searchReport(sessionsHost(ctx), query, opts));
  if (text) process.stdout.write(text);
}
