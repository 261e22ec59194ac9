import { formatLocalTime } from "../present/time.js";
import { createRequire } from "node:module";
import { RepoError } from "../repo/errors.js";
import { allSnapshotsDamaged } from "../repo/snapshot-damage.js";
import { isImport, SUSPECT_LOSS_TAG } from "../repo/format.js";
import type { Snapshot } from "../repo/format.js";

/** What choosing needs of a snapshot: a full record or a cached brief both have it. */
type Choosable = { id: string; snapshot: Pick<Snapshot, "time" | "host" | "tags" | "imported"> };

export const WHEN_HELP = 'use "latest", a snapshot id, an ISO time such as 2026-11-30T14:00, or a phrase such as "2h ago" or "yesterday 14:00"';

/** For every --help that takes a time: people read "14:00" as their own clock, so that is what it means. */
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/;
const BARE_DATE = /^\d{4}-\d{2}-\d{2}$/;

/** An ISO time; undefined when the fields name no real moment (Date would roll 02-30 into March). */
function parseIso(m: RegExpExecArray): Date | undefined {
  const [, y, mo, d, h = "00", mi = "00", sec = "00", zone] = m;
  const month = Number(mo);
  const day = Number(d);
  const daysInMonth = new Date(Date.UTC(Number(y), month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) return undefined;
  if (zone && zone !== "Z" && (Number(zone.slice(1, 3)) > 23 || Number(zone.slice(-2)) > 59)) return undefined;
  const text = m[0];
  const t = new Date(text.length === 10 ? `${text}T23:59:59.999` : text);
  return Number.isNaN(t.getTime()) ? undefined : t;
}

/**
 * Parse a time expression; undefined when it is not one. A phrase counts only when chrono reads
 * all of it as one moment: "the day after never" would otherwise be read as "the day after".
 */
export function parseTime(expr: string, now = new Date()): Date | undefined {
  const text = expr.trim();
  if (text === "") return undefined;
  const iso = ISO.exec(text);
  if (iso) return parseIso(iso);
  // chrono-node is large; only phrases like "2h ago" need it.
  const chrono = createRequire(import.meta.url)("chrono-node") as typeof import("chrono-node");
  const results = chrono.parse(text, now, { forwardDate: false });
  if (results.length !== 1) return undefined;
  const [r] = results;
  // A range ("2pm to 3pm") is not one moment.
  if (r.index !== 0 || r.text !== text || r.end) return undefined;
  return r.start.date();
}

/** What a time expression was taken to mean, for the user to check. */
export interface ResolvedTime {
  input: string;
  utc: string;
  local: string;
}

export function describeTime(input: string, t: Date): ResolvedTime {
  return { input, utc: t.toISOString(), local: formatLocalTime(t) };
}

/**
 * A time to restore as of. Refuses the future: no snapshot can hold it, and "tomorrow" is more
 * likely a slip than a wish for `latest`. A bare date means the end of that day, or now if that is today.
 */
export function resolveTime(when: string, now = new Date()): Date {
  const text = when.trim();
  const time = parseTime(text, now);
  if (!time) throw new RepoError(`cannot read "${when}" as a time: ${WHEN_HELP}`, "usage");
  if (BARE_DATE.test(text) && time > now && new Date(`${text}T00:00:00`) <= now) return now;
  if (time > now) {
    const r = describeTime(text, time);
    throw new RepoError(`"${text}" is in the future (${r.utc} UTC, ${r.local} local): no snapshot can be from then; use "latest" for the newest`, "usage");
  }
  return time;
}

/** Tag of the snapshots an in-place restore takes of what it replaces. */
export const PRE_RESTORE_TAG = "pre-restore";

/**
 * How far past this machine's clock a snapshot may be dated and still count as taken now: the
 * clocks of hosts that share a repository drift by seconds, a clock that was wrong once is off by
 * hours or years.
 */
export const CLOCK_SKEW_MS = 5 * 60_000;

/** A snapshot dated after now (plus CLOCK_SKEW_MS) cannot be "latest". */
export const datedInFuture = (s: Choosable, now: Date): boolean => Date.parse(s.snapshot.time) > now.getTime() + CLOCK_SKEW_MS;

const FUTURE = "dated in the future by this machine's clock (a wrong clock?)";

/** At most three snapshots by id and time, the newest last. */
function listed(snaps: Choosable[]): string {
  const shown = snaps.slice(-3).map((s) => `${s.id.slice(0, 8)} (${String(s.snapshot.time)})`);
  return shown.join(", ") + (snaps.length > 3 ? ` and ${snaps.length - 3} more` : "");
}

/** A choice of snapshot, and what the user should know about it (skipped or odd snapshots). */
export interface Selection<R> {
  record: R;
  /** The moment a time expression was read as; absent for "latest" and ids. */
  resolved?: ResolvedTime;
  warnings: string[];
}

/**
 * Resolve `<when>` to a snapshot: "latest", an id prefix, or a time (newest snapshot at or before it).
 * `snapshots` must be sorted oldest first. "latest" skips pre-restore snapshots, so that
 * `restore latest` twice does not undo itself; name those by id or time (restore prints the id).
 * It also skips imported snapshots, whose time an archive chose; name those by id. And it skips
 * suspect-loss snapshots (`watch` saw most files vanish at once): "latest" is the last whole state.
 * Nor is a snapshot dated in the future "latest" (a clock that was wrong once would otherwise pin
 * every restore to it): it is skipped with a warning, and named by id it is taken, with one.
 * `unreadable` are ids of damaged snapshots, so that asking for one says so.
 */
export function selectSnapshot<R extends Choosable>(
  snapshots: R[],
  when: string,
  now = new Date(),
  unreadable: { id: string; error: string }[] = [],
): R {
  return selectSnapshotAt(snapshots, when, now, unreadable).record;
}

/** selectSnapshot, also saying which moment a time expression was taken as (none for latest or an id), and what to warn about. */
export function selectSnapshotAt<R extends Choosable>(
  snapshots: R[],
  when: string,
  now = new Date(),
  unreadable: { id: string; error: string }[] = [],
): Selection<R> {
  const expr = when.trim();
  if (expr === "") throw new RepoError(`no time given: ${WHEN_HELP}`, "usage");
  if (/^[0-9a-f]{4,64}$/i.test(expr)) {
    const prefix = expr.toLowerCase();
    const hits = snapshots.filter((s) => s.id.startsWith(prefix));
    if (hits.length === 1) {
      const warnings = datedInFuture(hits[0], now) ? [`snapshot ${listed(hits)} is ${FUTURE}; taken because it was named by id`] : [];
      return { record: hits[0], warnings };
    }
    if (hits.length > 1) {
      throw new RepoError(`snapshot id ${expr} is ambiguous: ${hits.slice(0, 5).map((h) => h.id.slice(0, 12)).join(", ")}…`, "usage");
    }
    const damaged = unreadable.find((u) => u.id.startsWith(prefix));
    if (damaged) throw new RepoError(damaged.error, "corrupt");
    if (!/^\d+$/.test(expr)) throw new RepoError(`no snapshot has an id starting with ${expr}`, "not-found");
  }
  if (snapshots.length === 0) throw unreadable.length ? allSnapshotsDamaged(unreadable) : new RepoError("the repository has no snapshots yet", "not-found");
  if (expr === "latest") {
    // An import's time is the archive's claim (it may lie in the future): name imports by id.
    const own = snapshots.filter((s) => !isImport(s.snapshot));
    if (own.length === 0) {
      const ids = snapshots.slice(-3).map((s) => s.id.slice(0, 8)).join(", ");
      throw new RepoError(`"latest" never means an imported snapshot, and all snapshots here are imports: name one by id (${ids})`, "not-found");
    }
    const dated = own.filter((s) => !datedInFuture(s, now));
    const skipped = own.filter((s) => datedInFuture(s, now));
    if (dated.length === 0) {
      throw new RepoError(`"latest" never means a snapshot ${FUTURE}, and every snapshot here is one: ${listed(skipped)}; name one by id`, "not-found");
    }
    const tagged = (s: R, tag: string) => Array.isArray(s.snapshot.tags) && s.snapshot.tags.includes(tag);
    const whole = dated.filter((s) => !tagged(s, SUSPECT_LOSS_TAG));
    const real = whole.filter((s) => !tagged(s, PRE_RESTORE_TAG));
    const candidates = real.length ? real : whole.length ? whole : dated;
    const warnings = skipped.length ? [`"latest" skipped ${skipped.length === 1 ? "snapshot" : "snapshots"} ${listed(skipped)}, ${FUTURE}; name one by id to restore it`] : [];
    return { record: candidates[candidates.length - 1], warnings };
  }
  const time = resolveTime(expr, now);
  let best: R | undefined;
  for (const s of snapshots) if (Date.parse(s.snapshot.time) <= time.getTime()) best = s;
  if (!best) {
    throw new RepoError(
      `no snapshot at or before ${time.toISOString()}: the first snapshot is from ${snapshots[0].snapshot.time}`,
      "not-found",
    );
  }
  return { record: best, resolved: describeTime(expr, time), warnings: [] };
}

/**
 * Which host's snapshots a restore chooses among (docs/TARGETS.md, "Several hosts"). With `host`,
 * only that host's. Without it, when the repository holds snapshots of several hosts: this host's
 * if it has any (a machine restores its own history by default), else a refusal that lists the
 * hosts, since "latest" of someone else's machine is rarely what is meant. A snapshot id names one
 * snapshot whatever its host; with `host` as well, the two must agree.
 */
export function snapshotsOfHost<R extends Choosable>(snapshots: R[], when: string, host: string | undefined, thisHost: string): R[] {
  const hosts = new Map<string, number>();
  for (const s of snapshots) hosts.set(s.snapshot.host, (hosts.get(s.snapshot.host) ?? 0) + 1);
  const listing = () =>
    [...hosts.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([h, n]) => `${h} (${n})`)
      .join(", ");
  const expr = when.trim().toLowerCase();
  if (/^[0-9a-f]{4,64}$/.test(expr) && !/^\d+$/.test(expr)) {
    const hits = snapshots.filter((s) => s.id.startsWith(expr));
    if (host !== undefined && hits.length === 1 && hits[0].snapshot.host !== host) {
      throw new RepoError(`snapshot ${hits[0].id.slice(0, 8)} is from host ${hits[0].snapshot.host}, not ${host}`, "usage");
    }
    return snapshots;
  }
  if (host !== undefined) {
    const own = snapshots.filter((s) => s.snapshot.host === host);
    if (own.length === 0) throw new RepoError(`no snapshot is from host ${JSON.stringify(host)}; hosts here: ${listing() || "none"}`, "not-found");
    return own;
  }
  if (hosts.size <= 1) return snapshots;
  if (hosts.has(thisHost)) return snapshots.filter((s) => s.snapshot.host === thisHost);
  throw new RepoError(`this repository holds snapshots of several hosts and none of this one (${thisHost}): choose one with --host: ${listing()}`, "usage");
}
