// `pi-guard dashboard`: one self-contained HTML page drawn from the same Stats object that
// `pi-guard stats --json` prints, so the two cannot disagree. No script at all: the CSP forbids
// every request and every script, and the numbers are embedded as JSON for other tools.

import { pageHead } from "./page.js";
import type { PeriodStats, Stats } from "../sessions/stats.js";
import { RepoError } from "../repo/errors.js";
import { addDays, type ZoneDays } from "../sessions/time-zone.js";
import { formatCost, formatTokens } from "../sessions/describe.js";
import { escapeHtml } from "./markdown-text.js";
import { barList, columnChart, timelineChart } from "./svg-charts.js";

const CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const STYLE = `
:root{color-scheme:light dark;--fg:#1f2328;--bg:#fff;--muted:#656d76;--bar:#3b82f6;--card:#f6f8fa;--gap:#e5484d}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#8b949e;--bar:#58a6ff;--card:#161b22;--gap:#f85149}}
body{font:15px/1.5 system-ui,sans-serif;color:var(--fg);background:var(--bg);max-width:980px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}.muted{color:var(--muted)}
dl.totals{display:grid;grid-template-columns:repeat(4,1fr);gap:10px;margin:16px 0}
dl.totals div{background:var(--card);border-radius:8px;padding:10px 14px}dt{color:var(--muted);font-size:13px}dd{margin:0;font-size:22px;font-weight:600}
svg.chart{width:100%;height:auto;display:block}svg .bar{fill:var(--bar)}svg .axis{stroke:var(--muted)}
svg text{fill:var(--fg);font-size:12px}svg .tick{fill:var(--muted)}svg .snap{stroke:var(--bar);stroke-width:2}
svg .gap{fill:var(--gap);opacity:.35}svg .gap.open{opacity:.55}
table{border-collapse:collapse;width:100%;font-size:13px}td,th{text-align:left;padding:3px 8px;border-bottom:1px solid var(--card)}td.n{text-align:right;font-variant-numeric:tabular-nums}
@media print{body{max-width:none}section{break-inside:avoid}}
`;

const bytes = (n: number) => (n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(2)} GiB` : n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);

function total(key: string, label: string, value: number, shown: string): string {
  return `<div><dt>${label}</dt><dd data-stat="${key}" data-value="${value}">${escapeHtml(shown)}</dd></div>`;
}

function gapTable(s: Stats): string {
  if (!s.snapshots.timeline.length) return `<p class="muted" id="no-snapshots">No snapshots yet: run <code>pi-guard init</code> and <code>pi-guard snapshot</code>.</p>`;
  if (!s.snapshots.gaps.length) return `<p class="muted">No gap longer than ${s.snapshots.gapHours} h.</p>`;
  const rows = s.snapshots.gaps.map((g) => `<tr class="gap-row"><td>${escapeHtml(g.from)}</td><td>${g.open ? "now" : escapeHtml(g.to)}</td><td class="n">${g.hours} h</td></tr>`).join("");
  return `<table id="gaps"><tr><th>from</th><th>to</th><th>without a snapshot</th></tr>${rows}</table>`;
}

/** Tokens by kind, as ccusage shows them: one row per model or project, and the totals. */
function kindTable(id: string, rows: { name: string; input: number; output: number; cacheRead: number; cacheWrite: number; tokens: number; cost: number }[], totals: Stats["totals"]): string {
  const cells = (r: Omit<(typeof rows)[number], "name">) =>
    (["input", "output", "cacheRead", "cacheWrite", "tokens"] as const).map((k) => `<td class="n" data-kind="${k}" data-value="${r[k]}">${formatTokens(r[k])}</td>`).join("") +
    `<td class="n" data-kind="cost" data-value="${r.cost}">${escapeHtml(formatCost(r.cost))}</td>`;
  const body = rows.map((r) => `<tr data-name="${escapeHtml(r.name)}"><td>${escapeHtml(r.name)}</td>${cells(r)}</tr>`).join("");
  return `<table id="${id}"><tr><th></th><th>input</th><th>output</th><th>cache read</th><th>cache write</th><th>total</th><th>cost</th></tr>${body}<tr class="total"><th>total</th>${cells(totals)}</tr></table>`;
}

/** A chart with more bars than this draws weeks, then months: a bar stays several pixels wide. */
export const MAX_BARS = 120;

/** `--range`: the last N days ("30d") or "all". */
export function dashboardRange(value: string): number | "all" {
  if (value === "all") return value;
  const m = /^(\d{1,5})d$/.exec(value);
  if (!m || Number(m[1]) < 1) throw new RepoError(`--range must be a number of days such as 30d or 90d, or all, not "${value}"`, "usage");
  return Number(m[1]);
}

/** The start of the last `days` days in the zone, today included. */
export function rangeStart(days: number, zone: ZoneDays, now = new Date()): Date {
  return zone.start(addDays(zone.day(now.getTime()), 1 - days));
}

/** The bars of the time charts: days, or weeks or months when there are too many days to draw. */
export function timeSeries(s: Stats): { unit: "day" | "week" | "month"; rows: { label: string; p: PeriodStats }[] } {
  if (s.days.length <= MAX_BARS) return { unit: "day", rows: s.days.map((d) => ({ label: d.day, p: d })) };
  if (s.weeks.length <= MAX_BARS) return { unit: "week", rows: s.weeks.map((w) => ({ label: w.week, p: w })) };
  return { unit: "month", rows: s.months.map((m) => ({ label: m.month, p: m })) };
}

function rangeText(s: Stats): string {
  const first = s.days[0]?.day;
  const last = s.days[s.days.length - 1]?.day;
  const span = first ? `${first} to ${last}` : "no days with data";
  const filters = [s.range.project && `project ~ ${s.range.project}`, s.range.agent && `agent ${s.range.agent}`].filter(Boolean).join(", ");
  return `${s.range.since || s.range.until ? span : `all of the history (${span})`}, days in ${s.range.zone}${filters ? `, ${filters}` : ""}`;
}

export function renderDashboard(s: Stats): string {
  const t = s.totals;
  const series = timeSeries(s);
  const days = (f: (d: PeriodStats) => number) => series.rows.map((r) => ({ label: r.label, value: f(r.p) }));
  const biggest = s.biggest.map((b) => ({ label: `${b.shortId} ${b.name ?? b.project}${b.deleted ? " (deleted)" : ""}`, value: b.size }));
  const section = (id: string, title: string, body: string) => `<section id="${id}"><h2>${title}</h2>${body}</section>`;
  return `${pageHead({ csp: CSP, title: "pi-guard dashboard", css: STYLE })}
<body>
<h1>pi sessions</h1>
<p class="muted">Generated ${escapeHtml(s.generatedAt)} · <span id="range" data-unit="${series.unit}">${escapeHtml(rangeText(s))}</span> · repository ${escapeHtml(s.snapshots.target)}</p>
<dl class="totals">
${total("sessions", "sessions", t.sessions, String(t.sessions))}${total("deleted", "only in snapshots", t.deleted, String(t.deleted))}${total("turns", "turns", t.turns, String(t.turns))}${total("snapshots", "snapshots", t.snapshots, String(t.snapshots))}
${total("tokens", "tokens", t.tokens, formatTokens(t.tokens))}${total("cost", "cost", t.cost, formatCost(t.cost))}${total("bytes", "session bytes", t.bytes, bytes(t.bytes))}${total("gaps", `gaps &gt; ${s.snapshots.gapHours} h`, s.snapshots.gaps.length, String(s.snapshots.gaps.length))}
${total("input", "input tokens", t.input, formatTokens(t.input))}${total("output", "output tokens", t.output, formatTokens(t.output))}${total("cacheRead", "cache read", t.cacheRead, formatTokens(t.cacheRead))}${total("cacheWrite", "cache write", t.cacheWrite, formatTokens(t.cacheWrite))}
</dl>
<p class="muted">A fork or merge copies entries of another session; each entry is counted once, in the session that wrote it.</p>
${section("sessions-over-time", `Sessions started per ${series.unit}`, columnChart("chart-sessions", days((d) => d.sessions), { unit: "sessions" }))}
${section("turns-over-time", `Turns per ${series.unit}`, columnChart("chart-turns", days((d) => d.turns), { unit: "turns" }))}
${section("tokens-per-day", `Tokens per ${series.unit}`, columnChart("chart-tokens", days((d) => d.tokens), { format: formatTokens, unit: "tokens" }))}
${section("cost-per-day", `Cost per ${series.unit}`, columnChart("chart-cost", days((d) => d.cost), { format: formatCost }))}
${section("per-model", "Tokens per model", barList("chart-models", s.models.map((m) => ({ label: m.name, value: m.tokens })), formatTokens))}
${section("cost-per-model", "Cost per model", barList("chart-models-cost", s.models.map((m) => ({ label: m.name, value: m.cost })), formatCost))}
${section("kinds-per-model", "Tokens by kind per model", kindTable("kinds-models", s.models, t))}
${section("per-project", "Tokens per project", barList("chart-projects", s.projects.map((p) => ({ label: p.name, value: p.tokens })), formatTokens))}
${section("cost-per-project", "Cost per project", barList("chart-projects-cost", s.projects.map((p) => ({ label: p.name, value: p.cost })), formatCost))}
${section("kinds-per-project", "Tokens by kind per project", kindTable("kinds-projects", s.projects, t))}
${section("biggest", "Biggest sessions", barList("chart-biggest", biggest, bytes))}
${section("snapshots", `Snapshots (${escapeHtml(s.snapshots.target)}), gaps longer than ${s.snapshots.gapHours} h in red`, timelineChart("chart-snapshots", s.snapshots.timeline.map((p) => p.time), s.snapshots.gaps, s.generatedAt) + gapTable(s))}
<script id="stats-data" type="application/json">${JSON.stringify(s).replace(/</g, "\\u003c")}</script>
</body>
</html>
`;
}
