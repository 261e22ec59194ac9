// Readers take a shared lock, and a lock that is lost while a command runs stops that command:
// a refresh first checks that the lock still exists (another process may have removed it as
// stale), and a refresh that fails aborts the operation instead of carrying on unprotected.

import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { generateAgentDir } from "../../bench/generate.js";
import { loadConfig } from "../../src/config/config.js";
import { readKeyFile } from "../../src/config/credentials.js";
import { restore, snapshotAgentDir } from "../../src/engine.js";
import { acquireLock } from "../../src/repo/lock.js";
import { Repository } from "../../src/repo/repository.js";
import { LocalTarget } from "../../src/targets/local.js";
import type { Target } from "../../src/targets/target.js";
import { cli, collect, expectOneLineError, initRepo, ok, PROJECT_ROOT, snapshot, spawnCli } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writeFileExact, writePiConfigFiles } from "../helpers/tmp.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The repository's target, with a hook before every read or write of pack data. */
function hookedTarget(inner: LocalTarget, beforeData: () => Promise<void>, onLockPut?: () => void): Target {
  return new Proxy(inner, {
    get(t, prop) {
      const v = Reflect.get(t, prop, t);
      if (typeof v !== "function") return v;
      if (prop === "get" || prop === "getRange" || prop === "put") {
        return async (key: string, ...rest: unknown[]) => {
          if (key.startsWith("data/")) await beforeData();
          if (key.startsWith("locks/") && prop === "put") onLockPut?.();
          return v.call(t, key, ...rest);
        };
      }
      return v.bind(t);
    },
  });
}

describe("a lost lock stops the command", () => {
  let sb: Sandbox;
  const locksDir = () => path.join(sb.repo, "locks");
  const locks = () => (existsSync(locksDir()) ? readdirSync(locksDir()).filter((n) => !n.includes(".tmp-")) : []);
  const snapshotObjects = () => readdirSync(path.join(sb.repo, "snapshots"));
  const removeLocks = () => {
    for (const n of locks()) rmSync(path.join(locksDir(), n), { force: true });
  };
  /**
   * Another process removes the lock. A refresh already past its existence check re-creates it (the
   * window restic has too), so it is removed a few times over, as a stale-lock remover would.
   */
  const removeLockRepeatedly = async () => {
    for (let i = 0; i < 6; i++) {
      removeLocks();
      await sleep(30);
    }
  };
  const open = async (target: Target) => Repository.open(target, (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!);
  const config = () => loadConfig({}, sb.env);

  beforeAll(async () => {
    sb = makeSandbox("lock-lost");
    writePiConfigFiles(sb.agentDir);
    for (let i = 0; i < 40; i++) writeFileExact(path.join(sb.sessionsDir, "--p--", `f${i}.jsonl`), randomBytes(6000).toString("base64"), 0o644);
    await initRepo(sb);
    await snapshot(sb);
    process.env.PI_GUARD_LOCK_REFRESH_MS = "20";
  });

  afterEach(() => expect(locks()).toEqual([]));

  afterAll(() => {
    delete process.env.PI_GUARD_LOCK_REFRESH_MS;
    sb?.cleanup();
  });

  it("a restore whose lock another process removed stops, non-zero", async () => {
    let removed = false;
    const repo = await open(
      hookedTarget(new LocalTarget(sb.repo), async () => {
        if (!removed) {
          removed = true;
          await removeLockRepeatedly();
        }
        await sleep(30);
      }),
    );
    await expect(restore(config(), repo, "latest", { targetDir: sb.dir("restore-removed") })).rejects.toThrow(
      /the repository lock of this restore was removed by another process; stopped/,
    );
    expect(removed).toBe(true);
  });

  it("a restore whose lock cannot be refreshed stops, non-zero", async () => {
    let reading = false;
    const repo = await open(
      hookedTarget(
        new LocalTarget(sb.repo),
        async () => {
          reading = true;
          await sleep(30);
        },
        () => {
          if (reading) throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
        },
      ),
    );
    await expect(restore(config(), repo, "latest", { targetDir: sb.dir("restore-refresh-fails") })).rejects.toThrow(
      /cannot refresh the repository lock of this restore \(ENOSPC: no space left on device\); stopped/,
    );
  });

  it("a snapshot whose lock another process removed commits nothing", async () => {
    for (let i = 0; i < 10; i++) writeFileExact(path.join(sb.sessionsDir, "--q--", `g${i}.jsonl`), randomBytes(6000).toString("base64"), 0o644);
    const before = snapshotObjects();
    let removed = false;
    const repo = await open(
      hookedTarget(new LocalTarget(sb.repo), async () => {
        if (!removed) {
          removed = true;
          await removeLockRepeatedly();
        }
      }),
    );
    await expect(snapshotAgentDir(config(), repo)).rejects.toThrow(/the repository lock of this snapshot was removed by another process; stopped/);
    expect(removed).toBe(true);
    expect(snapshotObjects()).toEqual(before);
  });
});

describe("readers take a shared lock", () => {
  let sb: Sandbox;

  beforeAll(async () => {
    sb = makeSandbox("lock-shared");
    writePiConfigFiles(sb.agentDir);
    writeFileExact(
      path.join(sb.sessionsDir, "--p--", "2026-01-01T00-00-00-000Z_0b9c5c3e-0000-4000-8000-000000000000.jsonl"),
      '{"type":"session","version":3,"id":"0b9c5c3e-0000-4000-8000-000000000000","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n',
      0o644,
    );
    await initRepo(sb);
    await snapshot(sb);
  });

  afterAll(() => sb?.cleanup());

  it("restore, archive and a cold sessions list wait for an exclusive lock; a warm list needs none", async () => {
    await ok(sb, ["sessions", "list", "--json"], { env: { XDG_DATA_HOME: sb.dir("warm-catalog") } });
    const repo = await Repository.open(new LocalTarget(sb.repo), (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!);
    const held = await acquireLock(repo, { exclusive: true, command: "test-deleter" });
    try {
      const locked = /the repository is locked by test-deleter/;
      expect(expectOneLineError(await cli(sb, ["restore", "latest", "--target", sb.dir("t"), "--lock-wait", "0"]), 1)).toMatch(locked);
      expect(expectOneLineError(await cli(sb, ["archive", "latest", "-o", path.join(sb.root, "a.tar.gz"), "--lock-wait", "0"]), 1)).toMatch(locked);
      const cold = { XDG_DATA_HOME: sb.dir("cold-catalog") };
      expect(expectOneLineError(await cli(sb, ["sessions", "list", "--lock-wait", "0"], { env: cold }), 1)).toMatch(locked);
      // The warm catalog finds the same snapshot names and never opens the repository.
      await ok(sb, ["sessions", "list", "--json", "--lock-wait", "0"], { env: { XDG_DATA_HOME: sb.dir("warm-catalog") } });
    } finally {
      await held.release();
    }
    // Two shared locks do not conflict.
    const shared = await acquireLock(repo, { exclusive: false, command: "test-reader" });
    try {
      await ok(sb, ["restore", "latest", "--target", sb.dir("t2"), "--lock-wait", "0"]);
    } finally {
      await shared.release();
    }
  });

  it("the CLI: deleting the lock during a restore makes it exit non-zero", async () => {
    generateAgentDir({ out: path.join(sb.sessionsDir, "--big--"), sizeBytes: 40 * 1024 * 1024, seed: "lock-lost", poolRoot: path.join(PROJECT_ROOT, "node_modules") });
    await snapshot(sb);
    const locksDir = path.join(sb.repo, "locks");
    const child = spawnCli(sb, ["restore", "latest", "--target", sb.dir("big")], { env: { PI_GUARD_LOCK_REFRESH_MS: "10" } });
    const done = collect(child);
    let exited = false;
    void done.then(() => (exited = true));
    let deleted = 0;
    // Deleted again whenever it reappears: a refresh in flight may have re-created it once.
    while (!exited) {
      for (const n of existsSync(locksDir) ? readdirSync(locksDir) : []) {
        if (n.includes(".tmp-")) continue;
        rmSync(path.join(locksDir, n), { force: true });
        deleted++;
      }
      await sleep(2);
    }
    const r = await done;
    expect(deleted).toBeGreaterThanOrEqual(1);
    expect(expectOneLineError(r, 1)).toMatch(/the repository lock of this restore was removed by another process; stopped/);
  });
});
