// `pi-guard watch` as a process: one per agent dir, SIGTERM flushes, SIGHUP reloads, failures
// are retried, moved and recreated roots are followed, a deliberate deletion can be accepted.
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok, snapshot } from "../helpers/cli.js";
import { listFiles, type Sandbox } from "../helpers/tmp.js";
import { files, readLog, readState, restoredBytes, stopWatch, waitFor, waitReady, watchEnv, watchScene } from "./watch-helpers.js";

const { setup, watch } = watchScene();

describe("pi-guard watch as a process", () => {
  it("a second watcher of the same agent dir refuses to start, naming the running pid", async () => {
    const sb = await setup("watch-second");
    const w = watch(sb);
    await waitReady(sb, w);
    const second = await cli(watchEnv(sb), ["watch"], { timeoutMs: 20_000 });
    const line = expectOneLineError(second, 1);
    expect(line).toContain(`pid ${w.child.pid}`);
    expect((await stopWatch(w)).code).toBe(0);
    expect(existsSync(files(sb).lock)).toBe(false);
    expect(expectOneLineError(await cli(watchEnv(sb), ["watch", "--debounce", "soon"]), 2)).toMatch(/--debounce must be/);
  }, 30_000);

  it("SIGTERM with pending changes: they are in a snapshot and the exit is 0 within 5 s", async () => {
    const sb = await setup("watch-term");
    // A long debounce: only the stop can take this snapshot.
    const w = watch(sb, ["--debounce", "60000"]);
    await waitReady(sb, w);
    const rel = "sessions/--proj--/s1.jsonl";
    appendFileSync(path.join(sb.agentDir, rel), `{"type":"message","id":"aaaa0001","parentId":null}\n`);
    await new Promise((r) => setTimeout(r, 300));
    const { code, ms } = await stopWatch(w);
    expect(code, w.stderr()).toBe(0);
    expect(ms).toBeLessThan(5000);
    const state = readState(sb)!;
    expect(state.snapshots.made).toBe(2);
    expect((await restoredBytes(sb, state.lastSnapshot!.id, rel)).equals(readFileSync(path.join(sb.agentDir, rel)))).toBe(true);
    expect(readLog(sb).at(-1)).toMatchObject({ event: "stopped", flushed: true });
  }, 30_000);

  it("SIGHUP reloads the config file and says so in the log", async () => {
    const sb = await setup("watch-hup");
    const w = watch(sb, ["--json"]);
    await waitReady(sb, w);
    mkdirSync(path.join(sb.configHome, "pi-guard"), { recursive: true });
    writeFileSync(path.join(sb.configHome, "pi-guard", "config.json"), JSON.stringify({ watch: { debounceMs: 321, maxDelayMs: 4321 } }));
    w.child.kill("SIGHUP");
    const reloaded = await waitFor("the reloaded event", () => readLog(sb).find((e) => e.event === "reloaded"));
    expect(reloaded).toMatchObject({ debounceMs: 321, maxDelayMs: 4321 });
    expect((await stopWatch(w)).code).toBe(0);
    // --json: stdout is the log, line for line.
    const printed = w.stdout().trim().split("\n").map((l) => JSON.parse(l) as { event: string });
    expect(printed.map((e) => e.event)).toEqual(readLog(sb).map((e) => e.event));
    expect(printed.map((e) => e.event)).toEqual(expect.arrayContaining(["started", "snapshot", "reloaded", "stopping", "stopped"]));
  }, 30_000);

  it("a failing snapshot is logged and retried with backoff; the watcher keeps running", async () => {
    const sb = await setup("watch-retry");
    const w = watch(sb, ["--debounce", "50"]);
    await waitReady(sb, w);
    renameSync(sb.repo, `${sb.repo}.away`);
    appendFileSync(path.join(sb.sessionsDir, "--proj--", "s2.jsonl"), "{}\n");
    const error = await waitFor("a logged snapshot error", () => readLog(sb).find((e) => e.event === "error" && e.where === "snapshot"));
    expect(error.retryInMs).toBeGreaterThan(0);
    await waitFor("the error in the state file", () => readState(sb)?.lastError?.message === error.message);
    expect(existsSync(sb.repo), "the watcher made a new folder where the repository was").toBe(false);
    renameSync(`${sb.repo}.away`, sb.repo);
    const state = await waitReady(sb, w, 2);
    expect(state.snapshots.failed).toBeGreaterThanOrEqual(1);
    expect((await stopWatch(w)).code).toBe(0);
  }, 30_000);

  it("a sessions dir moved out of the agent dir is watched, even when it appears after the start and is deleted and made again", async () => {
    const sb = await setup("watch-moved");
    const moved = path.join(sb.root, "elsewhere", "sessions");
    const env = { ...watchEnv(sb), PI_CODING_AGENT_SESSION_DIR: moved };
    const w = watch({ ...sb, env } as Sandbox);
    await waitReady(sb, w);
    const roots = readLog(sb).find((e) => e.event === "started")!.roots as { name: string; path: string }[];
    expect(roots.map((r) => r.name)).toContain("sessions");
    // The count is read before the write: with a short debounce the snapshot may come first.
    const snapshotHolding = async (file: string, write: () => void) => {
      const made = readState(sb)!.snapshots.made;
      write();
      const want = readFileSync(file);
      const state = await waitFor(`a snapshot after writing ${file}`, () => (readState(sb)!.snapshots.made > made ? readState(sb) : undefined));
      const target = sb.dir(`restore-${state!.lastSnapshot!.id.slice(0, 12)}`);
      await ok(env, ["restore", state!.lastSnapshot!.id, "--target", target, "--json"]);
      const found = listFiles(target).find((f) => f.endsWith(path.basename(file)));
      expect(found, `restored: ${listFiles(target).join(", ")}`).toBeDefined();
      expect(readFileSync(found!).equals(want)).toBe(true);
    };
    const first = path.join(moved, "2026-01-01T00-00-00-000Z_one.jsonl");
    await snapshotHolding(first, () => {
      mkdirSync(moved, { recursive: true });
      writeFileSync(first, '{"type":"session","version":3,"id":"one"}\n');
    });
    rmSync(moved, { recursive: true, force: true });
    await waitFor("the suspected loss of the moved sessions dir", () => readState(sb)?.suspectLoss);
    const second = path.join(moved, "2026-01-02T00-00-00-000Z_two.jsonl");
    await snapshotHolding(second, () => {
      mkdirSync(moved, { recursive: true });
      writeFileSync(second, '{"type":"session","version":3,"id":"two"}\n');
    });
    expect((await stopWatch(w)).code).toBe(0);
  }, 60_000);

  it("a deliberate deletion is accepted by `pi-guard snapshot --accept-loss` (a plain snapshot is a suspected loss too): the suspected loss clears and later snapshots compare with it", async () => {
    const sb = await setup("watch-accept");
    const w = watch(sb, ["--debounce", "50"]);
    await waitReady(sb, w);
    rmSync(sb.sessionsDir, { recursive: true, force: true });
    const loss = await waitFor("suspect-loss in the state file", () => readState(sb)?.suspectLoss);
    expect(loss).toMatchObject({ filesBefore: 7, filesNow: 3 });
    expect(readLog(sb).find((e) => e.event === "suspect-loss")?.advice).toContain("`pi-guard snapshot --accept-loss` accepts the deletion");
    const plain = await cli(watchEnv(sb), ["snapshot", "--json"]);
    expect(plain.code, plain.stderr).toBe(1);
    expect(plain.json<{ tags: string[] }>().tags).toEqual(["suspect-loss"]);
    const accepted = await snapshot(sb, ["--accept-loss"], { env: { XDG_STATE_HOME: path.join(sb.root, "xdg-state") } });
    expect(accepted.files).toBe(3);
    await waitFor("the accepted event", () => readLog(sb).find((e) => e.event === "accepted" && e.snapshot === accepted.snapshotId), 20_000);
    expect(readLog(sb).filter((e) => e.event === "accepted").map((e) => e.snapshot)).toEqual([accepted.snapshotId]);
    await waitFor("suspectLoss cleared in the state file", () => readState(sb) && !readState(sb)!.suspectLoss);
    const made = readState(sb)!.snapshots.made;
    appendFileSync(path.join(sb.agentDir, "settings.json"), " ");
    const after = await waitFor("a snapshot after the acceptance", () => (readState(sb)!.snapshots.made > made ? readLog(sb).filter((e) => e.event === "snapshot").at(-1) : undefined));
    expect(after.tags).toEqual([]);
    expect(after.parent).toBe(accepted.snapshotId);
    expect(readState(sb)!.suspectLoss).toBeUndefined();
    expect((await stopWatch(w)).code).toBe(0);
  }, 60_000);

  it("a deletion spread over many batches is judged as a whole: the half-deleted state never becomes the last whole one", async () => {
    const sb = await setup("watch-gradual");
    const dir = path.join(sb.sessionsDir, "--proj--");
    for (let i = 4; i < 8; i++) writeFileSync(path.join(dir, `s${i}.jsonl`), `{"type":"session","version":3,"id":"s${i}"}\n`);
    // A maximum delay far below the pace of the deletion: without settling, every deleted file
    // would get its own snapshot, each one loss too small to notice.
    mkdirSync(path.join(sb.configHome, "pi-guard"), { recursive: true });
    writeFileSync(path.join(sb.configHome, "pi-guard", "config.json"), JSON.stringify({ watch: { maxDelayMs: 100 } }));
    const w = watch(sb, ["--debounce", "400"]);
    await waitReady(sb, w);
    const whole = readState(sb)!.lastSnapshot!;
    expect(whole.files).toBe(11);
    for (let i = 0; i < 6; i++) {
      rmSync(path.join(dir, `s${i}.jsonl`));
      await new Promise((r) => setTimeout(r, 150));
    }
    const loss = await waitFor("suspect-loss in the state file", () => readState(sb)?.suspectLoss);
    expect(loss).toMatchObject({ filesBefore: 11, filesNow: 5 });
    expect(readLog(sb).some((e) => e.event === "deferred")).toBe(true);
    const listed = (await ok(watchEnv(sb), ["snapshots", "--json"])).json<{ id: string; tags: string[]; summary: { files: number } }[]>();
    const untagged = listed.filter((x) => !x.tags.includes("suspect-loss"));
    expect(untagged.at(-1)!.id).toBe(whole.id);
    expect((await stopWatch(w)).code).toBe(0);
  }, 60_000);
});

