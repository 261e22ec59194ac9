// What the sessions commands share, and with them the plain search (search-plain.ts), which runs
// without commander: the library's host over a command's context, the list filters, a listed row.
import type { Context } from "./context.js";
import { EXIT, warn } from "./output.js";
import type { SessionRecord } from "../sessions/catalog.js";
import type { SessionListFilter, SessionsHost } from "../library/sessions.js";

/** The list filters as commander parses them: `--live` is the library's liveOnly. */
export interface ListFlags extends Omit<SessionListFilter, "liveOnly"> {
  live?: boolean;
}

/** The sessions library (src/library/sessions.ts) over this command's config and engine; what it reports goes to stderr. */
export function sessionsHost(ctx: Context): SessionsHost {
  return {
    config: ctx.config,
    engine: () => ctx.engine(),
    open: () => ctx.open(),
    lockWaitMs: ctx.lockWaitMs,
    // Snapshots the catalog could not read: a warning, or damage (exit 3) when it could read none.
    onDamage: (damage) => {
      warn(damage.message);
      if (damage.all) process.exitCode = EXIT.damaged;
    },
    onWarning: warn,
  };
}

export const listFilter = (opts: ListFlags): SessionListFilter => ({ project: opts.project, tag: opts.tag, since: opts.since, until: opts.until, date: opts.date, deleted: opts.deleted, host: opts.host, agent: opts.agent, liveOnly: !!opts.live });

/** A catalog record as `sessions list --json` shows it: the per-day breakdown and copies are for `stats`. */
export const listRow = ({ usage: _u, turnsBySlot: _t, copied: _c, origins: _o, ...row }: SessionRecord) => row;

export const day = (iso: string | null): string => (iso ? iso.replace("T", " ").slice(0, 16) : "-");

export function cut(text: string, max: number): string {
  return text.length > max ? `…${text.slice(text.length - max + 1)}` : text;
}
