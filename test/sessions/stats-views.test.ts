// `pi-guard stats` as ccusage users expect it: days cut at a chosen zone's midnight (DST
// changes and a quarter-hour zone included), ISO weeks, months, sessions, --since/--until/
// --project/--agent, and totals equal to pi 1.6.0's own getSessionStats. The sessions are written
// by pi's real agent loop and moved to chosen instants (stats-world.ts).

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOneLineError, initRepo, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { run, runOk } from "./cli.js";
import { dayIn, timedSession, type TimedSession } from "./stats-world.js";

interface Counts {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  tokens: number;
  cost: number;
}
interface Period extends Counts {
  sessions: number;
  turns: number;
  messages: number;
  models: string[];
}
interface Stats {
  range: { zone: string; since: string | null; until: string | null; project: string | null; agent: string | null };
  totals: Counts & { sessions: number; turns: number; messages: number };
  days: (Period & { day: string })[];
  weeks: (Period & { week: string; start: string })[];
  months: (Period & { month: string })[];
  sessions: (Counts & { id: string; shortId: string; agent: string; turns: number; messages: number; models: string[] })[];
}

const KINDS = ["input", "output", "cacheRead", "cacheWrite", "tokens"] as const;
const at = (iso: string) => Date.parse(iso);
// New York: 2026-03-08 springs forward (a 23-hour day), 2026-11-01 falls back (25 hours).
const NIGHT_TIMES = [
  at("2026-03-08T04:50:00Z"), // Mar 7 23:50 EST; Mar 8 04:50 UTC; Mar 8 10:35 in Kathmandu
  at("2026-03-08T05:10:00Z"), // Mar 8 00:10 EST
  at("2026-03-09T03:50:00Z"), // Mar 8 23:50 EDT: still the short day; Mar 9 in UTC
  at("2026-03-09T04:10:00Z"), // Mar 9 00:10 EDT: Monday, ISO week 11
  at("2026-11-02T04:50:00Z"), // Nov 1 23:50 EST: the long day
  at("2026-11-02T05:10:00Z"), // Nov 2 00:10 EST
  at("2026-03-08T18:10:00Z"), // Mar 8 23:55 in Kathmandu (+05:45), Mar 9 00:00 would be 18:15Z
  at("2026-03-08T18:20:00Z"), // Mar 9 00:05 in Kathmandu
];

let sb: Sandbox;
let night: TimedSession;
let recent: TimedSession;
const ZONES = ["America/New_York", "UTC", "Asia/Kathmandu"];

beforeAll(async () => {
  sb = makeSandbox("stats-views");
  night = await timedSession(sb.agentDir, sb.dir("work/nightly"), NIGHT_TIMES, "owl");
  const now = Date.now();
  recent = await timedSession(sb.agentDir, sb.dir("work/daily"), [now - 3 * 86_400_000, now - 60_000], "lark");
  await initRepo(sb);
  await snapshot(sb);
}, 180_000);
afterAll(() => sb?.cleanup());

const stats = async (args: string[]) => (await runOk(sb, ["--json", "stats", ...args])).json<Stats>();

/** What the oracle expects per day in a zone: each reply's usage and each prompt on the day its own timestamp shows there. */
function expectedDays(sessions: TimedSession[], zone: string, keep: (ms: number) => boolean = () => true) {
  const days = new Map<string, Counts & { turns: number; messages: number }>();
  const day = (d: string) => days.get(d) ?? (days.set(d, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, tokens: 0, cost: 0, turns: 0, messages: 0 }), days.get(d)!);
  for (const s of sessions) {
    for (const u of s.usage.filter((u) => keep(u.time))) {
      const d = day(dayIn(u.time, zone));
      for (const k of KINDS) d[k] += u[k];
      d.cost += u.cost;
      d.messages++;
    }
    for (const p of s.prompts.filter(keep)) day(dayIn(p, zone)).turns++;
  }
  return days;
}

describe("stats --tz: days cut at the zone's midnight", () => {
  it("puts each reply on the day its own time shows in New York, UTC and Kathmandu, across both DST changes", async () => {
    for (const zone of ZONES) {
      const s = await stats(["--tz", zone, "--project", "nightly"]);
      expect(s.range.zone).toBe(zone);
      const want = expectedDays([night], zone);
      const got = new Map(s.days.filter((d) => d.messages || d.turns).map((d) => [d.day, { ...Object.fromEntries([...KINDS, "cost", "turns", "messages"].map((k) => [k, d[k as keyof typeof d]])) }]));
      expect([...got.keys()].sort(), zone).toEqual([...want.keys()].sort());
      for (const [d, w] of want) {
        const g = got.get(d)!;
        expect({ ...g, cost: 0 }, `${zone} ${d}`).toEqual({ ...w, cost: 0 });
        expect(g.cost as number).toBeCloseTo(w.cost, 12);
      }
    }
    // The instants were chosen so that each zone cuts differently.
    expect([...expectedDays([night], "America/New_York").keys()].sort()).toEqual(["2026-03-07", "2026-03-08", "2026-03-09", "2026-11-01", "2026-11-02"]);
    const ny = await stats(["--tz", "America/New_York", "--project", "nightly"]);
    const turnsOn = (d: string) => ny.days.find((x) => x.day === d)?.turns;
    expect([turnsOn("2026-03-07"), turnsOn("2026-03-08"), turnsOn("2026-03-09"), turnsOn("2026-11-01"), turnsOn("2026-11-02")]).toEqual([1, 4, 1, 1, 1]);
    const kathmandu = await stats(["--tz", "Asia/Kathmandu", "--project", "nightly"]);
    expect(kathmandu.days.find((x) => x.day === "2026-03-08")?.turns).toBe(3); // 10:35, 10:55 and 23:55
    expect(kathmandu.days.find((x) => x.day === "2026-03-09")?.turns).toBe(3); // 00:05, 09:35 and 09:55
  });

  it("lists every day of the range without holes, a DST day being one day", async () => {
    const s = await stats(["--tz", "America/New_York", "--project", "nightly", "--since", "2026-03-06", "--until", "2026-03-10"]);
    expect(s.days.map((d) => d.day)).toEqual(["2026-03-06", "2026-03-07", "2026-03-08", "2026-03-09", "2026-03-10"]);
    expect(s.days[0]).toMatchObject({ sessions: 0, turns: 0, messages: 0, tokens: 0, models: [] });
    expect(s.days.find((d) => d.day === "2026-03-07")!.sessions).toBe(1); // the header, a minute before the first turn
  });
});

describe("stats views and filters", () => {
  it("totals equal pi 1.6.0's getSessionStats, and each view adds up to them", async () => {
    const s = await stats(["--tz", "America/New_York"]);
    const pi = [night.stats, recent.stats];
    const sum = <T,>(xs: T[], f: (x: T) => number) => xs.reduce((a, x) => a + f(x), 0);
    expect(s.totals.input).toBe(sum(pi, (p) => p.tokens.input));
    expect(s.totals.output).toBe(sum(pi, (p) => p.tokens.output));
    expect(s.totals.cacheRead).toBe(sum(pi, (p) => p.tokens.cacheRead));
    expect(s.totals.cacheWrite).toBe(sum(pi, (p) => p.tokens.cacheWrite));
    expect(s.totals.tokens).toBe(sum(pi, (p) => p.tokens.total));
    expect(s.totals.cost).toBeCloseTo(sum(pi, (p) => p.cost), 12);
    expect(s.totals.messages).toBe(sum(pi, (p) => p.assistantMessages));
    expect(s.totals.tokens).toBeGreaterThan(0);
    for (const view of [s.days, s.weeks, s.months, s.sessions] as Counts[][]) {
      for (const k of KINDS) expect(sum(view, (r) => r[k]), k).toBe(s.totals[k]);
      expect(sum(view, (r) => r.cost)).toBeCloseTo(s.totals.cost, 12);
    }
    for (const view of [s.days, s.weeks, s.months]) expect(sum(view as Period[], (r) => r.sessions)).toBe(2);
    // ISO weeks: Saturday Mar 7 and Sunday Mar 8 are week 10 (from Monday Mar 2), Monday Mar 9 week 11.
    const week = (w: string) => s.weeks.find((x) => x.week === w)!;
    expect(week("2026-W10")).toMatchObject({ start: "2026-03-02", turns: 5 });
    expect(week("2026-W11")).toMatchObject({ start: "2026-03-09", turns: 1 });
    expect(s.months.find((m) => m.month === "2026-03")!.turns).toBe(6);
    const novemberTurns = 2 + recent.prompts.filter((p) => dayIn(p, "America/New_York").startsWith("2026-11")).length;
    expect(s.months.find((m) => m.month === "2026-11")!.turns).toBe(novemberTurns);
    // Weeks run without holes from the first to the last day's week.
    for (let i = 1; i < s.weeks.length; i++) expect(at(s.weeks[i].start) - at(s.weeks[i - 1].start)).toBe(7 * 86_400_000);
    const row = s.sessions.find((r) => r.id === night.sessionId)!;
    expect(row).toMatchObject({ agent: "pi", turns: NIGHT_TIMES.length, models: ["pi1-faux/faux-1"] });
    expect(s.days.find((d) => d.day === "2026-03-08")!.models).toEqual(["pi1-faux/faux-1"]);
  });

  it("--since/--until take dates in --tz and relative times; --project and --agent pick sessions", async () => {
    const ny = "America/New_York";
    const s = await stats(["--tz", ny, "--since", "2026-03-08", "--until", "2026-03-08"]);
    const inDay = (ms: number) => dayIn(ms, ny) === "2026-03-08";
    const want = expectedDays([night, recent], ny, inDay).get("2026-03-08")!;
    expect(s.totals).toMatchObject({ sessions: 1, turns: 4, messages: want.messages, tokens: want.tokens, input: want.input });
    expect(s.range.since).toBe("2026-03-08T05:00:00.000Z"); // midnight EST
    expect(s.range.until).toBe("2026-03-09T03:59:59.999Z"); // the 23-hour day ends at midnight EDT
    expect(s.days.map((d) => d.day)).toEqual(["2026-03-08"]);

    const lately = await stats(["--since", "2 weeks ago"]);
    expect(lately.sessions.map((r) => r.id)).toEqual([recent.sessionId]);
    expect(lately.totals.tokens).toBe(recent.stats.tokens.total);

    const daily = await stats(["--project", "work/daily"]);
    expect(daily.sessions.map((r) => r.id)).toEqual([recent.sessionId]);
    expect(daily.range.project).toBe("work/daily");
    expect((await stats(["--agent", "pi"])).totals.sessions).toBe(2);
    expect((await stats(["--agent", "claude"])).totals).toMatchObject({ sessions: 0, tokens: 0 });
  });

  it("prints per day, week, month or session with the four token kinds, cost and models, plus models, projects, biggest sessions and gaps", async () => {
    const byDay = (await runOk(sb, ["stats", "--tz", "America/New_York"])).stdout;
    expect(byDay).toMatch(/^day\s+sessions\s+turns\s+messages\s+input\s+output\s+cache read\s+cache write\s+total\s+cost\s+models$/m);
    expect(byDay).toMatch(/^2026-03-08\s+0\s+4\s+\d+\s.*pi1-faux\/faux-1$/m);
    expect(byDay).not.toMatch(/^2026-04-01\s/m); // days without activity are left out of the text
    expect(byDay).toMatch(/^model\s+sessions\s+messages\s+input/m);
    expect(byDay).toMatch(/^project\s+sessions\s+messages\s+input/m);
    expect(byDay).toMatch(/work\/nightly\s+1\s/);
    expect(byDay).toMatch(/^biggest sessions\s+agent\s+size/m);
    expect(byDay).toMatch(/\(America\/New_York\)/);
    const byWeek = (await runOk(sb, ["stats", "--tz", "America/New_York", "--by", "week"])).stdout;
    expect(byWeek).toMatch(/^2026-W10 \(2026-03-02\)\s+1\s+5\s/m);
    const byMonth = (await runOk(sb, ["stats", "--by", "month", "--tz", "UTC", "--project", "nightly"])).stdout;
    expect(byMonth).toMatch(/^2026-11\s+0\s+2\s/m);
    const bySession = (await runOk(sb, ["sessions", "stats", "--by", "session"])).stdout;
    expect(bySession).toMatch(/^session\s+agent\s+started\s+name or project\s+turns/m);
    expect(bySession).toMatch(new RegExp(`^${night.sessionId.slice(0, 4)}\\S*\\s+pi\\s+2026-03-08`, "m"));
    const gaps = (await runOk(sb, ["stats", "--gap", "0.0001"])).stdout;
    expect(gaps).toMatch(/^snapshot gaps > 0.0001 h\s+to\s+hours$/m);
    expect(gaps).toMatch(/\s+now\s+[\d.]+$/m);
  });

  it("refuses a bad zone, view or range in one line", async () => {
    expect(expectOneLineError(await run(sb, ["stats", "--tz", "Mars/Olympus"]), 2)).toMatch(/--tz "Mars\/Olympus" is not an IANA time zone/);
    expect(expectOneLineError(await run(sb, ["stats", "--by", "year"]), 2)).toMatch(/--by must be one of day, week, month, session/);
    expect(expectOneLineError(await run(sb, ["stats", "--since", "2026-03-09", "--until", "2026-03-08"]), 2)).toMatch(/--since 2026-03-09 is after --until 2026-03-08/);
    expect(expectOneLineError(await run(sb, ["stats", "--since", "whenever"]), 2)).toMatch(/--since "whenever" is not a time/);
  });
});
