// `pi-guard watch` (the built CLI, a real process) while pi's real agent loop writes sessions:
// every turn reaches a restorable snapshot (time to safe reported as p50/p99, not asserted), and
// `rm -rf` of the sessions dir mid-conversation is tagged suspect-loss, never becomes "latest",
// and `restore latest` brings every file back byte-identical.
import { readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRepo, ok } from "../helpers/cli.js";
import { fauxText, fauxToolCall, makePiSession, type PiTurn } from "../helpers/pi-factory.js";
import { fingerprint, makeSandbox, type Sandbox, treeState, writePiConfigFiles } from "../helpers/tmp.js";
import { readLog, readState, type RunningWatch, startWatch, stopWatch, waitFor, waitReady, watchEnv } from "./watch-helpers.js";

// The defaults (debounce 250 ms, at most 1 s after the first change) unless WATCH_PI_DEBOUNCE_MS is set.
const DEBOUNCE_MS = process.env.WATCH_PI_DEBOUNCE_MS ? Number(process.env.WATCH_PI_DEBOUNCE_MS) : undefined;

function turns(n: number, topic: string): PiTurn[] {
  return Array.from({ length: n }, (_, i) =>
    i % 3 === 1
      ? { user: `${topic}: list the files (${i})`, assistant: [[fauxText("Listing."), fauxToolCall("bash", { command: "ls -la" })], `Done listing, turn ${i}.`] }
      : i % 3 === 2
        ? { user: `${topic}: write a note (${i})`, assistant: [[fauxToolCall("write", { path: `note-${i}.txt`, content: `note ${i} `.repeat(200) })], `Wrote note ${i}.`] }
        : { user: `${topic}: explain step ${i}`, assistant: [`Step ${i} of ${topic}: ${"details ".repeat(300)}`] },
  );
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

describe("watch with pi's real agent loop", () => {
  let sb: Sandbox;
  let w: RunningWatch;

  beforeAll(async () => {
    sb = makeSandbox("watch-pi");
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);
    w = startWatch(sb, DEBOUNCE_MS === undefined ? [] : ["--debounce", String(DEBOUNCE_MS)]);
    await waitReady(sb, w);
  }, 30_000);

  afterAll(() => {
    if (w.child.exitCode === null) w.child.kill("SIGKILL");
    sb.cleanup();
  });

  /** Time from the turn's last append to the first snapshot that restores the file as it is now. */
  async function timeToSafe(file: string, label: string): Promise<number> {
    const appendedAt = statSync(file).mtimeMs;
    const want = readFileSync(file);
    const rel = path.relative(sb.agentDir, file);
    const tried = new Set<string>();
    return waitFor(`a snapshot holding ${label}`, async () => {
      for (const e of readLog(sb)) {
        if (e.event !== "snapshot" || tried.has(e.id) || Date.parse(e.time) < appendedAt) continue;
        tried.add(e.id);
        const target = sb.dir(`restore-${e.id.slice(0, 12)}`);
        await ok(watchEnv(sb), ["restore", e.id, "--target", target, "--json", "--path", rel]);
        let got: Buffer | undefined;
        try {
          got = readFileSync(path.join(target, rel));
        } catch {
          continue;
        }
        if (got.equals(want)) return Date.parse(e.time) - appendedAt;
      }
      return undefined;
    }, 30_000);
  }

  it("every turn reaches a restorable snapshot; rm -rf of the sessions dir is a suspected loss that restore latest undoes", async () => {
    const latencies: number[] = [];
    const measure = (label: string) => async (index: number, file: string | undefined) => {
      expect(file, "pi wrote no session file").toBeTruthy();
      latencies.push(await timeToSafe(file!, `${label} turn ${index}`));
    };
    await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("project-a"), turns: turns(8, "alpha"), afterTurn: measure("alpha") });

    let before: ReturnType<typeof treeState> | undefined;
    let lastWhole: string | undefined;
    await makePiSession({
      agentDir: sb.agentDir,
      cwd: sb.dir("project-b"),
      turns: turns(5, "beta"),
      afterTurn: async (index, file) => {
        if (index > 3) return; // after the loss: nothing to measure
        await measure("beta")(index, file);
        if (index !== 3) return;
        // Mid-conversation: the npm-reify accident takes the whole sessions dir.
        before = treeState(sb.sessionsDir);
        rmSync(sb.sessionsDir, { recursive: true, force: true });
        const loss = await waitFor("suspect-loss in the state file", () => readState(sb)?.suspectLoss);
        expect(loss.filesBefore).toBeGreaterThan(loss.filesNow);
      },
    }).catch((err: unknown) => {
      // pi's next append lands in a folder that no longer exists; that is the accident, not a test failure.
      if (!/ENOENT/.test(String(err))) throw err;
    });

    const sorted = [...latencies].sort((a, b) => a - b);
    console.log(
      `watch (debounce ${DEBOUNCE_MS ?? "default"} ms): time from a turn's last append to a restorable snapshot over ${sorted.length} turns: ` +
        `p50 ${percentile(sorted, 50).toFixed(0)} ms, p99 ${percentile(sorted, 99).toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms`,
    );
    expect(latencies.length).toBeGreaterThanOrEqual(12);

    // The loss is recorded, loudly, but it is not "latest".
    const log = readLog(sb);
    const suspect = log.find((e) => e.event === "suspect-loss");
    expect(suspect, JSON.stringify(log.slice(-5))).toBeDefined();
    expect(w.stderr()).toMatch(/WARNING: suspected loss/);
    const listed = (await ok(watchEnv(sb), ["snapshots", "--json"])).json<{ id: string; tags: string[] }[]>();
    expect(listed.find((s) => s.id === suspect!.snapshot)!.tags).toContain("suspect-loss");

    // The user starts pi again: a new session in the recreated sessions dir is still a suspected loss.
    const again = await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("project-c"), turns: turns(2, "gamma") });
    const newSession = readFileSync(again.file);
    await waitFor("a snapshot of the new session", () => readLog(sb).some((e) => e.event === "snapshot" && Date.parse(e.time) > statSync(again.file).mtimeMs));
    expect(readState(sb)!.suspectLoss).toBeDefined();

    // The last whole state: the newest untagged snapshot before the loss.
    const events = readLog(sb);
    const lossAt = events.findIndex((e) => e.event === "suspect-loss");
    lastWhole = events.slice(0, lossAt).filter((e) => e.event === "snapshot" && e.tags.length === 0).at(-1)!.id;
    const restored = (await ok(watchEnv(sb), ["restore", "latest", "--json"])).json<{ snapshotId: string; failed: unknown[] }>();
    expect(restored.snapshotId, JSON.stringify(readLog(sb).filter((e) => e.event === "snapshot").map((e) => [e.id.slice(0, 8), e.files, e.tags, e.parent?.slice(0, 8)]))).toBe(lastWhole);
    expect(restored.failed).toEqual([]);
    const after = treeState(sb.sessionsDir);
    expect(fingerprint(after, (rel) => before!.has(rel))).toEqual(fingerprint(before!));
    expect(readFileSync(again.file).equals(newSession)).toBe(true);

    // The files are back: the watcher snapshots normally and clears the suspected loss.
    await waitFor("the recovered event", () => readLog(sb).some((e) => e.event === "recovered"));
    await waitFor("suspectLoss cleared in the state file", () => readState(sb) && !readState(sb)!.suspectLoss);

    const stopped = await stopWatch(w);
    expect(stopped.code, w.stderr()).toBe(0);
    const check = await ok(watchEnv(sb), ["check", "--read-data", "--json"]);
    expect(check.json<{ ok: boolean }>().ok).toBe(true);
  }, 120_000);
});
