// --since/--until/--date for `sessions list` and `stats`: a bare date means the whole day, in
// local time or (stats --tz) in the given zone.

import { RepoError } from "../repo/errors.js";
import { parseTime } from "../restore/select.js";
import type { ZoneDays } from "./time-zone.js";

const DAY = /^\d{4}-\d{2}-\d{2}$/;

function parseOrFail(flag: string, value: string, edge: "start" | "end", zone?: ZoneDays): Date {
  const v = value.trim();
  if (DAY.test(v) && Number.isFinite(Date.parse(`${v}T00:00:00Z`))) {
    if (zone) return edge === "start" ? zone.start(v) : zone.end(v);
    const d = new Date(`${v}T${edge === "start" ? "00:00:00.000" : "23:59:59.999"}`);
    if (!Number.isNaN(d.getTime())) return d;
  }
  const t = parseTime(value);
  if (!t) throw new RepoError(`${flag} "${value}" is not a time (try 2026-11-30, 2026-11-30T14:00 or "3 days ago")`, "usage");
  return t;
}

export function timeRange(opts: { since?: string; until?: string; date?: string }, zone?: ZoneDays): { since?: Date; until?: Date } {
  if (opts.date) return { since: parseOrFail("--date", opts.date, "start", zone), until: parseOrFail("--date", opts.date, "end", zone) };
  const range = {
    since: opts.since ? parseOrFail("--since", opts.since, "start", zone) : undefined,
    until: opts.until ? parseOrFail("--until", opts.until, "end", zone) : undefined,
  };
  if (range.since && range.until && range.since > range.until) throw new RepoError(`--since ${opts.since} is after --until ${opts.until}: nothing lies between`, "usage");
  return range;
}
