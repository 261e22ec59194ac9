// --since/--until/--date for `sessions list`: a bare date means the whole day in local time.

import { RepoError } from "../repo/errors.js";
import { parseTime } from "../restore/select.js";

const DAY = /^\d{4}-\d{2}-\d{2}$/;

function parseOrFail(flag: string, value: string, edge: "start" | "end"): Date {
  if (DAY.test(value.trim())) {
    const d = new Date(`${value.trim()}T${edge === "start" ? "00:00:00.000" : "23:59:59.999"}`);
    if (!Number.isNaN(d.getTime())) return d;
  }
  const t = parseTime(value);
  if (!t) throw new RepoError(`${flag} "${value}" is not a time (try 2026-11-30, 2026-11-30T14:00 or "3 days ago")`, "usage");
  return t;
}

export function timeRange(opts: { since?: string; until?: string; date?: string }): { since?: Date; until?: Date } {
  if (opts.date) return { since: parseOrFail("--date", opts.date, "start"), until: parseOrFail("--date", opts.date, "end") };
  return {
    since: opts.since ? parseOrFail("--since", opts.since, "start") : undefined,
    until: opts.until ? parseOrFail("--until", opts.until, "end") : undefined,
  };
}
