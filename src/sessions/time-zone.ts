// Calendar days in an IANA time zone, for `stats --tz` and the dashboard. Intl knows every zone
// and its DST rules; days are handled as "YYYY-MM-DD" strings and stepped on the calendar (not by
// adding 24 h), so a 23- or 25-hour day around a DST change is still one day.

import { RepoError } from "../repo/errors.js";

const DAY_MS = 86_400_000;

/** This machine's zone: what `--tz` defaults to. */
export function localZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** The zone as given (ICU would rename some, Asia/Kathmandu to Asia/Katmandu), or a usage error naming the flag. */
export function checkZone(zone: string, flag = "--tz"): string {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return zone;
  } catch {
    throw new RepoError(`${flag} "${zone}" is not an IANA time zone (try UTC, Europe/Berlin or America/New_York)`, "usage");
  }
}

/** Turns instants into the zone's calendar days; one formatter, reused. */
export class ZoneDays {
  private readonly parts: Intl.DateTimeFormat;

  constructor(readonly zone: string) {
    this.parts = new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  /** The zone's wall clock at `ms`, as if it were UTC (so offset = wall - ms). */
  private wall(ms: number): number {
    const p = Object.fromEntries(this.parts.formatToParts(ms).map((x) => [x.type, x.value]));
    return Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
  }

  /** The day "YYYY-MM-DD" the zone's clocks show at `ms`. */
  day(ms: number): string {
    return new Date(this.wall(ms)).toISOString().slice(0, 10);
  }

  /** The first instant of `day` in the zone (its midnight, or the first minute after a DST gap at midnight). */
  start(day: string): Date {
    const midnight = Date.parse(`${day}T00:00:00Z`);
    // Two rounds of "wall clock minus offset" settle on the instant; a gap leaves it past midnight.
    let t = midnight - (this.wall(midnight) - midnight);
    t = midnight - (this.wall(t) - t);
    if (this.day(t) !== day) t += this.day(t) < day ? 3_600_000 : -3_600_000;
    return new Date(t);
  }

  /** The last millisecond of `day` in the zone. */
  end(day: string): Date {
    return new Date(this.start(addDays(day, 1)).getTime() - 1);
  }
}

export function addDays(day: string, n: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS).toISOString().slice(0, 10);
}

/** Days from `a` to `b` (b - a) on the calendar. */
export function daysBetween(a: string, b: string): number {
  return Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / DAY_MS);
}

/** The ISO 8601 week of a calendar day: "2026-W01" (weeks start on Monday; week 1 holds the year's first Thursday), and its Monday. */
export function isoWeek(day: string): { week: string; start: string } {
  const t = Date.parse(`${day}T00:00:00Z`);
  const weekday = (new Date(t).getUTCDay() + 6) % 7; // Monday 0
  const monday = t - weekday * DAY_MS;
  const thursday = new Date(monday + 3 * DAY_MS);
  const year = thursday.getUTCFullYear();
  const week = Math.floor((thursday.getTime() - Date.UTC(year, 0, 1)) / (7 * DAY_MS)) + 1;
  return { week: `${year}-W${String(week).padStart(2, "0")}`, start: new Date(monday).toISOString().slice(0, 10) };
}
