// Lock staleness between hosts whose clocks disagree (docs/FORMAT.md §9): the age of a lock is
// measured on the storage's clock (S3's LastModified of the lock against that of a lock the
// observer just wrote), never from the `time` its holder wrote. Locks of "hosts" two hours ahead
// and two hours behind are crafted in a real S3 server (s3rver); STALE_MS is shortened to 6 s with
// the tests-only PI_GUARD_TEST_LOCK_STALE_MS, so nothing waits 30 minutes. Not shorter: on a loaded
// machine (CI beside other work) starting the CLI takes seconds, and a lock must not age past
// STALE_MS while a step that expects it fresh is still starting.

import { randomBytes } from "node:crypto";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { readKeyFile } from "../../src/config/credentials.js";
import { openTarget } from "../../src/targets/open.js";
import { AAD } from "../../src/repo/format.js";
import { acquireLock, type LockInfo } from "../../src/repo/lock.js";
import { Repository } from "../../src/repo/repository.js";
import { cli, expectOneLineError, ok } from "../helpers/cli.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { makeSandbox, writeFileExact, type Sandbox } from "../helpers/tmp.js";

const BUCKET = "clocks";
const STALE_MS = 6000;
const HOUR = 3600_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let sb: Sandbox;
let server: S3Server;
let env: Record<string, string>;
let repo: Repository;

beforeAll(async () => {
  sb = makeSandbox("lock-clocks");
  server = await startS3Server(sb.dir("s3rver"), BUCKET);
  env = { ...sb.env, ...server.env, PI_GUARD_REPO: `s3://${BUCKET}/repo`, PI_GUARD_TEST_LOCK_STALE_MS: String(STALE_MS) };
  await ok(env, ["init"]);
  writeFileExact(path.join(sb.sessionsDir, "--p--", "a.jsonl"), '{"type":"session"}\n', 0o644);
  await ok(env, ["snapshot"]);
  const config = loadConfig({}, env);
  repo = await Repository.open(openTarget(config, env), (await readKeyFile(config.keyFile))!);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sb?.cleanup();
});

const saved = process.env.PI_GUARD_TEST_LOCK_STALE_MS;
afterEach(() => {
  if (saved === undefined) delete process.env.PI_GUARD_TEST_LOCK_STALE_MS;
  else process.env.PI_GUARD_TEST_LOCK_STALE_MS = saved;
});

/** A lock object as another host would write it, with that host's idea of the time. */
async function writeForeignLock(id: string, host: string, clockOffsetMs: number, mode: LockInfo["mode"] = "append"): Promise<void> {
  const info: LockInfo = { host, pid: 4242, user: "u", exclusive: mode === "exclusive", mode, time: new Date(Date.now() + clockOffsetMs).toISOString(), command: `snapshot on ${host}` };
  await repo.target.put(`locks/${id}`, repo.seal(Buffer.from(JSON.stringify(info)), AAD.lock(id)));
}

async function lockIds(): Promise<string[]> {
  const out: string[] = [];
  for await (const o of repo.target.list("locks")) out.push(o.key.slice("locks/".length));
  return out.sort();
}

describe("lock staleness on the storage's clock", () => {
  it("a live holder two hours behind is never stale; a dead one two hours ahead is, once the storage says it aged", { timeout: 90_000 }, async () => {
    const behind = "b".repeat(32);
    const ahead = "a".repeat(32);
    // The holder behind keeps rewriting its lock, as a live pi-guard does (here faster than STALE_MS).
    await writeForeignLock(behind, "host-behind", -2 * HOUR);
    const refresher = setInterval(() => void writeForeignLock(behind, "host-behind", -2 * HOUR).catch(() => undefined), 300);
    try {
      // The dead host ahead wrote its lock once.
      await writeForeignLock(ahead, "host-ahead", +2 * HOUR);
      // By the old rule (now − time > STALE_MS) the lock behind would be stale at once, and the
      // lock ahead only in two hours. Prune (exclusive) must refuse: both are fresh on the storage.
      expect(expectOneLineError(await cli(env, ["prune", "--lock-wait", "0"]), 1)).toMatch(/locked by snapshot on host-(behind|ahead)/);
      expect(await lockIds()).toEqual([ahead, behind]);

      // Past STALE_MS on the storage's clock (plus a second: S3 keeps LastModified in whole seconds).
      await sleep(STALE_MS + 1500);
      const r = await cli(env, ["prune", "--lock-wait", "0"]);
      expect(expectOneLineError(r, 1)).toMatch(/locked by snapshot on host-behind/);
      expect(await lockIds()).toEqual([behind]);
    } finally {
      clearInterval(refresher);
    }
    // Now the holder behind is dead too: its lock ages on the storage and prune goes ahead.
    await sleep(STALE_MS + 1500);
    const pruned = await cli(env, ["prune", "--lock-wait", "0", "--json"]);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(await lockIds()).toEqual([]);
  });

  it("check removes a dead foreign lock only after its storage age passes, whatever time it claims", { timeout: 90_000 }, async () => {
    const id = randomBytes(16).toString("hex");
    await writeForeignLock(id, "host-ahead", +2 * HOUR, "exclusive");
    // An exclusive lock blocks check's shared one; it is not stale yet.
    expect(expectOneLineError(await cli(env, ["check", "--lock-wait", "0"]), 1)).toMatch(/locked by snapshot on host-ahead/);
    expect(await lockIds()).toEqual([id]);
    await sleep(STALE_MS + 1500);
    await ok(env, ["check", "--lock-wait", "0"]);
    expect(await lockIds()).toEqual([]);
  });

  it("a holder that could not rewrite its lock for half of STALE_MS (the machine slept) stops and commits nothing", { timeout: 90_000 }, async () => {
    process.env.PI_GUARD_TEST_LOCK_STALE_MS = String(STALE_MS);
    const lock = await acquireLock(repo, { mode: "append", command: "snapshot" });
    try {
      await lock.confirm();
      // Block this process's event loop, as a suspend would: no refresh can run meanwhile.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, STALE_MS / 2 + 300);
      await expect(lock.confirm()).rejects.toThrow(/was not refreshed for \d+ s .*another host may have taken it for stale; stopped/);
      expect(lock.signal.aborted).toBe(true);
      expect(() => lock.assertHeld()).toThrow(/not refreshed/);
    } finally {
      await lock.release();
    }
    expect(await lockIds()).toEqual([]);
  });

  it("a live holder keeps its lock past STALE_MS: its refreshes keep the storage age low", { timeout: 90_000 }, async () => {
    process.env.PI_GUARD_TEST_LOCK_STALE_MS = String(STALE_MS);
    const lock = await acquireLock(repo, { mode: "append", command: "snapshot" });
    try {
      await sleep(STALE_MS + 1500);
      await lock.confirm();
      // Another process's exclusive attempt sees it live.
      expect(expectOneLineError(await cli(env, ["prune", "--lock-wait", "0"]), 1)).toMatch(/locked by snapshot \(pid \d+/);
      await lock.confirm();
    } finally {
      await lock.release();
    }
  });
});
