// A stop whose budget runs out during a snapshot abandons it cleanly: nothing committed, no lock
// object and no temp file left, and the repository passes check --read-data. In process, with a
// small budget, so that the test does not need gigabytes to make a snapshot outlast 5 s.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { openRepository } from "../../src/engine.js";
import { TEMP_INFIX } from "../../src/targets/local.js";
import { WatchLog } from "../../src/watch/log.js";
import { Watcher } from "../../src/watch/watcher.js";
import { initRepo, ok } from "../helpers/cli.js";
import { listFiles, makeSandbox } from "../helpers/tmp.js";

// In-process: the seal pool's worker threads cannot load the TypeScript sources under vitest, and a
// worker that fails to start would end the snapshot before the stop abandons it.
process.env.PI_GUARD_WORKERS = "0";

describe("stopping with no time left for the running snapshot", () => {
  const sb = makeSandbox("watch-stop");
  afterAll(() => sb.cleanup());

  it("abandons it between files: nothing committed, nothing half-written, the next snapshot works", async () => {
    const dir = path.join(sb.agentDir, "sessions", "--big--");
    mkdirSync(dir, { recursive: true });
    for (let i = 0; i < 80; i++) writeFileSync(path.join(dir, `f${i}.bin`), randomBytes(1024 * 1024));
    await initRepo(sb);
    const config = loadConfig({}, { ...sb.env, XDG_STATE_HOME: path.join(sb.root, "xdg-state") });
    const repo = await openRepository(config);
    const log = new WatchLog({ file: path.join(sb.root, "w.log"), maxBytes: 1 << 20, keep: 1 });
    const watcher = new Watcher({ config, repo, log, stateFile: path.join(sb.root, "w.json") });
    await watcher.start(); // the start-up snapshot of 80 MiB begins
    const locks = path.join(sb.repo, "locks");
    while (!existsSync(locks) || readdirSync(locks).length === 0) await new Promise((r) => setTimeout(r, 5));
    const result = await watcher.stop(600);
    await log.close();
    expect(result.flushed).toBe(false);
    expect(result.error).toMatch(/abandoned/);
    expect(watcher.snapshotState().snapshots.made).toBe(0);

    expect(readdirSync(locks)).toEqual([]);
    expect(listFiles(sb.repo).filter((f) => f.includes(TEMP_INFIX))).toEqual([]);
    expect((await ok(sb, ["snapshots", "--json"])).json<unknown[]>()).toHaveLength(0);
    expect((await ok(sb, ["check", "--read-data", "--json"])).json<{ ok: boolean }>().ok).toBe(true);
    expect((await ok(sb, ["snapshot", "--json"])).json<{ files: number }>().files).toBeGreaterThanOrEqual(80);
  }, 60_000);
});
