// `pi-guard watch` beside other writers: kill -9 in the middle of a snapshot, and a CLI snapshot
// while the watcher runs (split from watch-process.test.ts so that each file stays short).
import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli, initRepo, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, sha256File, writePiConfigFiles } from "../helpers/tmp.js";
import { files, readLog, readState, type RunningWatch, startWatch, stopWatch, waitFor, waitReady, watchEnv } from "./watch-helpers.js";

const sandboxes: Sandbox[] = [];
const watchers: RunningWatch[] = [];

afterEach(() => {
  for (const w of watchers.splice(0)) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

async function setup(label: string): Promise<Sandbox> {
  const sb = makeSandbox(label);
  sandboxes.push(sb);
  writePiConfigFiles(sb.agentDir);
  const dir = path.join(sb.sessionsDir, "--proj--");
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < 4; i++) writeFileSync(path.join(dir, `s${i}.jsonl`), `{"type":"session","version":3,"id":"s${i}"}\n`);
  await initRepo(sb);
  return sb;
}

function watch(sb: Sandbox, args: string[] = []): RunningWatch {
  const w = startWatch(sb, args);
  watchers.push(w);
  return w;
}

/** Restore snapshot `id` into a fresh folder and return the bytes of `rel` (relative to the agent dir). */
async function restoredBytes(sb: Sandbox, id: string, rel: string): Promise<Buffer> {
  const target = sb.dir(`restore-${id.slice(0, 12)}-${Date.now()}`);
  await ok(watchEnv(sb), ["restore", id, "--target", target, "--json"]);
  return readFileSync(path.join(target, rel));
}

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
