// Inline SVG charts for the dashboard: no script and no library, so the page works offline, under
// a CSP that forbids scripts, and prints. Every mark carries data-label/data-value, so tests (and
// curious users) can read the exact numbers back, and a <title> for a hover tooltip.

import { escapeHtml } from "./markdown-text.js";

export interface Point {
  label: string;
  value: number;
}

const fmt = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(4));

/** Vertical bars over time (one per day): labels are dates, shown at the ends only. */
export function columnChart(id: string, points: readonly Point[], opts: { unit?: string; format?: (v: number) => string } = {}): string {
  const w = 900;
  const h = 180;
  const max = Math.max(1e-9, ...points.map((p) => p.value));
  const bw = points.length ? w / points.length : w;
  const show = opts.format ?? fmt;
  const bars = points
    .map((p, i) => {
      const bh = (p.value / max) * (h - 20);
      return `<rect class="bar" x="${(i * bw + bw * 0.1).toFixed(2)}" y="${(h - bh).toFixed(2)}" width="${Math.max(0.5, bw * 0.8).toFixed(2)}" height="${bh.toFixed(2)}" data-label="${escapeHtml(p.label)}" data-value="${p.value}"><title>${escapeHtml(p.label)}: ${escapeHtml(show(p.value))}${opts.unit ? ` ${opts.unit}` : ""}</title></rect>`;
    })
    .join("");
  const first = points[0]?.label ?? "";
  const last = points[points.length - 1]?.label ?? "";
  return `<svg id="${id}" class="chart" viewBox="0 0 ${w} ${h + 18}" role="img" aria-label="${id}">
<line class="axis" x1="0" y1="${h}" x2="${w}" y2="${h}"/>${bars}
<text class="tick" x="0" y="${h + 14}">${escapeHtml(first)}</text><text class="tick" x="${w}" y="${h + 14}" text-anchor="end">${escapeHtml(last)}</text>
<text class="tick" x="2" y="12">max ${escapeHtml(show(max === 1e-9 ? 0 : max))}</text></svg>`;
}

/** Horizontal bars, one per named item, biggest first, with the value written beside each. */
export function barList(id: string, points: readonly Point[], format: (v: number) => string = fmt): string {
  const rowH = 22;
  const w = 900;
  const labelW = 330;
  const max = Math.max(1e-9, ...points.map((p) => p.value));
  const rows = points
    .map((p, i) => {
      const y = i * rowH;
      const bw = (p.value / max) * (w - labelW - 120);
      const label = p.label.length > 48 ? `…${p.label.slice(-47)}` : p.label;
      return `<g class="row"><text class="label" x="${labelW - 8}" y="${y + 15}" text-anchor="end">${escapeHtml(label)}</text><rect class="bar" x="${labelW}" y="${y + 3}" width="${Math.max(0.5, bw).toFixed(2)}" height="${rowH - 6}" data-label="${escapeHtml(p.label)}" data-value="${p.value}"><title>${escapeHtml(p.label)}: ${escapeHtml(format(p.value))}</title></rect><text class="value" x="${labelW + bw + 6}" y="${y + 15}">${escapeHtml(format(p.value))}</text></g>`;
    })
    .join("");
  return `<svg id="${id}" class="chart" viewBox="0 0 ${w} ${Math.max(rowH, points.length * rowH)}" role="img" aria-label="${id}">${rows}</svg>`;
}

/** Snapshots as ticks on a time line; gaps longer than the threshold as red bands. */
export function timelineChart(id: string, times: readonly string[], gaps: readonly { from: string; to: string; hours: number; open: boolean }[], now: string): string {
  const w = 900;
  const h = 70;
  const all = [...times, ...gaps.map((g) => g.to)].map(Date.parse);
  const t0 = Math.min(...all, Date.parse(now));
  const t1 = Math.max(...all, Date.parse(now), t0 + 1);
  const x = (t: string) => (((Date.parse(t) - t0) / (t1 - t0)) * (w - 20) + 10).toFixed(2);
  const bands = gaps
    .map((g) => `<rect class="gap${g.open ? " open" : ""}" x="${x(g.from)}" y="8" width="${Math.max(1, Number(x(g.to)) - Number(x(g.from))).toFixed(2)}" height="${h - 30}" data-from="${g.from}" data-to="${g.to}" data-hours="${g.hours}"><title>no snapshot for ${g.hours} h: ${g.from} → ${g.to}${g.open ? " (until now)" : ""}</title></rect>`)
    .join("");
  const ticks = times.map((t) => `<line class="snap" x1="${x(t)}" y1="12" x2="${x(t)}" y2="${h - 26}" data-time="${t}"><title>snapshot ${t}</title></line>`).join("");
  const start = new Date(t0).toISOString().slice(0, 16).replace("T", " ");
  const end = new Date(t1).toISOString().slice(0, 16).replace("T", " ");
  return `<svg id="${id}" class="chart" viewBox="0 0 ${w} ${h}" role="img" aria-label="${id}">
<line class="axis" x1="10" y1="${h - 22}" x2="${w - 10}" y2="${h - 22}"/>${bands}${ticks}
<text class="tick" x="10" y="${h - 6}">${start}</text><text class="tick" x="${w - 10}" y="${h - 6}" text-anchor="end">${end} (now)</text></svg>`;
}
