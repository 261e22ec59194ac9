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

interface Counts {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  tokens: number;
  cost: number;
}
interface Row extends Counts {
  id: string;
  turns: number;
  messages: number;
  copied: number;
}
interface Stats {
  totals: { sessions: number; live: number; deleted: number; turns: number; messages: number; bytes: number; snapshots: number } & Counts;
  days: ({ day: string; sessions: number; turns: number; messages: number } & Counts)[];
  weeks: ({ week: string; sessions: number; turns: number; messages: number } & Counts)[];
  models: ({ name: string; sessions: number; messages: number } & Counts)[];
  projects: ({ name: string; sessions: number; messages: number } & Counts)[];
  sessions: Row[];
  biggest: { id: string; size: number }[];
  snapshots: { gapHours: number; timeline: { id: string; time: string }[]; gaps: { from: string; to: string; hours: number; open: boolean }[] };
}

const KINDS = ["input", "output", "cacheRead", "cacheWrite", "tokens"] as const;
type Line = { type: string; id: string; parentId: string | null; timestamp: string; message?: { role: string; usage?: Counts & { totalTokens: number; cost: { total: number } } } };
const linesOf = (file: string) => readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Line);
const sameEntry = ({ parentId: _a, ...x }: Line, { parentId: _b, ...y }: Line) => JSON.stringify(x) === JSON.stringify(y);

/**
 * What a fork holds that its parent wrote, found by entry identity (same id and content), with
 * what those entries would add: assistant usage and user prompts (all answered in these files).
 * Without a parent: everything in the file.
 */
function copiedFrom(fork: string, parent: string | null) {
  const original = new Map((parent ? linesOf(parent).slice(1) : []).map((e) => [e.id, e]));
  const copies = linesOf(fork).slice(1).filter((e) => !parent || (original.has(e.id) && sameEntry(e, original.get(e.id)!)));
  const usage = copies.flatMap((e) => (e.message?.role === "assistant" && e.message.usage ? [e.message.usage] : []));
  const sum = (f: (u: (typeof usage)[number]) => number) => usage.reduce((a, u) => a + f(u), 0);
  return {
    entries: copies.length,
    turns: copies.filter((e) => e.message?.role === "user").length,
    messages: usage.length,
    input: sum((u) => u.input),
    output: sum((u) => u.output),
    cacheRead: sum((u) => u.cacheRead),
    cacheWrite: sum((u) => u.cacheWrite),
    tokens: sum((u) => u.totalTokens),
    cost: sum((u) => u.cost.total),
  };
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
  await runOk(w.sb, ["dashboard", "--output", htmlFile, "--gap", GAP, "--range", "all"]);
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
    expect(stats.totals.tokens).toBeGreaterThan(0);
    const sum = <T,>(xs: T[], f: (x: T) => number) => xs.reduce((a, x) => a + f(x), 0);
    for (const k of KINDS) {
      expect(sum(stats.days, (d) => d[k]), k).toBe(stats.totals[k]);
      expect(sum(stats.models, (m) => m[k]), k).toBe(stats.totals[k]);
      expect(sum(stats.projects, (p) => p[k]), k).toBe(stats.totals[k]);
    }
    expect(sum(stats.days, (d) => d.turns)).toBe(stats.totals.turns);
    expect(sum(stats.days, (d) => d.cost)).toBeCloseTo(stats.totals.cost, 12);
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

  it("counts a fork's copied entries once, in the parent, and the totals are the sums of the session rows", async () => {
    const list = (await runOk(w.sb, ["--json", "sessions", "list"])).json<({ id: string; turns: number } & Counts)[]>();
    // Two forks: pi's /fork of the main session (real agent loop) and the pi 0.73.1 fixture fork.
    const fixtureFork = copiedFrom(w.fixtures.get("forked.jsonl")!, w.fixtures.get("branched.jsonl")!);
    const loopFork = copiedFrom(w.main.fork!.file, w.main.file);
    expect(fixtureFork.cost).toBeGreaterThan(0);
    expect(loopFork.tokens).toBeGreaterThan(0);
    const listed = (k: "tokens" | "cost" | "turns") => list.reduce((a, s) => a + s[k], 0);
    for (const k of ["tokens", "turns"] as const) expect(stats.totals[k], k).toBe(listed(k) - fixtureFork[k] - loopFork[k]);
    expect(stats.totals.cost).toBeCloseTo(listed("cost") - fixtureFork.cost - loopFork.cost, 12);

    const rows = stats.sessions;
    expect(rows.map((r) => r.id).sort()).toEqual(list.map((s) => s.id).sort());
    // Totals are the sums of the rows: cost, turns, messages and each kind of token.
    const sum = (f: (r: Row) => number) => rows.reduce((a, r) => a + f(r), 0);
    for (const k of [...KINDS, "turns", "messages"] as const) expect(stats.totals[k], k).toBe(sum((r) => r[k]));
    expect(stats.totals.cost).toBe(sum((r) => r.cost));
    expect(stats.totals.input + stats.totals.output + stats.totals.cacheRead + stats.totals.cacheWrite).toBe(stats.totals.tokens);
    expect(stats.totals.cacheRead).toBeGreaterThan(0); // pi's loop reports the prompt cache
    expect(stats.totals.cacheWrite).toBeGreaterThan(0);

    // The fork's row holds only what the fork itself added; the parent's row is the whole parent.
    const row = (id: string) => rows.find((r) => r.id === id)!;
    const listRow = (id: string) => list.find((s) => s.id === id)!;
    const forkId = linesOf(w.fixtures.get("forked.jsonl")!)[0].id;
    expect(row(forkId)).toMatchObject({ tokens: 0, cost: 0, turns: 0, messages: 0, copied: fixtureFork.turns + fixtureFork.messages });
    const forkFile = copiedFrom(w.main.fork!.file, null);
    const mainFile = copiedFrom(w.main.file, null);
    for (const k of KINDS) {
      expect(row(w.main.fork!.sessionId)[k], k).toBe(forkFile[k] - loopFork[k]);
      expect(row(w.main.sessionId)[k], k).toBe(mainFile[k]);
    }
    expect(row(w.main.fork!.sessionId).tokens).toBe(listRow(w.main.fork!.sessionId).tokens - loopFork.tokens);
    expect(row(w.main.fork!.sessionId).turns).toBe(1); // "Continue in the fork"
    expect(row(w.main.sessionId)).toMatchObject({ tokens: listRow(w.main.sessionId).tokens, turns: listRow(w.main.sessionId).turns, copied: 0 });
  });

  it("does not count a merged session's messages again, and prints the token kinds per model", async () => {
    await runOk(w.sb, ["sessions", "merge", w.main.sessionId, w.main.fork!.sessionId]);
    const after = (await runOk(w.sb, ["--json", "stats"])).json<Stats>();
    expect(after.totals.sessions).toBe(stats.totals.sessions + 1);
    for (const k of [...KINDS, "turns", "messages", "cost"] as const) expect(after.totals[k], k).toBe(stats.totals[k]);
    const human = (await runOk(w.sb, ["stats"])).stdout;
    expect(human).toMatch(/model\s+sessions\s+messages\s+input\s+output\s+cache read\s+cache write\s+total\s+cost/);
    expect(human).toMatch(/^all models\s/m);
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
    // The fixtures reach back to 2024: more days than bars fit, so the charts draw ISO weeks.
    expect(stats.days.length).toBeGreaterThan(120);
    expect(await page.locator("#range").getAttribute("data-unit")).toBe("week");
    expect(await values("#chart-tokens .bar")).toEqual(stats.weeks.map((d) => [d.week, d.tokens]));
    expect(await values("#chart-turns .bar")).toEqual(stats.weeks.map((d) => [d.week, d.turns]));
    expect(await values("#chart-sessions .bar")).toEqual(stats.weeks.map((d) => [d.week, d.sessions]));
    expect(await values("#chart-cost .bar")).toEqual(stats.weeks.map((d) => [d.week, d.cost]));
    expect(await values("#chart-models .bar")).toEqual(stats.models.map((m) => [m.name, m.tokens]));
    expect(await values("#chart-projects .bar")).toEqual(stats.projects.map((p) => [p.name, p.tokens]));
    expect((await values("#chart-biggest .bar")).map((v) => v[1])).toEqual(stats.biggest.map((b) => b.size));
    const totals = await page.$$eval("[data-stat]", (els) => Object.fromEntries(els.map((e) => [e.getAttribute("data-stat"), Number(e.getAttribute("data-value"))])));
    expect(totals).toMatchObject({ sessions: stats.totals.sessions, turns: stats.totals.turns, tokens: stats.totals.tokens, cost: stats.totals.cost, snapshots: 2, deleted: 1, gaps: stats.snapshots.gaps.length });
    expect(totals).toMatchObject({ input: stats.totals.input, output: stats.totals.output, cacheRead: stats.totals.cacheRead, cacheWrite: stats.totals.cacheWrite });
    const kinds = (table: string, row: string) => page.$$eval(`#${table} ${row} td[data-kind]`, (els) => Object.fromEntries(els.map((e) => [e.getAttribute("data-kind"), Number(e.getAttribute("data-value"))])));
    const { input, output, cacheRead, cacheWrite, tokens, cost } = stats.totals;
    expect(await kinds("kinds-models", "tr.total")).toEqual({ input, output, cacheRead, cacheWrite, tokens, cost });
    expect(await kinds("kinds-projects", "tr.total")).toEqual({ input, output, cacheRead, cacheWrite, tokens, cost });
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
