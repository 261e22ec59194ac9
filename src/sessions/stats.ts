// The numbers behind `pi-guard stats --json` and the dashboard, computed once from the catalog
// and the repository's snapshot list so that both always agree. Days are calendar days in the
// chosen time zone (stats --tz), cut from the catalog's 15-minute UTC slots (summary.ts).

import type { SessionRecord } from "./catalog.js";
import { addCounts, zeroCounts, type CopiedUse, type TokenCounts } from "./summary.js";
import { compareStrings } from "../compare.js";
import { shortIds } from "./short-id.js";
import { addDays, daysBetween, isoWeek, localZone, ZoneDays } from "./time-zone.js";

/** What one day, week or month holds, as ccusage's daily/weekly/monthly reports show it. */
export interface PeriodStats extends TokenCounts {
  /** Sessions started in the period. */
  sessions: number;
  /** Answered user prompts sent in the period. */
  turns: number;
  /** Assistant messages with usage. */
  messages: number;
  /** "provider/model" of the usage counted, most tokens first. */
  models: string[];
}

export interface DayStats extends PeriodStats {
  day: string;
}

/** An ISO 8601 week ("2026-W48"), starting on Monday `start`. */
export interface WeekStats extends PeriodStats {
  week: string;
  start: string;
}

export interface MonthStats extends PeriodStats {
  month: string;
}

export interface GroupStats extends TokenCounts {
  name: string;
  sessions: number;
  messages: number;
}

/**
 * One session's share. Every entry is counted in one session only: a fork's or merge's copies of
 * another session's entries are counted there (see attributeCopies), so the rows add up to the
 * totals. `copied` counts the copies this session holds that are counted elsewhere.
 */
export interface SessionRow extends TokenCounts {
  id: string;
  /** The shortest prefix no other session's id starts with, as `sessions list` shows it. */
  shortId: string;
  agent: string;
  name: string | null;
  project: string;
  started: string | null;
  deleted: boolean;
  turns: number;
  messages: number;
  copied: number;
  models: string[];
}

export interface SnapshotPoint {
  id: string;
  time: string;
  host: string;
  tags: string[];
}

export interface Gap {
  from: string;
  to: string;
  hours: number;
  /** The gap runs until now: nothing has been backed up since `from`. */
  open: boolean;
}

/** What the numbers cover: the filters given (null: none) and the zone days are cut in. */
export interface StatsRange {
  zone: string;
  since: string | null;
  until: string | null;
  project: string | null;
  agent: string | null;
}

export interface Stats {
  generatedAt: string;
  range: StatsRange;
  totals: { sessions: number; live: number; deleted: number; turns: number; messages: number; bytes: number; snapshots: number } & TokenCounts;
  days: DayStats[];
  weeks: WeekStats[];
  months: MonthStats[];
  models: GroupStats[];
  projects: GroupStats[];
  /** One row per session, oldest first; each number of the totals is the sum of its column. */
  sessions: SessionRow[];
  biggest: { id: string; shortId: string; agent: string; name: string | null; project: string; size: number; tokens: number; turns: number; deleted: boolean }[];
  snapshots: { target: string; gapHours: number; timeline: SnapshotPoint[]; gaps: Gap[] };
}

export interface StatsFilter {
  /** IANA zone whose midnights cut the days (default: this machine's). */
  zone?: string;
  /** Usage and prompts from this time on (to the 15-minute slot), sessions started from then. */
  since?: Date;
  until?: Date;
  /** Substring of the project path (header cwd). */
  project?: string;
  agent?: string;
}

const SLOT_MS = 15 * 60_000;
/** A day list longer than this is filled only between the first and last day with data. */
const MAX_FILLED_DAYS = 3660;

/** Usage by model, so a period can name its models biggest first. */
class PeriodAcc {
  readonly counts: PeriodStats = { sessions: 0, turns: 0, messages: 0, models: [], ...zeroCounts() };
  readonly byModel = new Map<string, number>();

  use(model: string, messages: number, counts: TokenCounts): void {
    this.counts.messages += messages;
    addCounts(this.counts, counts);
    this.byModel.set(model, (this.byModel.get(model) ?? 0) + counts.tokens);
  }

  merge(other: PeriodAcc): void {
    this.counts.sessions += other.counts.sessions;
    this.counts.turns += other.counts.turns;
    this.counts.messages += other.counts.messages;
    addCounts(this.counts, other.counts);
    for (const [m, t] of other.byModel) this.byModel.set(m, (this.byModel.get(m) ?? 0) + t);
  }

  done(): PeriodStats {
    return { ...this.counts, models: [...this.byModel].sort((a, b) => b[1] - a[1] || compareStrings(a[0], b[0])).map(([m]) => m) };
  }
}

class Groups {
  private readonly map = new Map<string, GroupStats & { seen: Set<string> }>();

  add(name: string, session: string, messages: number, use: TokenCounts | undefined): void {
    const g = this.map.get(name) ?? { name, sessions: 0, messages: 0, ...zeroCounts(), seen: new Set<string>() };
    this.map.set(name, g);
    g.messages += messages;
    if (use) addCounts(g, use);
    if (!g.seen.has(session)) {
      g.seen.add(session);
      g.sessions++;
    }
  }

  sorted(): GroupStats[] {
    const byTokens = (a: GroupStats, b: GroupStats) => b.tokens - a.tokens || b.sessions - a.sessions || compareStrings(a.name, b.name);
    return [...this.map.values()].map(({ seen: _seen, ...g }) => g).sort(byTokens);
  }
}

/** Oldest first: a copy is younger than what it copies, and ties break by id so runs agree. */
function byAge(a: SessionRecord, b: SessionRecord): number {
  return compareStrings(a.started ?? "\uffff", b.started ?? "\uffff") || compareStrings(a.id, b.id);
}

/**
 * Decide which session counts each copied entry (identified by entryKey). A copy is counted
 * elsewhere when an older session the copy names as its origin (a fork's parent, a merge's
 * sources) holds the same entry: that session counts it, as its own entry or, if it is a copy
 * there too, by the same rule. Copies whose origin is gone (deleted and in no snapshot) are
 * counted once, by the oldest session holding them. `originKeys` maps a session id to the keys
 * of every entry it holds (from originKeysNeeded).
 */
export function attributeCopies(sessions: readonly SessionRecord[], originKeys: ReadonlyMap<string, ReadonlySet<string>>): Map<string, CopiedUse[]> {
  const ordered = [...sessions].sort(byAge);
  const rank = new Map(ordered.map((s, i) => [s.id, i]));
  const claimed = new Set<string>();
  const counted = new Map<string, CopiedUse[]>();
  for (const s of ordered) {
    const mine: CopiedUse[] = [];
    const origins = (s.origins ?? []).filter((o) => (rank.get(o) ?? Infinity) < rank.get(s.id)!);
    for (const c of s.copied ?? []) {
      if (origins.some((o) => originKeys.get(o)?.has(c.k))) continue;
      if (claimed.has(c.k)) continue;
      claimed.add(c.k);
      mine.push(c);
    }
    counted.set(s.id, mine);
  }
  return counted;
}

/** The sessions whose entry keys attributeCopies needs: older origins of sessions that hold copies. */
export function originKeysNeeded(sessions: readonly SessionRecord[]): string[] {
  const byId = new Map(sessions.map((s) => [s.id, s]));
  const out = new Set<string>();
  for (const s of sessions) {
    if (!s.copied?.length) continue;
    for (const o of s.origins ?? []) {
      const origin = byId.get(o);
      if (origin && o !== s.id && byAge(origin, s) < 0) out.add(o);
    }
  }
  return [...out];
}

export function snapshotGaps(timeline: readonly SnapshotPoint[], gapHours: number, now: Date): Gap[] {
  const gaps: Gap[] = [];
  const times = timeline.map((s) => s.time).sort();
  const limit = gapHours * 3_600_000;
  for (let i = 0; i < times.length; i++) {
    const to = i + 1 < times.length ? times[i + 1] : now.toISOString();
    const ms = Date.parse(to) - Date.parse(times[i]);
    if (ms > limit) gaps.push({ from: times[i], to, hours: Math.round((ms / 3_600_000) * 100) / 100, open: i + 1 === times.length });
  }
  return gaps;
}

/** The days to list, without holes: the range asked for (up to today when only --since is given), widened to every day with data. */
function dayList(withData: string[], since: string | undefined, until: string | undefined, today: string): string[] {
  const sorted = [...withData].sort();
  const first = sorted[0];
  const last = sorted[sorted.length - 1];
  let start = since ?? first;
  let end = until ?? (since ? today : last);
  if (start === undefined || end === undefined) return [];
  if (first !== undefined && first < start) start = first;
  if (last !== undefined && last > end) end = last;
  // `--since 1970-01-01` must not list twenty thousand empty days before the first session.
  if (daysBetween(start, end) > MAX_FILLED_DAYS && first !== undefined) [start, end] = [first > start ? first : start, last < end ? last : end];
  const out: string[] = [];
  for (let d = start; d <= end; d = addDays(d, 1)) out.push(d);
  return out;
}

export function computeStats(
  sessions: readonly SessionRecord[],
  snapshots: { target: string; timeline: SnapshotPoint[] },
  opts: { gapHours: number; now?: Date; biggest?: number; originKeys?: ReadonlyMap<string, ReadonlySet<string>> } & StatsFilter,
): Stats {
  const now = opts.now ?? new Date();
  const zone = new ZoneDays(opts.zone ?? localZone());
  const [since, until] = [opts.since?.getTime() ?? -Infinity, opts.until?.getTime() ?? Infinity];
  const timeFiltered = opts.since !== undefined || opts.until !== undefined;
  // A slot counts when it overlaps the range: slots and zone midnights both fall on quarter hours.
  const slotIn = (slot: string) => {
    const t = Date.parse(slot);
    return t + SLOT_MS > since && t <= until;
  };
  const dayOfSlot = new Map<string, string>();
  const slotDay = (slot: string) => dayOfSlot.get(slot) ?? (dayOfSlot.set(slot, zone.day(Date.parse(slot))), dayOfSlot.get(slot)!);
  const byDay = new Map<string, PeriodAcc>();
  const day = (d: string) => byDay.get(d) ?? (byDay.set(d, new PeriodAcc()), byDay.get(d)!);
  const models = new Groups();
  const projects = new Groups();
  const totals = { sessions: 0, live: 0, deleted: 0, turns: 0, messages: 0, ...zeroCounts(), bytes: 0, snapshots: snapshots.timeline.length };
  // Copies are attributed over every session, so that a filter never moves an entry's count.
  const counted = attributeCopies(sessions, opts.originKeys ?? new Map());
  const rows: SessionRow[] = [];
  const included: SessionRecord[] = [];
  for (const s of [...sessions].sort(byAge)) {
    if (opts.project && !s.project.includes(opts.project)) continue;
    if (opts.agent && s.agent !== opts.agent) continue;
    const startedAt = s.started ? Date.parse(s.started) : NaN;
    const startedIn = Number.isFinite(startedAt) && startedAt >= since && startedAt <= until;
    const mine = counted.get(s.id) ?? [];
    const turns: [string, number][] = Object.entries(s.turnsBySlot ?? {}).filter(([slot]) => slotIn(slot));
    const uses = [
      ...(s.usage ?? []).filter((c) => slotIn(c.slot)).map((c) => ({ slot: c.slot, model: c.model, messages: c.messages, counts: c as TokenCounts })),
      ...mine.flatMap((c: CopiedUse) => (c.use && slotIn(c.slot) ? [{ slot: c.slot, model: c.model ?? "?/?", messages: c.messages ?? 1, counts: c.use }] : [])),
    ];
    for (const c of mine) if (c.turn && slotIn(c.slot)) turns.push([c.slot, 1]);
    if (timeFiltered && !startedIn && !turns.length && !uses.length) continue;
    included.push(s);
    if (s.deleted) totals.deleted++;
    else totals.live++;
    totals.sessions++;
    totals.bytes += s.size;
    if (startedIn) day(zone.day(startedAt)).counts.sessions++;
    const project = s.project || "(unknown)";
    projects.add(project, s.id, 0, undefined);
    const row = new PeriodAcc();
    for (const [slot, n] of turns) {
      day(slotDay(slot)).counts.turns += n;
      row.counts.turns += n;
    }
    for (const u of uses) {
      day(slotDay(u.slot)).use(u.model, u.messages, u.counts);
      row.use(u.model, u.messages, u.counts);
      models.add(u.model, s.id, u.messages, u.counts);
      projects.add(project, s.id, u.messages, u.counts);
    }
    const { sessions: _n, ...r } = row.done();
    rows.push({ id: s.id, shortId: s.id, agent: s.agent, name: s.name, project: s.project, started: s.started, deleted: s.deleted, ...r, copied: (s.copied?.length ?? 0) - mine.length });
    totals.turns += r.turns;
    totals.messages += r.messages;
    addCounts(totals, r);
  }
  const list = dayList([...byDay.keys()], opts.since && zone.day(opts.since.getTime()), opts.until && zone.day(opts.until.getTime()), zone.day(now.getTime()));
  const accs = list.map((d) => [d, byDay.get(d) ?? new PeriodAcc()] as const);
  const weeks = new Map<string, { start: string; acc: PeriodAcc }>();
  const months = new Map<string, PeriodAcc>();
  for (const [d, acc] of accs) {
    const w = isoWeek(d);
    const week = weeks.get(w.week) ?? (weeks.set(w.week, { start: w.start, acc: new PeriodAcc() }), weeks.get(w.week)!);
    week.acc.merge(acc);
    const month = months.get(d.slice(0, 7)) ?? (months.set(d.slice(0, 7), new PeriodAcc()), months.get(d.slice(0, 7))!);
    month.merge(acc);
  }
  const biggest = included
    .sort((a, b) => b.size - a.size || compareStrings(a.id, b.id))
    .slice(0, opts.biggest ?? 10)
    .map((s) => ({ id: s.id, agent: s.agent, name: s.name, project: s.project, size: s.size, tokens: s.tokens, turns: s.turns, deleted: s.deleted }));
  const short = shortIds([...rows, ...biggest].map((b) => b.id), sessions.map((s) => s.id));
  for (const r of rows) r.shortId = short.get(r.id) ?? r.id;
  const timeline = [...snapshots.timeline].sort((a, b) => compareStrings(a.time, b.time));
  return {
    generatedAt: now.toISOString(),
    range: { zone: zone.zone, since: opts.since?.toISOString() ?? null, until: opts.until?.toISOString() ?? null, project: opts.project ?? null, agent: opts.agent ?? null },
    totals,
    days: accs.map(([d, acc]) => ({ day: d, ...acc.done() })),
    weeks: [...weeks].map(([week, w]) => ({ week, start: w.start, ...w.acc.done() })),
    months: [...months].map(([month, acc]) => ({ month, ...acc.done() })),
    models: models.sorted(),
    projects: projects.sorted(),
    sessions: rows,
    biggest: biggest.map((b) => ({ ...b, shortId: short.get(b.id) ?? b.id })),
    snapshots: { target: snapshots.target, gapHours: opts.gapHours, timeline, gaps: snapshotGaps(timeline, opts.gapHours, now) },
  };
}
