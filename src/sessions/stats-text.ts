// The human output of `pi-guard stats`: what README promises (usage per day, week or month, per
// model, project and session, with the four token kinds and cost; the biggest sessions; the
// snapshot gaps), drawn from the same Stats object `--json` prints.

import type { PeriodStats, Stats } from "./stats.js";
import { formatCost, formatTokens } from "./describe.js";
import type { TokenCounts } from "./summary.js";

export type StatsView = "day" | "week" | "month" | "session";
export const STATS_VIEWS: readonly StatsView[] = ["day", "week", "month", "session"];

/** Gaps listed at most; the count says how many there are. */
const MAX_GAPS_SHOWN = 10;
/** Characters of a models cell before it is cut. */
const MODELS_WIDTH = 40;

type Table = (rows: string[][]) => string;

const KIND_HEADS = ["input", "output", "cache read", "cache write", "total", "cost"];
const kinds = (g: TokenCounts) => [g.input, g.output, g.cacheRead, g.cacheWrite, g.tokens].map(formatTokens).concat(formatCost(g.cost));
const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
/** Paths keep their end, the part that tells projects apart. */
const cutPath = (text: string, max: number) => (text.length > max ? `…${text.slice(text.length - max + 1)}` : text);
const models = (list: readonly string[]) => cut(list.join(", "), MODELS_WIDTH);
const when = (iso: string | null) => (iso ? iso.replace("T", " ").slice(0, 16) : "-");
const bytes = (n: number) => (n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(2)} GiB` : n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);
const empty = (p: PeriodStats) => !p.sessions && !p.turns && !p.messages && !p.tokens && !p.cost;

function periodTable(s: Stats, view: Exclude<StatsView, "session">, table: Table): string {
  const rows: { label: string; p: PeriodStats }[] =
    view === "day" ? s.days.map((d) => ({ label: d.day, p: d })) : view === "week" ? s.weeks.map((w) => ({ label: `${w.week} (${w.start})`, p: w })) : s.months.map((m) => ({ label: m.month, p: m }));
  const shown = rows.filter((r) => !empty(r.p));
  if (!shown.length) return `no usage per ${view} in this range`;
  const t = s.totals;
  return table([
    [view, "sessions", "turns", "messages", ...KIND_HEADS, "models"],
    ...shown.map(({ label, p }) => [label, String(p.sessions), String(p.turns), String(p.messages), ...kinds(p), models(p.models)]),
    ["total", String(s.days.reduce((a, d) => a + d.sessions, 0)), String(t.turns), String(t.messages), ...kinds(t), ""],
  ]);
}

function sessionTable(s: Stats, table: Table): string {
  if (!s.sessions.length) return "no sessions in this range";
  const t = s.totals;
  return table([
    ["session", "agent", "started", "name or project", "turns", "messages", ...KIND_HEADS, "models"],
    ...s.sessions.map((r) => [r.shortId, r.agent, when(r.started), (r.name ?? cutPath(r.project, 40)), String(r.turns), String(r.messages), ...kinds(r), models(r.models)]),
    ["total", "", "", "", String(t.turns), String(t.messages), ...kinds(t), ""],
  ]);
}

export function renderStatsText(s: Stats, view: StatsView, table: Table): string {
  const t = s.totals;
  const last = s.snapshots.timeline[s.snapshots.timeline.length - 1];
  const filters = [s.range.project && `project ~ ${s.range.project}`, s.range.agent && `agent ${s.range.agent}`].filter(Boolean).join(", ");
  const out = [
    table([
      ["sessions", `${t.sessions} (${t.deleted} only in snapshots)${filters ? `, ${filters}` : ""}`],
      ["turns", String(t.turns)],
      ["tokens", `${formatTokens(t.tokens)} (input ${formatTokens(t.input)}, output ${formatTokens(t.output)}, cache read ${formatTokens(t.cacheRead)}, cache write ${formatTokens(t.cacheWrite)})`],
      ["cost", formatCost(t.cost)],
      ["session bytes", bytes(t.bytes)],
      ["days", `${s.days.length ? `${s.days[0].day} .. ${s.days[s.days.length - 1].day}` : "-"} (${s.range.zone})`],
      ["snapshots", `${t.snapshots}${last ? `, last ${when(last.time)}` : ""}`],
      [`gaps > ${s.snapshots.gapHours} h`, String(s.snapshots.gaps.length)],
    ]),
    view === "session" ? sessionTable(s, table) : periodTable(s, view, table),
  ];
  if (s.models.length) out.push(table([["model", "sessions", "messages", ...KIND_HEADS], ...s.models.map((m) => [m.name, String(m.sessions), String(m.messages), ...kinds(m)]), ["all models", "", String(t.messages), ...kinds(t)]]));
  if (s.projects.length) out.push(table([["project", "sessions", "messages", ...KIND_HEADS], ...s.projects.map((p) => [cutPath(p.name, 48), String(p.sessions), String(p.messages), ...kinds(p)]), ["all projects", String(t.sessions), String(t.messages), ...kinds(t)]]));
  if (s.biggest.length) out.push(table([["biggest sessions", "agent", "size", "tokens", "turns", ""], ...s.biggest.map((b) => [b.shortId, b.agent, bytes(b.size), formatTokens(b.tokens), String(b.turns), `${b.name ?? cutPath(b.project, 40)}${b.deleted ? " (deleted)" : ""}`])]));
  if (s.snapshots.gaps.length) {
    const gaps = s.snapshots.gaps.slice(-MAX_GAPS_SHOWN);
    const more = s.snapshots.gaps.length - gaps.length;
    out.push(table([[`snapshot gaps > ${s.snapshots.gapHours} h${more ? ` (newest ${gaps.length} of ${s.snapshots.gaps.length})` : ""}`, "to", "hours"], ...gaps.map((g) => [when(g.from), g.open ? "now" : when(g.to), String(g.hours)])]));
  }
  return out.join("\n\n");
}
