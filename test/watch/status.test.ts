// `pi-guard status`: exit codes over real snapshots (--max-age), a pending suspected loss (in the
// newest snapshot, or reported by the watcher's state file), and state files that are garbage,
// mistyped, or left by a watcher whose pid is gone.

import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { openRepository, snapshotAgentDir } from "../../src/engine.js";
import { SUSPECT_LOSS_TAG } from "../../src/repo/format.js";
import { watcherFiles, type WatcherState } from "../../src/watch/state.js";
import { cli, expectOneLineError, initRepo, ok, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

describe("pi-guard status", () => {
  let sb: Sandbox;
  let stateFile: string;
  let env: Record<string, string>;

  const state = (over: Partial<WatcherState> = {}): WatcherState => ({
    version: 1,
    pid: process.pid,
    host: os.hostname(),
    agentDir: sb.agentDir,
    repo: sb.repo,
    startedAt: new Date(Date.now() - 3_600_000).toISOString(),
    updatedAt: new Date().toISOString(),
    cpu: { userMs: 18_000, systemMs: 0 },
    rssBytes: 60 * 1024 * 1024,
    snapshots: { made: 42, failed: 1 },
    lastError: { time: new Date().toISOString(), message: "EACCES: permission denied, open 'x'" },
    nextJobs: [],
    ...over,
  });
  const status = (args: string[] = []) => cli(sb, ["status", ...args], { env });

  beforeAll(async () => {
    sb = makeSandbox("status");
    env = { XDG_STATE_HOME: path.join(sb.root, "state") };
    stateFile = watcherFiles(path.join(sb.root, "state", "pi-guard"), sb.agentDir).state;
    mkdirSync(path.dirname(stateFile), { recursive: true });
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);
  });
  afterAll(() => sb?.cleanup());

  it("no snapshot yet: exit 1", async () => {
    const r = await status(["--json"]);
    expect(r.code).toBe(1);
    expect(r.json().problems).toEqual(["no snapshot yet: run pi-guard snapshot"]);
  });

  it("--max-age decides on age: 1h passes, 1ms fails; without it age alone does not fail", async () => {
    const snap = await snapshot(sb);
    await new Promise((r) => setTimeout(r, 5));
    const fresh = await status(["--max-age", "1h", "--json"]);
    expect(fresh.code, fresh.stderr).toBe(0);
    const j = fresh.json();
    expect(j.healthy).toBe(true);
    expect(j.lastGoodSnapshot.id).toBe(snap.snapshotId);
    expect(j.repository.snapshots).toBe(1);
    expect(j.repository.objects.snapshots.count).toBe(1);
    expect(j.repository.objects.keys.count).toBe(1);
    expect(j.repository.objects.data.count).toBeGreaterThan(0);
    expect(j.repository.bytes).toBeGreaterThan(j.repository.objects.data.bytes);
    expect(j.schedules.map((s: { job: string }) => s.job).sort()).toEqual(["check-read-data", "retention"]);
    expect(j.watcher.state).toBe("none");

    const stale = await status(["--max-age", "1ms"]);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(/older than the max age of 1 ms/);
    expect(stale.stdout).toMatch(/UNHEALTHY/);
    expect((await status()).code).toBe(0);
    expectOneLineError(await status(["--max-age", "soon"]), 2);
  });

  it("a running watcher is shown with pid, uptime, CPU, RSS and its last error", async () => {
    writeFileSync(stateFile, JSON.stringify(state()));
    const r = await status(["--json"]);
    expect(r.code).toBe(0);
    const w = r.json().watcher;
    expect(w).toMatchObject({ state: "running", pid: process.pid, rssBytes: 60 * 1024 * 1024, snapshots: { made: 42, failed: 1 } });
    expect(w.uptimeMs).toBeGreaterThanOrEqual(3_600_000);
    expect(w.cpu.percent).toBe(0.5);
    expect(w.lastError.message).toMatch(/EACCES/);
    const human = (await status()).stdout;
    expect(human).toMatch(/watcher\s+running, pid \d+, up 1h/);
  });

  it("a suspected loss reported by the watcher makes status fail", async () => {
    writeFileSync(stateFile, JSON.stringify(state({ suspectLoss: { since: new Date().toISOString(), snapshot: "ab".repeat(32), filesBefore: 10, filesNow: 0 } })));
    const r = await status(["--json"]);
    expect(r.code).toBe(1);
    expect(r.json().problems[0]).toMatch(/suspected loss since .*: 0 of 10 files left/);
  });

  it("a state file whose pid is gone: not running, and when it stopped", async () => {
    const gone = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
    const pid = Number(gone.stdout);
    writeFileSync(stateFile, JSON.stringify(state({ pid })));
    const r = await status(["--json"]);
    expect(r.code).toBe(0);
    expect(r.json().watcher).toMatchObject({ state: "stopped", pid });
    expect(r.json().watcher.message).toMatch(new RegExp(`not running \\(pid ${pid} is gone`));
  });

  it("a live pid whose state file has not been updated for long: stale, not running, and a guard that is not guarding", async () => {
    writeFileSync(stateFile, JSON.stringify(state({ updatedAt: new Date(Date.now() - 3_600_000).toISOString() })));
    const r = await status(["--json"]);
    expect(r.json().watcher.state).toBe("stale");
    expect(r.json().watcher.message).toMatch(/has not been updated since/);
    expect(r.code).toBe(1);
    expect(r.json().problemKinds).toEqual([{ kind: "watcher-hung", message: expect.stringMatching(/^watcher: pid \d+ is alive, but its state file has not been updated since/) }]);
  });

  it("CPU is over the watcher's last window, never above the cores, and not shown over a few seconds of running", async () => {
    const cores = os.availableParallelism();
    // Node's start-up counted against 77 ms of watching (what status said right after a start).
    const start = new Date(Date.now() - 77).toISOString();
    writeFileSync(stateFile, JSON.stringify(state({ startedAt: start, updatedAt: new Date().toISOString(), cpu: { userMs: 300, systemMs: 45 } })));
    let r = await status(["--json"]);
    expect(r.json().watcher.cpu).toMatchObject({ percent: null });
    expect((await status()).stdout).toMatch(/CPU too early to tell/);
    writeFileSync(stateFile, JSON.stringify(state({ cpuRecent: { percent: 3.25, overMs: 60_000 } })));
    r = await status(["--json"]);
    expect(r.json().watcher.cpu).toMatchObject({ percent: 3.3, overMs: 60_000 });
    expect((await status()).stdout).toMatch(/CPU 3\.3 % \(last 1m\)/);
    writeFileSync(stateFile, JSON.stringify(state({ cpuRecent: { percent: 5000, overMs: 60_000 } })));
    expect((await status(["--json"])).json().watcher.cpu.percent).toBe(100 * cores);
  });

  it("PUTs per day only for remote storage, and only after 10 minutes of running", async () => {
    const counts = { puts: 240, gets: 10, lists: 5 };
    const mirrors = [{ mirror: "s3://bucket/laptop", ...counts }, { mirror: path.join(sb.root, "usb"), ...counts }];
    writeFileSync(stateFile, JSON.stringify(state({ requests: counts, mirrorRequests: mirrors })));
    const j = (await status(["--json"])).json();
    expect(j.watcher.requests).toMatchObject({ putsPerDay: null, remote: false, why: "local storage: requests cost nothing" });
    expect(j.watcher.mirrorRequests[0]).toMatchObject({ mirror: "s3://bucket/laptop", putsPerDay: 5760, remote: true });
    expect(j.watcher.mirrorRequests[1]).toMatchObject({ putsPerDay: null, remote: false });
    expect((await status()).stdout).toMatch(/s3:\/\/bucket\/laptop: 240 PUT, 10 GET, 5 LIST in 1h; about 5760 PUTs\/day \(extrapolated from this run\)/);
    const early = new Date(Date.now() - 5 * 60_000).toISOString();
    writeFileSync(stateFile, JSON.stringify(state({ startedAt: early, requests: counts, mirrorRequests: mirrors })));
    const e = (await status(["--json"])).json();
    expect(e.watcher.mirrorRequests[0]).toMatchObject({ putsPerDay: null, why: expect.stringMatching(/^too early to tell/) });
    expect((await status()).stdout).toMatch(/s3:\/\/bucket\/laptop: .*; PUTs\/day: too early to tell \(the watcher has run \d+ s; it takes 10 min\)/);
    writeFileSync(stateFile, JSON.stringify(state()));
  });

  it("a garbage or mistyped state file is 'unreadable state file', not a crash", async () => {
    const junks = [
      "\u0000\u00ff garbage",
      "[1,2,3]",
      JSON.stringify(state({ pid: "12" as unknown as number })),
      JSON.stringify({ ...state(), cpu: null }),
      JSON.stringify(state({ suspectLoss: "yes" as never })),
      JSON.stringify(state({ failingSince: "yesterday" })),
      JSON.stringify(state({ mirrors: [{ mirror: "m", behind: -1 }] as never })),
      JSON.stringify(state({ fullScan: { time: new Date().toISOString(), missed: "all" } as never })),
      JSON.stringify(state({ cpuRecent: { percent: "high" } as never })),
    ];
    for (const junk of junks) {
      writeFileSync(stateFile, junk);
      const r = await status(["--json"]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.json().watcher.state).toBe("unreadable");
      expect(r.json().watcher.message).toMatch(/^unreadable state file /);
      const human = await status();
      expect(human.stdout).toMatch(/unreadable state file/);
      expect(human.stderr).not.toMatch(/internal error|\n\s+at /);
    }
    writeFileSync(stateFile, JSON.stringify(state()));
  });

  it("a newest snapshot tagged suspect-loss fails status and is not the last good one", async () => {
    const config = loadConfig({}, { ...sb.env, ...env });
    const repo = await openRepository(config);
    const loss = await snapshotAgentDir(config, repo, { tags: [SUSPECT_LOSS_TAG] });
    const r = await status(["--json"]);
    expect(r.code).toBe(1);
    const j = r.json();
    expect(j.newestSnapshot).toMatchObject({ id: loss.id, suspectLoss: true });
    expect(j.lastGoodSnapshot.id).not.toBe(loss.id);
    expect(j.problems.some((p: string) => p.includes(`${loss.id.slice(0, 8)}`) && /suspected loss/.test(p))).toBe(true);
    // A later good snapshot (the files came back) clears it.
    await ok(sb, ["snapshot", "-q"]);
    expect((await status()).code).toBe(0);
  });
});
