// The numbers behind `pi-guard stats --json` and the dashboard, computed once from the catalog
// and the repository's snapshot list so that both always agree. Days are UTC days.

import type { SessionRecord } from "./catalog.js";
import { compareStrings } from "../compare.js";

export interface DayStats {
  day: string;
  /** Sessions started that day. */
  sessions: number;
  /** User prompts sent that day. */
  turns: number;
  tokens: number;
  cost: number;
}

export interface GroupStats {
  name: string;
  sessions: number;
  messages: number;
  tokens: number;
  cost: number;
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
  totals: { sessions: number; live: number; deleted: number; turns: number; tokens: number; cost: number; bytes: number; snapshots: number };
  days: DayStats[];
  models: GroupStats[];
  projects: GroupStats[];
  biggest: { id: string; name: string | null; project: string; size: number; tokens: number; turns: number; deleted: boolean }[];
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

function addTo(map: Map<string, GroupStats>, name: string, messages: number, tokens: number, cost: number, session: string, seen: Map<string, Set<string>>): void {
  const g = map.get(name) ?? { name, sessions: 0, messages: 0, tokens: 0, cost: 0 };
  g.messages += messages;
  g.tokens += tokens;
  g.cost += cost;
  const s = seen.get(name) ?? new Set<string>();
  if (!s.has(session)) {
    s.add(session);
    g.sessions++;
  }
  seen.set(name, s);
  map.set(name, g);
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

export function computeStats(sessions: readonly SessionRecord[], snapshots: { target: string; timeline: SnapshotPoint[] }, opts: { gapHours: number; now?: Date; biggest?: number }): Stats {
  const now = opts.now ?? new Date();
  const byDay = new Map<string, DayStats>();
  const day = (d: string) => byDay.get(d) ?? (byDay.set(d, { day: d, sessions: 0, turns: 0, tokens: 0, cost: 0 }), byDay.get(d)!);
  const models = new Map<string, GroupStats>();
  const projects = new Map<string, GroupStats>();
  const modelSeen = new Map<string, Set<string>>();
  const projectSeen = new Map<string, Set<string>>();
  const totals = { sessions: sessions.length, live: 0, deleted: 0, turns: 0, tokens: 0, cost: 0, bytes: 0, snapshots: snapshots.timeline.length };
  for (const s of sessions) {
    if (s.deleted) totals.deleted++;
    else totals.live++;
    totals.bytes += s.size;
    if (s.started) day(new Date(s.started).toISOString().slice(0, 10)).sessions++;
    for (const [d, n] of Object.entries(s.promptsByDay ?? {})) {
      day(d).turns += n;
      totals.turns += n;
    }
    addTo(projects, s.project || "(unknown)", 0, 0, 0, s.id, projectSeen);
    for (const c of s.usage ?? []) {
      const d = day(c.day);
      d.tokens += c.tokens;
      d.cost += c.cost;
      totals.tokens += c.tokens;
      totals.cost += c.cost;
      addTo(models, c.model, c.messages, c.tokens, c.cost, s.id, modelSeen);
      addTo(projects, s.project || "(unknown)", c.messages, c.tokens, c.cost, s.id, projectSeen);
    }
  }
  const days = dayRange(byDay.keys()).map((d) => byDay.get(d) ?? { day: d, sessions: 0, turns: 0, tokens: 0, cost: 0 });
  const byTokens = (a: GroupStats, b: GroupStats) => b.tokens - a.tokens || b.sessions - a.sessions || compareStrings(a.name, b.name);
  const biggest = [...sessions]
    .sort((a, b) => b.size - a.size || compareStrings(a.id, b.id))
    .slice(0, opts.biggest ?? 10)
    .map((s) => ({ id: s.id, name: s.name, project: s.project, size: s.size, tokens: s.tokens, turns: s.turns, deleted: s.deleted }));
  const timeline = [...snapshots.timeline].sort((a, b) => compareStrings(a.time, b.time));
  return {
    generatedAt: now.toISOString(),
    totals,
    days,
    models: [...models.values()].sort(byTokens),
    projects: [...projects.values()].sort(byTokens),
    biggest,
    snapshots: { target: snapshots.target, gapHours: opts.gapHours, timeline, gaps: snapshotGaps(timeline, opts.gapHours, now) },
  };
}
