// The numbers behind `pi-guard stats --json` and the dashboard, computed once from the catalog
// and the repository's snapshot list so that both always agree. Days are UTC days.

import type { SessionRecord } from "./catalog.js";
import { addCounts, zeroCounts, type CopiedUse, type TokenCounts } from "./summary.js";
import { compareStrings } from "../compare.js";
import { shortIds } from "./short-id.js";

export interface DayStats extends TokenCounts {
  day: string;
  /** Sessions started that day. */
  sessions: number;
  /** Answered user prompts sent that day. */
  turns: number;
  /** Assistant messages with usage. */
  messages: number;
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
  name: string | null;
  project: string;
  started: string | null;
  deleted: boolean;
  turns: number;
  messages: number;
  copied: number;
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

export interface Stats {
  generatedAt: string;
  totals: { sessions: number; live: number; deleted: number; turns: number; messages: number; bytes: number; snapshots: number } & TokenCounts;
  days: DayStats[];
  models: GroupStats[];
  projects: GroupStats[];
  /** One row per session, oldest first; each number of the totals is the sum of its column. */
  sessions: SessionRow[];
  biggest: { id: string; shortId: string; name: string | null; project: string; size: number; tokens: number; turns: number; deleted: boolean }[];
  snapshots: { target: string; gapHours: number; timeline: SnapshotPoint[]; gaps: Gap[] };
}

const DAY_MS = 86_400_000;

/** Every day from the first to the last with data, so a chart's time axis has no holes. */
function dayRange(days: Iterable<string>): string[] {
  const sorted = [...days].sort();
  if (!sorted.length) return [];
  const out: string[] = [];
  for (let t = Date.parse(sorted[0]); t <= Date.parse(sorted[sorted.length - 1]); t += DAY_MS) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

const dayStats = (day: string): DayStats => ({ day, sessions: 0, turns: 0, messages: 0, ...zeroCounts() });

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

export function computeStats(
  sessions: readonly SessionRecord[],
  snapshots: { target: string; timeline: SnapshotPoint[] },
  opts: { gapHours: number; now?: Date; biggest?: number; originKeys?: ReadonlyMap<string, ReadonlySet<string>> },
): Stats {
  const now = opts.now ?? new Date();
  const byDay = new Map<string, DayStats>();
  const day = (d: string) => byDay.get(d) ?? (byDay.set(d, dayStats(d)), byDay.get(d)!);
  const models = new Groups();
  const projects = new Groups();
  const totals = { sessions: sessions.length, live: 0, deleted: 0, turns: 0, messages: 0, ...zeroCounts(), bytes: 0, snapshots: snapshots.timeline.length };
  const counted = attributeCopies(sessions, opts.originKeys ?? new Map());
  const rows: SessionRow[] = [];
  for (const s of [...sessions].sort(byAge)) {
    if (s.deleted) totals.deleted++;
    else totals.live++;
    totals.bytes += s.size;
    if (s.started) day(new Date(s.started).toISOString().slice(0, 10)).sessions++;
    const project = s.project || "(unknown)";
    projects.add(project, s.id, 0, undefined);
    const row: SessionRow = { id: s.id, name: s.name, project: s.project, started: s.started, deleted: s.deleted, turns: 0, messages: 0, ...zeroCounts(), copied: 0 };
    const turn = (d: string, n: number) => {
      day(d).turns += n;
      row.turns += n;
    };
    const use = (d: string, model: string, messages: number, counts: TokenCounts) => {
      const ds = day(d);
      ds.messages += messages;
      addCounts(ds, counts);
      row.messages += messages;
      addCounts(row, counts);
      models.add(model, s.id, messages, counts);
      projects.add(project, s.id, messages, counts);
    };
    for (const [d, n] of Object.entries(s.turnsByDay ?? {})) turn(d, n);
    for (const c of s.usage ?? []) use(c.day, c.model, c.messages, c);
    const mine = counted.get(s.id) ?? [];
    for (const c of mine) {
      if (c.turn) turn(c.day, 1);
      if (c.use) use(c.day, c.model ?? "?/?", c.messages ?? 1, c.use);
    }
    row.copied = (s.copied?.length ?? 0) - mine.length;
    totals.turns += row.turns;
    totals.messages += row.messages;
    addCounts(totals, row);
    rows.push(row);
  }
  const days = dayRange(byDay.keys()).map((d) => byDay.get(d) ?? dayStats(d));
  const biggest = [...sessions]
    .sort((a, b) => b.size - a.size || compareStrings(a.id, b.id))
    .slice(0, opts.biggest ?? 10)
    .map((s) => ({ id: s.id, name: s.name, project: s.project, size: s.size, tokens: s.tokens, turns: s.turns, deleted: s.deleted }));
  const short = shortIds(biggest.map((b) => b.id), sessions.map((s) => s.id));
  const timeline = [...snapshots.timeline].sort((a, b) => compareStrings(a.time, b.time));
  return {
    generatedAt: now.toISOString(),
    totals,
    days,
    models: models.sorted(),
    projects: projects.sorted(),
    sessions: rows,
    biggest: biggest.map((b) => ({ ...b, shortId: short.get(b.id) ?? b.id })),
    snapshots: { target: snapshots.target, gapHours: opts.gapHours, timeline, gaps: snapshotGaps(timeline, opts.gapHours, now) },
  };
}
