// `pi-guard watch` beside other writers: kill -9 in the middle of a snapshot, and a CLI snapshot
// while the watcher runs (split from watch-process.test.ts so that each file stays short).
import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cli, ok } from "../helpers/cli.js";
import { sha256File } from "../helpers/tmp.js";
import { files, readLog, readState, restoredBytes, stopWatch, waitFor, waitReady, watchEnv, watchScene } from "./watch-helpers.js";

const { setup, watch } = watchScene();

describe("pi-guard watch and other writers", () => {
  it("a CLI snapshot while watch runs and sessions change: both succeed and check --read-data passes", async () => {
    const sb = await setup("watch-concurrent");
    const w = watch(sb, ["--debounce", "30"]);
    await waitReady(sb, w);
    const file = path.join(sb.sessionsDir, "--proj--", "s3.jsonl");
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        appendFileSync(file, `{"type":"message","id":"${i.toString(16).padStart(8, "0")}"}\n`);
        await new Promise((r) => setTimeout(r, 15));
      }
    })();
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await cli(watchEnv(sb), ["snapshot", "--json", "--lock-wait", "30"]));
    writing = false;
    await writer;
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    const { code } = await stopWatch(w);
    expect(code, w.stderr()).toBe(0);
    const state = readState(sb)!;
    expect(state.snapshots.made).toBeGreaterThan(1);
    // The watcher's last snapshot was taken after the last append: it has the file as it is.
    expect((await restoredBytes(sb, state.lastSnapshot!.id, path.relative(sb.agentDir, file))).equals(readFileSync(file))).toBe(true);
    expect((await ok(watchEnv(sb), ["check", "--read-data", "--json"])).json<{ ok: boolean }>().ok).toBe(true);
  }, 60_000);

  it("kill -9 during a snapshot: check --read-data passes, and the next watcher takes over and snapshots", async () => {
    const sb = await setup("watch-kill9");
    const big = path.join(sb.agentDir, "big.bin");
    writeFileSync(big, randomBytes(96 * 1024 * 1024));
    const w = watch(sb);
    // The repository lock exists only while a snapshot runs.
    const locks = path.join(sb.repo, "locks");
    await waitFor("the watcher's snapshot to hold the repository lock", () => existsSync(locks) && readdirSync(locks).length > 0, 20_000, 5);
    await new Promise((r) => setTimeout(r, 150));
    w.child.kill("SIGKILL");
    await w.exited;
    expect(readLog(sb).some((e) => e.event === "snapshot"), "the kill came after the snapshot finished").toBe(false);
    expect(existsSync(files(sb).lock)).toBe(true);

    const check = await cli(watchEnv(sb), ["check", "--read-data", "--json"]);
    expect(check.code, check.stderr).toBe(0);

    const next = watch(sb);
    const state = await waitReady(sb, next);
    expect(state.pid).toBe(next.child.pid);
    expect((await stopWatch(next)).code).toBe(0);
    const target = sb.dir("restored");
    await ok(watchEnv(sb), ["restore", state.lastSnapshot!.id, "--target", target, "--json"]);
    expect(sha256File(path.join(target, "big.bin"))).toBe(sha256File(big));
    expect((await ok(watchEnv(sb), ["check", "--read-data", "--json"])).json<{ ok: boolean }>().ok).toBe(true);
  }, 90_000);
});
