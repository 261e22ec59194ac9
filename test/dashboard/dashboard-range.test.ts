// The dashboard's time charts over a history of almost two years (a real pi 1.6.0 session moved
// in time, test/sessions/stats-world.ts), in headless Chromium: the last 30 days by default, 90
// or all on request, every bar wide enough to read, and `all` spanning the whole history.

import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, openFile } from "../helpers/browser.js";
import { expectOneLineError, initRepo, PROJECT_ROOT, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { run, runOk } from "../sessions/cli.js";
import { dayIn, timedSession, type TimedSession } from "../sessions/stats-world.js";

const DAY = 86_400_000;
const AGO = [700, 400, 200, 60, 20, 5, 1];
/** Readable: a bar at least this many CSS pixels wide in a 1100-pixel window. */
const MIN_BAR_PX = 4;

let sb: Sandbox;
let session: TimedSession;
let browser: Browser;
const now = Date.now();

beforeAll(async () => {
  sb = makeSandbox("dashboard-range");
  session = await timedSession(sb.agentDir, sb.dir("work/history"), AGO.map((d) => now - d * DAY), "heron");
  await initRepo(sb);
  await snapshot(sb);
  browser = await launchChromium();
}, 180_000);
afterAll(async () => {
  await browser?.close();
  sb?.cleanup();
});

/** Write the page with these flags and read its token chart back from Chromium: labels, values and drawn widths. */
async function tokenBars(flags: string[], name: string) {
  const file = path.join(sb.root, `${name}.html`);
  await runOk(sb, ["dashboard", "--tz", "UTC", "--output", file, ...flags]);
  const { page, errors, requests } = await openFile(browser, file, { width: 1100 });
  await page.screenshot({ path: path.join(PROJECT_ROOT, "test-artifacts", "dashboard", `range-${name}.png`), fullPage: true });
  const bars = await page.$$eval("#chart-tokens .bar", (els) => els.map((e) => ({ label: e.getAttribute("data-label")!, value: Number(e.getAttribute("data-value")), width: e.getBoundingClientRect().width })));
  const unit = await page.$$eval("#range", (els) => els[0]?.getAttribute("data-unit") ?? null);
  const embedded = JSON.parse((await page.locator("#stats-data").textContent()) ?? "{}") as { range: { since: string | null }; totals: { tokens: number } };
  await page.context().close();
  expect(errors).toEqual([]);
  expect(requests).toEqual([]);
  return { bars, unit, embedded };
}

const tokensSince = (ms: number) => session.usage.filter((u) => u.time >= ms).reduce((a, u) => a + u.tokens, 0);
const lastDays = (n: number) => Array.from({ length: n }, (_, i) => dayIn(now - (n - 1 - i) * DAY, "UTC"));

describe("dashboard --range", () => {
  it("draws the last 30 days by default, a readable bar each, with only their usage", async () => {
    const { bars, unit, embedded } = await tokenBars([], "default");
    expect(Math.min(...bars.map((b) => b.width))).toBeGreaterThanOrEqual(MIN_BAR_PX);
    expect(bars.map((b) => b.label)).toEqual(lastDays(30));
    expect(unit).toBe("day");
    const since = Date.parse(`${lastDays(30)[0]}T00:00:00Z`);
    expect(embedded.range.since).toBe(new Date(since).toISOString());
    expect(bars.reduce((a, b) => a + b.value, 0)).toBe(tokensSince(since));
    expect(embedded.totals.tokens).toBe(tokensSince(since));
    expect(bars.filter((b) => b.value > 0)).toHaveLength(3); // 20, 5 and 1 days ago
  });

  it("--range 90d draws 90 days", async () => {
    const { bars, unit } = await tokenBars(["--range", "90d"], "90d");
    expect(unit).toBe("day");
    expect(bars.map((b) => b.label)).toEqual(lastDays(90));
    for (const b of bars) expect(b.width, b.label).toBeGreaterThanOrEqual(MIN_BAR_PX);
    expect(bars.filter((b) => b.value > 0)).toHaveLength(4);
  });

  it("--range all spans the whole history in ISO weeks, still readable, and counts every token pi counts", async () => {
    const { bars, unit, embedded } = await tokenBars(["--range", "all"], "all");
    expect(unit).toBe("week");
    expect(embedded.range.since).toBeNull();
    for (const b of bars) expect(b.width, b.label).toBeGreaterThanOrEqual(MIN_BAR_PX);
    expect(bars.length).toBeGreaterThan(95); // 700 days
    const weekOf = (ms: number) => {
      const d = new Date(ms);
      const thursday = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 3 - ((d.getUTCDay() + 6) % 7)));
      const week = Math.floor((thursday.getTime() - Date.UTC(thursday.getUTCFullYear(), 0, 1)) / (7 * DAY)) + 1;
      return `${thursday.getUTCFullYear()}-W${String(week).padStart(2, "0")}`;
    };
    expect(bars[0].label).toBe(weekOf(session.prompts[0] - 60_000)); // the header's week
    expect(bars[bars.length - 1].label).toBe(weekOf(now));
    expect(bars.reduce((a, b) => a + b.value, 0)).toBe(session.stats.tokens.total);
  });

  it("--since replaces --range; both at once, or a bad range, is one line of usage error", async () => {
    const { bars } = await tokenBars(["--since", dayIn(now - 10 * DAY, "UTC")], "since");
    expect(bars.map((b) => b.label)).toEqual(lastDays(11));
    expect(expectOneLineError(await run(sb, ["dashboard", "--range", "30d", "--since", "2026-01-01"]), 2)).toMatch(/give --range or --since\/--until, not both/);
    expect(expectOneLineError(await run(sb, ["dashboard", "--range", "month"]), 2)).toMatch(/--range must be a number of days such as 30d or 90d, or all, not "month"/);
  });
});
