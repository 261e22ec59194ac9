// Repository locks: two snapshots at once both succeed (append locks, docs/FORMAT.md §9); a lock held by a live
// process blocks with a clear message; the lock of a kill -9'd process does not block anyone.

import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateAgentDir } from "../../bench/generate.js";
import { readKeyFile } from "../../src/config/credentials.js";
import { acquireLock } from "../../src/repo/lock.js";
import { Repository } from "../../src/repo/repository.js";
import { LocalTarget } from "../../src/targets/local.js";
import { cli, collect, expectOneLineError, initRepo, ok, PROJECT_ROOT, restoreJson, snapshot, type SnapshotJson, spawnCli, expectWaitsForLock } from "../helpers/cli.js";
import { fingerprint, makeSandbox, type Sandbox, treeState } from "../helpers/tmp.js";

const MB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("repository locks", () => {
  let sb: Sandbox;
  const locks = () => (existsSync(path.join(sb.repo, "locks")) ? readdirSync(path.join(sb.repo, "locks")).filter((n) => !n.includes(".tmp-")) : []);

  beforeAll(async () => {
    sb = makeSandbox("locks");
    generateAgentDir({ out: sb.agentDir, sizeBytes: 48 * MB, seed: "locks", poolRoot: path.join(PROJECT_ROOT, "node_modules") });
    await initRepo(sb);
  });

  afterAll(() => sb?.cleanup());

  it("two concurrent snapshots both succeed (append locks: they may overlap)", async () => {
    const a = spawnCli(sb, ["snapshot", "--json"]);
    const b = spawnCli(sb, ["snapshot", "--json"]);
    const [ra, rb] = await Promise.all([collect(a), collect(b)]);
    expect(ra.code, ra.stderr).toBe(0);
    expect(rb.code, rb.stderr).toBe(0);
    const [first, second] = [ra.json<SnapshotJson>(), rb.json<SnapshotJson>()].sort((x, y) => x.time.localeCompare(y.time));
    expect(first.snapshotId).not.toBe(second.snapshotId);
    expect(first.parent).toBeNull();
    expect(first.filesNew).toBe(first.files);
    // Overlapping, the second did not see the first; otherwise it read no file again.
    expect([null, first.snapshotId]).toContain(second.parent);
    if (second.parent) expect(second.filesUnchanged).toBe(second.files);
    const list = (await ok(sb, ["snapshots", "--json"])).json<{ id: string }[]>();
    expect(list.map((s) => s.id).sort()).toEqual([first.snapshotId, second.snapshotId].sort());
    expect(locks()).toEqual([]);
  });

  it("a lock held by a live process blocks with a clear one-line message, then is waited for", async () => {
    const repo = await Repository.open(new LocalTarget(sb.repo), (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!);
    const held = await acquireLock(repo, { exclusive: true, command: "test-holder" });
    try {
      const line = expectOneLineError(await cli(sb, ["snapshot", "--lock-wait", "0"]), 1);
      expect(line).toMatch(/locked by test-holder/);
      expect(line).toContain(`pid ${process.pid}`);
      // With a wait, the snapshot goes ahead once the holder lets go.
      await expectWaitsForLock(sb, ["snapshot", "--json", "--lock-wait", "30"], held);
    } finally {
      await held.release().catch(() => undefined);
    }
    expect(locks()).toEqual([]);
  });

  it("a lock released between another process's listing and its read is not taken as held (a fast snapshot on another host)", async () => {
    const key = (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!;
    const holderRepo = await Repository.open(new LocalTarget(sb.repo), key);
    const held = await acquireLock(holderRepo, { mode: "append", command: "fast snapshot" });
    // The second process's storage: the holder lets go right as the lock object is about to be read.
    const local = new LocalTarget(sb.repo);
    const racing = Object.create(local) as LocalTarget;
    racing.get = async (k, opts) => {
      if (k === `locks/${held.id}`) await held.release();
      return local.get(k, opts);
    };
    const repo = await Repository.open(racing, key);
    const lock = await acquireLock(repo, { mode: "exclusive", command: "prune", waitMs: 0 });
    await lock.release();
    expect(locks()).toEqual([]);
    // A lock that is there but cannot be read still counts as held, exclusively.
    writeFileSync(path.join(sb.repo, "locks", "0".repeat(32)), "not a sealed lock");
    try {
      await expect(acquireLock(repo, { mode: "append", command: "snapshot", waitMs: 0 })).rejects.toThrow(/locked by lock 00000000/);
    } finally {
      rmSync(path.join(sb.repo, "locks", "0".repeat(32)));
    }
  });

  it("the lock of a kill -9'd snapshot does not block the next run", async () => {
    // New data, so the snapshot has real work to do while we kill it.
    generateAgentDir({ out: path.join(sb.agentDir, "sessions", "--more--"), sizeBytes: 32 * MB, seed: "locks-2", poolRoot: path.join(PROJECT_ROOT, "node_modules") });
    const child = spawnCli(sb, ["snapshot"]);
    const done = collect(child);
    // Kill as soon as its lock is on disk.
    const started = Date.now();
    while (locks().length === 0 && Date.now() - started < 20_000) await sleep(5);
    child.kill("SIGKILL");
    const r = await done;
    expect(r.signal).toBe("SIGKILL");
    expect(locks()).toHaveLength(1);

    // No waiting allowed: the dead process's lock must be recognised as stale at once.
    const next = await snapshot(sb, ["--lock-wait", "0"]);
    expect(next.files).toBeGreaterThan(0);
    expect(locks()).toEqual([]);
    const check = await cli(sb, ["check", "--json"]);
    expect(check.code, check.stderr).toBe(0);
    const target = path.join(sb.root, "restored");
    await restoreJson(sb, ["latest", "--target", target]);
    expect(fingerprint(treeState(target))).toEqual(fingerprint(treeState(sb.agentDir)));
  });
});
