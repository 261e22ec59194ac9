// Schedules: fire times from node-cron expressions, the "due" rule, the record in schedule.json,
// the Scheduler's one-at-a-time runs, the job runner with real snapshot/check jobs, and the CLI.
// Times are built in local time (as cron reads them), so the tests hold in any TZ.

import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig, type Schedule } from "../../src/config/config.js";
import { initRepository, openRepository } from "../../src/engine.js";
import { nativeEngine } from "../../src/engine/native.js";
import { ENGINE_JOBS, jobContext, runJob, type JobMap } from "../../src/watch/jobs.js";
import {
  acquireScheduleLock,
  crontabLine,
  dueJobs,
  nextRuns,
  readScheduleState,
  runScheduled,
  Scheduler,
  scheduleStateFile,
  upcomingJobs,
  upcomingJobsFrom,
} from "../../src/watch/schedule.js";
import { cli, expectOneLineError, initRepo, ok, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

const local = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0) => new Date(y, mo - 1, d, h, mi, s);

describe("fire times", () => {
  it("lists the next runs of daily, weekly, stepped and last-day expressions", () => {
    const from = local(2026, 12, 1, 10, 0); // a Tuesday
    const [daily, weekly, stepped, lastDay] = nextRuns(
      [
        { job: "retention", cron: "17 3 * * *" },
        { job: "check-read-data", cron: "41 4 * * 0" },
        { job: "snapshot", cron: "*/20 * * * *" },
        { job: "prune", cron: "0 2 L * *" },
      ],
      from,
      3,
    );
    expect(daily.next).toEqual([local(2026, 12, 2, 3, 17), local(2026, 12, 3, 3, 17), local(2026, 12, 4, 3, 17)]);
    expect(weekly.next).toEqual([local(2026, 12, 6, 4, 41), local(2026, 12, 13, 4, 41), local(2026, 12, 20, 4, 41)]);
    expect(stepped.next).toEqual([local(2026, 12, 1, 10, 20), local(2026, 12, 1, 10, 40), local(2026, 12, 1, 11, 0)]);
    expect(lastDay.next).toEqual([local(2026, 12, 31, 2, 0), local(2027, 1, 31, 2, 0), local(2027, 2, 28, 2, 0)]);
  });

  it("a fire time exactly at `from` is not next (strictly after)", () => {
    const [r] = nextRuns([{ job: "retention", cron: "17 3 * * *" }], local(2026, 12, 1, 3, 17), 1);
    expect(r.next).toEqual([local(2026, 12, 2, 3, 17)]);
  });
});

describe("upcoming jobs as the clock moves (the watcher's state)", () => {
  it("answers at every moment what a fresh computation answers: across fire times, a seconds field, and a clock set back", () => {
    const schedules: Schedule[] = [
      { job: "retention", cron: "17 3 * * *" },
      { job: "check", cron: "*/20 * * * * *" },
      { job: "prune", cron: "0 0 29 2 *" },
    ];
    const upcoming = upcomingJobsFrom(schedules);
    const start = local(2027, 3, 1, 3, 16, 50).getTime();
    // Every 7 s for 3 minutes (past 03:17:00 and several 20-second fires), then back an hour, then on.
    const moments = [...Array.from({ length: 26 }, (_, i) => start + i * 7000), start - 3_600_000, start - 3_600_000 + 5000, start + 100_000];
    for (const t of moments) {
      const now = new Date(t);
      expect(upcoming(now), now.toString()).toEqual(upcomingJobs(schedules, now));
    }
  });
});

describe("due jobs", () => {
  const sched: Schedule[] = [{ job: "retention", cron: "17 3 * * *" }];

  it("is due once a fire time passed since the last run, and not before", () => {
    const lastRun = local(2026, 12, 1, 3, 17, 2);
    expect(dueJobs(sched, { retention: lastRun }, local(2026, 12, 2, 3, 16, 59))).toEqual([]);
    const due = dueJobs(sched, { retention: lastRun }, local(2026, 12, 2, 3, 17));
    expect(due).toEqual([{ job: "retention", cron: "17 3 * * *", fireTime: local(2026, 12, 2, 3, 17) }]);
  });

  it("fire times missed while nothing ran make it due once, not once per missed fire", () => {
    const due = dueJobs(sched, { retention: local(2026, 11, 20, 3, 17, 5) }, local(2026, 12, 1, 9, 0));
    expect(due).toHaveLength(1);
    expect(due[0].fireTime).toEqual(local(2026, 12, 1, 3, 17));
  });

  it("a job never seen is not due; one first seen counts from then", () => {
    expect(dueJobs(sched, {}, local(2026, 12, 1, 9, 0))).toEqual([]);
    expect(dueJobs(sched, { retention: local(2026, 12, 1, 9, 0).toISOString() }, local(2026, 12, 1, 23, 0))).toEqual([]);
    expect(dueJobs(sched, { retention: local(2026, 12, 1, 9, 0).toISOString() }, local(2026, 12, 2, 3, 18))).toHaveLength(1);
  });
});

describe("crontab lines", () => {
  const program = { node: "/usr/bin/node", bin: "/opt/pi guard/bin/pi-guard.js" };

  it("quote what the shell would split and escape cron's %", () => {
    const { line, note } = crontabLine({ job: "retention", cron: "17 3 * * *" }, program, { PI_GUARD_KEY_FILE: "/k/50%key" });
    expect(line).toBe("17 3 * * * PI_GUARD_KEY_FILE=/k/50\\%key /usr/bin/node '/opt/pi guard/bin/pi-guard.js' run-scheduled --job retention");
    expect(note).toBeUndefined();
  });

  it("say so for a seconds field, and for day-of-month with day-of-week", () => {
    expect(crontabLine({ job: "snapshot", cron: "*/10 * * * * *" }, program, {}).line).toBeUndefined();
    expect(crontabLine({ job: "prune", cron: "0 2 1 * 1" }, program, {}).note).toMatch(/either matches/);
  });
});

describe("running scheduled jobs", () => {
  let sb: Sandbox | undefined;
  afterEach(() => sb?.cleanup());

  it("records first sight, runs what is due one at a time, records each result, and a garbage record is rewritten", async () => {
    sb = makeSandbox("sched-run");
    const stateDir = sb.dir("state");
    const schedules: Schedule[] = [
      { job: "snapshot", cron: "0 * * * *" },
      { job: "check", cron: "30 * * * *" },
    ];
    let clock = local(2026, 12, 1, 9, 10);
    const calls: string[] = [];
    let running = 0;
    const run = async (job: string) => {
      running++;
      expect(running).toBe(1);
      calls.push(job);
      await new Promise((r) => setTimeout(r, 20));
      running--;
      if (job === "check") throw new Error("check blew up\nsecond line");
      return { ok: true, summary: `${job} done` };
    };
    const first = await runScheduled({ schedules, stateDir, run, now: () => clock });
    expect(first.ran).toEqual([]);
    const seen = (await readScheduleState(stateDir)).state;
    expect(seen.jobs.snapshot?.since).toBe(clock.toISOString());

    clock = local(2026, 12, 1, 10, 45);
    const second = await runScheduled({ schedules, stateDir, run, now: () => clock });
    expect(calls).toEqual(["snapshot", "check"]);
    expect(second.ran.map((r) => [r.job, r.ok, r.summary])).toEqual([
      ["snapshot", true, "snapshot done"],
      ["check", false, "check blew up"],
    ]);
    const recorded = JSON.parse(readFileSync(scheduleStateFile(stateDir), "utf8"));
    expect(recorded.jobs.check.lastRun).toMatchObject({ ok: false, summary: "check blew up", trigger: "schedule" });

    // Nothing new is due in the same hour.
    expect((await runScheduled({ schedules, stateDir, run, now: () => clock })).ran).toEqual([]);

    writeFileSync(scheduleStateFile(stateDir), '{"jobs": {"snapshot": {"lastRun": {"start": 5, "ok": "yes"}}, "check": []}');
    const garbage = await readScheduleState(stateDir);
    expect(garbage.state.jobs).toEqual({});
    writeFileSync(scheduleStateFile(stateDir), "\u0000not json");
    const again = await runScheduled({ schedules, stateDir, run, now: () => clock });
    expect(again.stateProblem).toMatch(/not valid JSON/);
    expect(again.ran).toEqual([]);
    expect((await readScheduleState(stateDir)).problem).toBeUndefined();
  });

  it("another live runner holds the schedule lock: nothing runs; a dead one's lock is taken over", async () => {
    sb = makeSandbox("sched-lock");
    const stateDir = sb.dir("state");
    writeFileSync(path.join(stateDir, "schedule.lock"), `${process.ppid}\n`);
    const busy = await runScheduled({ schedules: [], stateDir, only: "check", run: async () => ({ ok: true, summary: "x" }) });
    expect(busy.busy).toEqual({ pid: process.ppid });
    expect(busy.ran).toEqual([]);
    writeFileSync(path.join(stateDir, "schedule.lock"), "999999999\n");
    const lock = await acquireScheduleLock(stateDir);
    expect("release" in lock).toBe(true);
    if ("release" in lock) await lock.release();
  });

  it("the Scheduler catches up a missed fire at start, never overlaps, and stop waits for the running job", async () => {
    sb = makeSandbox("sched-class");
    const stateDir = sb.dir("state");
    mkdirSync(stateDir, { recursive: true });
    const schedules: Schedule[] = [{ job: "check", cron: "* * * * * *" }];
    // Counted from a minute ago: the every-second schedule is due at once.
    writeFileSync(scheduleStateFile(stateDir), JSON.stringify({ version: 1, jobs: { check: { since: new Date(Date.now() - 60_000).toISOString() } } }));
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const scheduler = new Scheduler({
      schedules,
      stateDir,
      maxSleepMs: 50,
      run: async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        runs++;
        if (runs === 2) await gate;
        running--;
        return { ok: true, summary: "checked" };
      },
    });
    scheduler.start();
    while (runs < 2) await new Promise((r) => setTimeout(r, 20));
    const stopped = scheduler.stop();
    let stopDone = false;
    void stopped.then(() => (stopDone = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(stopDone).toBe(false);
    release();
    await stopped;
    const after = runs;
    await new Promise((r) => setTimeout(r, 1200));
    expect(runs).toBe(after);
    expect(maxRunning).toBe(1);
    expect((await readScheduleState(stateDir)).state.jobs.check?.lastRun?.ok).toBe(true);
  });

  it("the job runner runs real snapshot and check jobs on one open repository, and says what this build lacks", async () => {
    sb = makeSandbox("sched-jobs");
    writePiConfigFiles(sb.agentDir);
    const env = { ...sb.env, XDG_STATE_HOME: path.join(sb.root, "state") };
    const config = loadConfig({}, env);
    await initRepository(config, { useKeyFile: true });
    let opened = 0;
    const ctx = jobContext(config, async () => nativeEngine(config, () => (opened++, openRepository(config))), 10_000);
    const snap = await runJob("snapshot", ctx);
    expect(snap.ok, snap.summary).toBe(true);
    expect(snap.summary).toMatch(/^snapshot [0-9a-f]{8}: 3 files/);
    const check = await runJob("check-read-data", ctx);
    expect(check.ok, check.summary).toBe(true);
    expect(check.summary).toMatch(/1 snapshots, .* no errors/);
    expect(opened).toBe(1);
    // Retention for real: a second snapshot, a policy that keeps one, forget then prune.
    writeFileSync(path.join(sb.agentDir, "settings.json"), JSON.stringify({ changed: true }));
    expect((await runJob("snapshot", ctx)).ok).toBe(true);
    const keepOne = jobContext({ ...config, retention: { keepLast: 1 } }, async () => nativeEngine(config, () => openRepository(config)), 10_000);
    const retention = await runJob("retention", keepOne);
    expect(retention.ok, retention.summary).toBe(true);
    expect(retention.summary).toMatch(/^forgot 1 snapshot\(s\), kept 1; deleted \d+ pack\(s\)/);
    const again = await runJob("prune", keepOne);
    expect(again).toMatchObject({ ok: true, summary: expect.stringMatching(/^nothing to prune/) });
    expect((await runJob("check-read-data", keepOne)).ok).toBe(true);
    const gone = loadConfig({}, { ...env, PI_CODING_AGENT_DIR: path.join(sb.root, "gone") });
    const missing = jobContext(gone, async () => nativeEngine(gone, () => openRepository(config)), 10_000);
    expect(await runJob("snapshot", missing)).toEqual({ ok: false, summary: `nothing to back up: ${path.join(sb.root, "gone")} does not exist; set PI_CODING_AGENT_DIR or --agent-dir (or pass --allow-empty)` });
    expect((await (await openRepository(config)).listSnapshots()).length).toBe(1);
    const jobs: JobMap = { ...ENGINE_JOBS, check: async () => { throw new Error("boom"); } };
    expect(await runJob("check", ctx, jobs)).toEqual({ ok: false, summary: "boom" });
  });
});

describe("schedule and run-scheduled commands", () => {
  let sb: Sandbox | undefined;
  afterEach(() => sb?.cleanup());

  it("schedule lists next runs and crontab lines; run-scheduled runs a named job, records it, and fails honestly", async () => {
    sb = makeSandbox("sched-cli");
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);
    await snapshot(sb);
    const listed = (await ok(sb, ["schedule", "--json"])).json();
    expect(listed.schedules.map((s: { job: string }) => s.job)).toEqual(["retention", "check-read-data"]);
    expect(listed.schedules[0].next).toHaveLength(3);
    expect(listed.schedules[0].crontab).toMatch(/^17 3 \* \* \* .*PI_GUARD_KEY_FILE=.* run-scheduled --job retention$/);
    expect(listed.schedules[0].crontab).toContain(process.execPath);

    const nothing = await ok(sb, ["run-scheduled"]);
    expect(nothing.stdout).toMatch(/nothing due; next: retention/);

    const ran = (await ok(sb, ["run-scheduled", "--job", "check", "--json"])).json();
    expect(ran.ran).toMatchObject([{ job: "check", ok: true, trigger: "manual" }]);
    const retention = (await ok(sb, ["run-scheduled", "--job", "retention", "--json"])).json();
    expect(retention.ran).toMatchObject([{ job: "retention", ok: true, summary: expect.stringMatching(/^forgot 0 snapshot\(s\), kept 1; /) }]);
    rmSync(sb.agentDir, { recursive: true, force: true });
    const failed = await cli(sb, ["run-scheduled", "--job", "snapshot"]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/FAILED\s+snapshot.*nothing to back up/);
    const human = (await ok(sb, ["schedule"])).stdout;
    expect(human).toMatch(/retention .*ok/);

    expectOneLineError(await cli(sb, ["run-scheduled", "--job", "nope"]), 2);
  });

  it("an invalid cron expression in the config is a one-line usage error", async () => {
    sb = makeSandbox("sched-badcron");
    const configFile = path.join(sb.configHome, "pi-guard", "config.json");
    mkdirSync(path.dirname(configFile), { recursive: true });
    writeFileSync(configFile, JSON.stringify({ schedules: [{ job: "check", cron: "61 3 * * *" }] }));
    const line = expectOneLineError(await cli(sb, ["schedule"]), 2);
    expect(line).toMatch(/schedules\.0\.cron: "61 3 \* \* \*" is not a valid cron expression \(minute/);
    writeFileSync(configFile, JSON.stringify({ schedules: [{ job: "check", cron: "every day" }] }));
    expect(expectOneLineError(await cli(sb, ["status"]), 2)).toMatch(/not a valid cron expression/);
  });
});
