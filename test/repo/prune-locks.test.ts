// Lock modes: snapshots take an append lock (they run beside each other and beside readers),
// prune the exclusive one. A prune waits for a running snapshot (or refuses with --lock-wait 0),
// and a snapshot or restore waits for a running prune (or refuses). The lock object records its mode.

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { readKeyFile } from "../../src/config/credentials.js";
import { snapshotAgentDir } from "../../src/engine.js";
import { AAD } from "../../src/repo/format.js";
import { Repository } from "../../src/repo/repository.js";
import { LocalTarget } from "../../src/targets/local.js";
import { acquireLock, lockModeOf, type LockInfo } from "../../src/repo/lock.js";
import { cli, collect, expectOneLineError, initRepo, ok, snapshot, spawnCli, expectWaitsForLock } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writeFileExact } from "../helpers/tmp.js";
import { expectRestores, makeHistory, openRepo, pausedPrune } from "./prune-fixture.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("append and exclusive locks", () => {
  let sb: Sandbox;
  const locks = () => readdirSync(path.join(sb.repo, "locks")).filter((n) => !n.includes(".tmp-"));

  beforeAll(async () => {
    sb = makeSandbox("prune-locks");
    await initRepo(sb);
    await makeHistory(sb, 2);
  }, 60_000);

  afterAll(() => sb?.cleanup());

  it("a snapshot goes ahead beside another appender; prune refuses, then waits for it", async () => {
    const repo = await openRepo(sb);
    const held = await acquireLock(repo, { mode: "append", command: "test-appender" });
    try {
      const [id] = locks();
      const info = JSON.parse(repo.unseal(await repo.target.get(`locks/${id}`), "lock", AAD.lock(id)).toString("utf8")) as LockInfo;
      expect([info.mode, info.exclusive, lockModeOf(info)]).toEqual(["append", false, "append"]);

      const s = await snapshot(sb, ["--lock-wait", "0"]);
      expect(s.snapshotId).toMatch(/^[0-9a-f]{64}$/);
      expect(expectOneLineError(await cli(sb, ["prune", "--lock-wait", "0"]), 1)).toMatch(/locked by test-appender/);
      // A dry run only reads: it runs beside appenders.
      await ok(sb, ["prune", "--dry-run", "--lock-wait", "0"]);

      await expectWaitsForLock(sb, ["prune", "--json", "--lock-wait", "30"], held);
    } finally {
      await held.release().catch(() => undefined);
    }
    expect(locks()).toEqual([]);
  });

  it("a snapshot and a restore refuse while prune runs, and a snapshot waits for it", async () => {
    const { child, done } = await pausedPrune(sb, "planned");
    try {
      expect(expectOneLineError(await cli(sb, ["snapshot", "--lock-wait", "0"]), 1)).toMatch(/locked by prune/);
      expect(expectOneLineError(await cli(sb, ["restore", "latest", "--target", path.join(sb.root, "r"), "--lock-wait", "0"]), 1)).toMatch(/locked by prune/);
      const waiting = collect(spawnCli(sb, ["snapshot", "--json", "--lock-wait", "30"]));
      await sleep(1_500);
      child.kill("SIGKILL");
      await done;
      const r = await waiting;
      expect(r.code, r.stderr).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("two concurrent snapshots of the same agent dir both succeed and both restore", async () => {
    const rounds = await makeHistory(sb, 1);
    const [a, b] = await Promise.all([collect(spawnCli(sb, ["snapshot", "--json"])), collect(spawnCli(sb, ["snapshot", "--json"]))]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const state = rounds[0].state;
    await expectRestores(sb, [{ id: a.json().snapshotId, state }, { id: b.json().snapshotId, state }]);
    const check = await cli(sb, ["check", "--read-data", "--json"]);
    expect(check.code, check.stdout).toBe(0);
    expect(locks()).toEqual([]);
  });

  it("an appender whose lock vanished (taken for stale) just before it commits writes no snapshot", async () => {
    const locksDir = path.join(sb.repo, "locks");
    let armed = true;
    // The first pack is handed over after the builder's first lock check: remove the lock there,
    // as a process that judged it stale would.
    const target = new Proxy(new LocalTarget(sb.repo), {
      get(t, prop) {
        const v = Reflect.get(t, prop, t);
        if (typeof v !== "function") return v;
        if (prop === "put") {
          return async (key: string, ...rest: unknown[]) => {
            if (armed && key.startsWith("data/")) {
              armed = false;
              for (const n of readdirSync(locksDir)) rmSync(path.join(locksDir, n));
            }
            return v.call(t, key, ...rest);
          };
        }
        return v.bind(t);
      },
    });
    const repo = await Repository.open(target, (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!);
    writeFileExact(path.join(sb.sessionsDir, "--proj--", "late.jsonl"), '{"late":true}\n'.repeat(500), 0o644);
    const before = readdirSync(path.join(sb.repo, "snapshots")).sort();
    await expect(snapshotAgentDir(loadConfig({}, sb.env), repo)).rejects.toThrow(/removed by another process; stopped/);
    expect(armed).toBe(false);
    expect(readdirSync(path.join(sb.repo, "snapshots")).sort()).toEqual(before);
    rmSync(path.join(sb.sessionsDir, "--proj--", "late.jsonl"));
  });

  it("a snapshot removes only dead writers' staging files (object folders are not walked); prune removes them all", async () => {
    // A pid that is certainly gone: a child that has exited.
    const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
    const tag = (pid: number) => `${os.hostname()}-${pid}-0123456789ab`;
    const staging = path.join(sb.repo, "tmp");
    mkdirSync(staging, { recursive: true });
    const anIndex = readdirSync(path.join(sb.repo, "index"))[0];
    const files = {
      deadStaging: path.join(staging, `${tag(dead)}.pack`),
      liveStaging: path.join(staging, `${tag(process.pid)}.pack`),
      deadTemp: path.join(sb.repo, "index", `${anIndex}.tmp-${tag(dead)}`),
      liveTemp: path.join(sb.repo, "index", `${anIndex}.tmp-${tag(process.pid)}`),
      untagged: path.join(sb.repo, "index", `${anIndex}.tmp-0123456789ab`),
    };
    for (const f of Object.values(files)) writeFileSync(f, "partial");
    await snapshot(sb, ["--lock-wait", "0"]);
    const present = () => Object.fromEntries(Object.entries(files).map(([k, f]) => [k, existsSync(f)]));
    expect(present()).toEqual({ deadStaging: false, liveStaging: true, deadTemp: true, liveTemp: true, untagged: true });
    const r = (await ok(sb, ["prune", "--json"])).json();
    expect(r.tempFilesDeleted).toBe(4);
    expect(present()).toEqual({ deadStaging: false, liveStaging: false, deadTemp: false, liveTemp: false, untagged: false });
  });

  it("locks written by older versions (no mode) and unknown modes are read safely", async () => {
    const repo = await openRepo(sb);
    const write = async (fields: Record<string, unknown>) => {
      const id = "f".repeat(32);
      const info = { host: os.hostname(), pid: process.pid, user: "u", time: new Date().toISOString(), command: "old-pi-guard", ...fields };
      await repo.target.put(`locks/${id}`, repo.seal(Buffer.from(JSON.stringify(info)), AAD.lock(id)));
      return () => repo.target.delete(`locks/${id}`);
    };
    expect(lockModeOf({ exclusive: true } as LockInfo)).toBe("exclusive");
    expect(lockModeOf({ exclusive: false } as LockInfo)).toBe("shared");
    expect(lockModeOf({ exclusive: false, mode: "sideways" } as unknown as LockInfo)).toBe("exclusive");
    for (const [fields, blocksSnapshot] of [
      [{ exclusive: true }, true],
      [{ exclusive: false }, false],
      [{ exclusive: false, mode: "sideways" }, true],
    ] as const) {
      const remove = await write(fields);
      try {
        const r = await cli(sb, ["snapshot", "--json", "--lock-wait", "0"]);
        if (blocksSnapshot) expect(expectOneLineError(r, 1), JSON.stringify(fields)).toMatch(/locked by old-pi-guard/);
        else expect(r.code, r.stderr).toBe(0);
        // Prune conflicts with every lock, whatever its mode.
        expect(expectOneLineError(await cli(sb, ["prune", "--lock-wait", "0"]), 1)).toMatch(/locked by old-pi-guard/);
      } finally {
        await remove();
      }
    }
  });
});
