// `pi-guard stats --json` and `pi-guard dashboard` on real pi sessions, the fixtures and a
// snapshot-only session; the page in real headless Chromium: no console errors, no requests,
// every chart present, and the numbers drawn are exactly those of `stats --json`.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Browser } from "playwright-core";
import { launchChromium, openFile } from "../helpers/browser.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOneLineError, PROJECT_ROOT, snapshot } from "../helpers/cli.js";
import { run, runOk } from "../sessions/cli.js";
import { makeWorld, type World } from "../sessions/world.js";

const ARTIFACTS = path.join(PROJECT_ROOT, "test-artifacts", "dashboard");

interface Stats {
  totals: { sessions: number; live: number; deleted: number; turns: number; tokens: number; cost: number; bytes: number; snapshots: number };
  days: { day: string; sessions: number; turns: number; tokens: number; cost: number }[];
  models: { name: string; tokens: number; cost: number; sessions: number }[];
  projects: { name: string; tokens: number; cost: number; sessions: number }[];
  biggest: { id: string; size: number }[];
  snapshots: { gapHours: number; timeline: { id: string; time: string }[]; gaps: { from: string; to: string; hours: number; open: boolean }[] };
}

let w: World;
let browser: Browser;
let stats: Stats;
let htmlFile: string;
const GAP = "0.0001"; // 0.36 s: snapshots taken seconds apart leave gaps to highlight

beforeAll(async () => {
  w = await makeWorld("dashboard");
  await new Promise((r) => setTimeout(r, 1200));
  await snapshot(w.sb); // a second snapshot, more than GAP after the first
  // ...and stats more than GAP after it, so the open gap since the last snapshot is there for both
  // stats and the dashboard, however fast the snapshot itself was.
  await new Promise((r) => setTimeout(r, 600));
  stats = (await runOk(w.sb, ["--json", "stats", "--gap", GAP])).json<Stats>();
  htmlFile = path.join(w.sb.root, "dash.html");
  await runOk(w.sb, ["dashboard", "--output", htmlFile, "--gap", GAP]);
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  w?.sb.cleanup();
});

describe("stats --json", () => {
  it("adds up the catalog: sessions, turns, tokens per day, model and project, biggest sessions, snapshot gaps", async () => {
    const list = (await runOk(w.sb, ["--json", "sessions", "list"])).json<{ id: string; size: number; tokens: number; cost: number; deleted: boolean; project: string; userMessages: number }[]>();
    expect(stats.totals).toMatchObject({ sessions: list.length, deleted: 1, live: list.length - 1, snapshots: 2 });
    expect(stats.totals.bytes).toBe(list.reduce((a, s) => a + s.size, 0));
    expect(stats.totals.tokens).toBe(list.reduce((a, s) => a + s.tokens, 0));
    expect(stats.totals.tokens).toBeGreaterThan(0);
    expect(stats.totals.turns).toBe(list.reduce((a, s) => a + s.userMessages, 0));
    const sum = (xs: { tokens: number }[]) => xs.reduce((a, x) => a + x.tokens, 0);
    expect(sum(stats.days)).toBe(stats.totals.tokens);
    expect(sum(stats.models)).toBe(stats.totals.tokens);
    expect(sum(stats.projects)).toBe(stats.totals.tokens);
    expect(stats.days.reduce((a, d) => a + d.sessions, 0)).toBe(list.length);
    // Days run without holes from the 2024 v1 fixture to today.
    for (let i = 1; i < stats.days.length; i++) expect(Date.parse(stats.days[i].day) - Date.parse(stats.days[i - 1].day)).toBe(86_400_000);
    const alpha = stats.projects.find((p) => p.name === path.join(w.sb.root, "work", "alpha"))!;
    expect(alpha.sessions).toBe(2); // the main session and its fork
    expect(stats.biggest[0].size).toBe(Math.max(...list.map((s) => s.size)));
    expect(stats.snapshots.timeline).toHaveLength(2);
    expect(stats.snapshots.gaps.length).toBeGreaterThanOrEqual(2); // between the two, and since the last
    expect(stats.snapshots.gaps[stats.snapshots.gaps.length - 1].open).toBe(true);
    const calm = (await runOk(w.sb, ["--json", "stats"])).json<Stats>();
    expect(calm.snapshots.gaps).toEqual([]); // default threshold: 24 h
  });

  it("gives one clear line for a bad --gap and an unwritable --output", async () => {
    expect(expectOneLineError(await run(w.sb, ["stats", "--gap", "soon"]), 2)).toMatch(/--gap must be a number/);
    const file = path.join(w.sb.root, "file");
    writeFileSync(file, "x");
    expect(expectOneLineError(await run(w.sb, ["dashboard", "--output", path.join(file, "d.html")]), 1)).toMatch(/cannot write/);
  });
});

describe("dashboard in headless Chromium", () => {
  it("loads with no console errors and no requests, draws every chart, and shows the numbers of stats --json", async () => {
    const html = readFileSync(htmlFile, "utf8");
    expect(html).not.toMatch(/<script(?![^>]*type="application\/json")/); // no executable script at all
    const { page, errors, requests } = await openFile(browser, htmlFile, { width: 1100 });
    await page.screenshot({ path: path.join(ARTIFACTS, "dashboard.png"), fullPage: true });
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);

    for (const id of ["chart-sessions", "chart-turns", "chart-tokens", "chart-cost", "chart-models", "chart-models-cost", "chart-projects", "chart-projects-cost", "chart-biggest", "chart-snapshots"]) {
      expect(await page.locator(`svg#${id}`).isVisible(), id).toBe(true);
    }
    const values = (sel: string) => page.$$eval(sel, (els) => els.map((e) => [e.getAttribute("data-label"), Number(e.getAttribute("data-value"))]));
    expect(await values("#chart-tokens .bar")).toEqual(stats.days.map((d) => [d.day, d.tokens]));
    expect(await values("#chart-turns .bar")).toEqual(stats.days.map((d) => [d.day, d.turns]));
    expect(await values("#chart-sessions .bar")).toEqual(stats.days.map((d) => [d.day, d.sessions]));
    expect(await values("#chart-cost .bar")).toEqual(stats.days.map((d) => [d.day, d.cost]));
    expect(await values("#chart-models .bar")).toEqual(stats.models.map((m) => [m.name, m.tokens]));
    expect(await values("#chart-projects .bar")).toEqual(stats.projects.map((p) => [p.name, p.tokens]));
    expect((await values("#chart-biggest .bar")).map((v) => v[1])).toEqual(stats.biggest.map((b) => b.size));
    const totals = await page.$$eval("[data-stat]", (els) => Object.fromEntries(els.map((e) => [e.getAttribute("data-stat"), Number(e.getAttribute("data-value"))])));
    expect(totals).toMatchObject({ sessions: stats.totals.sessions, turns: stats.totals.turns, tokens: stats.totals.tokens, cost: stats.totals.cost, snapshots: 2, deleted: 1, gaps: stats.snapshots.gaps.length });
    expect(await page.locator("[data-stat=sessions]").innerText()).toBe(String(stats.totals.sessions));

    // The snapshot timeline: one tick per snapshot, the gaps drawn as bands and listed.
    expect(await page.$$eval("#chart-snapshots .snap", (els) => els.map((e) => e.getAttribute("data-time")))).toEqual(stats.snapshots.timeline.map((s) => s.time));
    expect(await page.locator("#chart-snapshots rect.gap").count()).toBe(stats.snapshots.gaps.length);
    expect(await page.locator("#gaps tr.gap-row").count()).toBe(stats.snapshots.gaps.length);
    await page.locator("#snapshots").screenshot({ path: path.join(ARTIFACTS, "snapshot-timeline.png") });

    // The embedded JSON is the same object stats --json printed (but for when it was made).
    const embedded = JSON.parse(await page.locator("#stats-data").textContent() ?? "{}");
    expect({ ...embedded, generatedAt: 0, snapshots: { ...embedded.snapshots, gaps: 0 } }).toEqual({ ...stats, generatedAt: 0, snapshots: { ...stats.snapshots, gaps: 0 } });
    await page.context().close();
  });
});
