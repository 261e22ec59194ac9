// The watcher's parts, in process: the suspect-loss rule, "latest" skipping suspect-loss
// snapshots, the rotating JSON-lines log, the one-watcher lock (stale after kill -9 and pid reuse).
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_WATCH } from "../../src/config/config.js";
import { SUSPECT_LOSS_TAG, type Snapshot } from "../../src/repo/format.js";
import type { SnapshotRecord } from "../../src/repo/repository.js";
import { PRE_RESTORE_TAG, selectSnapshot } from "../../src/restore/select.js";
import type { ParentFile } from "../../src/snapshot/snapshotter.js";
import { WatchLog } from "../../src/watch/log.js";
import { readWatcherState, writeWatcherState } from "../../src/watch/state-file.js";
import { judgeLoss } from "../../src/snapshot/loss-guard.js";
import { acquireWatcherLock } from "../../src/watch/watcher-lock.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

const sandboxes: Sandbox[] = [];
afterEach(() => {
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});
function sandbox(): Sandbox {
  const sb = makeSandbox("watch-parts");
  sandboxes.push(sb);
  return sb;
}

describe("judgeLoss: the suspect-loss rule", () => {
  const rule = DEFAULT_WATCH.suspectLoss; // at least 3 files and at least half
  const files = (sessions: number, others: number, goneSessions: number, goneOthers = 0): ParentFile[] => [
    ...Array.from({ length: sessions }, (_, i) => ({ root: "agent", path: `sessions/--p--/s${i}.jsonl`, found: i >= goneSessions })),
    ...Array.from({ length: others }, (_, i) => ({ root: "agent", path: `other${i}.json`, found: i >= goneOthers })),
  ];
  const isSession = (f: ParentFile) => f.path.startsWith("sessions/");
  const cases: { name: string; parent: ParentFile[]; now: number; want: "files" | "sessions" | undefined }[] = [
    { name: "nothing lost", parent: files(10, 3, 0), now: 13, want: undefined },
    { name: "one session deleted of ten", parent: files(10, 3, 1), now: 12, want: undefined },
    { name: "every session gone (rm -rf sessions)", parent: files(2, 3, 2), now: 3, want: "sessions" },
    { name: "every session gone, a new one started since", parent: files(2, 3, 2), now: 4, want: "sessions" },
    { name: "half the files gone, at least 3", parent: files(6, 2, 4), now: 4, want: "files" },
    { name: "two of three files gone: under minFiles", parent: files(0, 3, 0, 2), now: 1, want: undefined },
    { name: "three of ten gone: under the fraction", parent: files(8, 2, 3), now: 7, want: undefined },
    { name: "no parent", parent: [], now: 0, want: undefined },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(judgeLoss(c.parent, c.now, rule, isSession)?.reason).toBe(c.want);
    });
  }
  it("counts what was lost, not the difference of totals", () => {
    const v = judgeLoss(files(6, 0, 6), 6, rule, isSession)!;
    expect(v).toMatchObject({ reason: "sessions", filesBefore: 6, filesNow: 6, lost: 6 });
    expect(v.sample).toHaveLength(5);
  });
});

describe('selectSnapshot("latest") and suspect-loss snapshots', () => {
  const rec = (id: string, minute: number, tags: string[] = []): SnapshotRecord => ({
    id: id.padEnd(64, "0"),
    snapshot: { version: 1, time: `2026-11-30T10:${String(minute).padStart(2, "0")}:00Z`, host: "h", user: "u", tags, roots: [], tree: [] } as unknown as Snapshot,
  });
  it("skips suspect-loss snapshots, also behind a pre-restore", () => {
    const all = [rec("aa", 1), rec("bb", 2, [SUSPECT_LOSS_TAG]), rec("cc", 3, [PRE_RESTORE_TAG]), rec("dd", 4, [SUSPECT_LOSS_TAG])];
    expect(selectSnapshot(all, "latest").id.slice(0, 2)).toBe("aa");
  });
  it("a suspect-loss snapshot is still reachable by id and by time", () => {
    const all = [rec("aa", 1), rec("bb", 2, [SUSPECT_LOSS_TAG])];
    expect(selectSnapshot(all, "bb00").id.slice(0, 2)).toBe("bb");
    expect(selectSnapshot(all, "2026-11-30T10:02:30Z").id.slice(0, 2)).toBe("bb");
  });
  it("when every snapshot is a suspected loss, latest is the newest of them", () => {
    expect(selectSnapshot([rec("aa", 1, [SUSPECT_LOSS_TAG]), rec("bb", 2, [SUSPECT_LOSS_TAG])], "latest").id.slice(0, 2)).toBe("bb");
  });
});

describe("WatchLog", () => {
  it("writes one JSON object per line and rotates at maxBytes, keeping `keep` old files", async () => {
    const sb = sandbox();
    const file = path.join(sb.root, "state", "w.log");
    const echoed: string[] = [];
    const log = new WatchLog({ file, maxBytes: 4096, keep: 2, echo: (l) => echoed.push(l) });
    for (let i = 0; i < 200; i++) log.write("info", "change", { i, pad: "x".repeat(50) });
    await log.close();
    expect(echoed).toHaveLength(200);
    const parts = [`${file}.2`, `${file}.1`, file].map((f) => readFileSync(f, "utf8"));
    expect(existsSync(`${file}.3`)).toBe(false);
    for (const p of parts) expect(Buffer.byteLength(p)).toBeLessThanOrEqual(4096);
    const lines = parts.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    // The newest lines survive, in order, each complete.
    expect(lines.at(-1)).toMatchObject({ level: "info", event: "change", i: 199 });
    for (let k = 1; k < lines.length; k++) expect(lines[k].i).toBe(lines[k - 1].i + 1);
    expect(typeof lines[0].time).toBe("string");
  });
});

describe("the watcher state file", () => {
  it("is written whole (0600) and a hostile one reads as absent", async () => {
    const sb = sandbox();
    const file = path.join(sb.root, "state", "w.json");
    const state = { version: 1 as const, pid: 42, host: "h", agentDir: "/a", repo: "/r", startedAt: "t", updatedAt: "t", cpu: { userMs: 1, systemMs: 2 }, rssBytes: 3, snapshots: { made: 1, failed: 0 }, nextJobs: [] };
    await writeWatcherState(file, state);
    expect(await readWatcherState(file)).toEqual(state);
    expect((await import("node:fs")).statSync(file).mode & 0o777).toBe(0o600);
    for (const bad of ["", "null", "[]", '{"version":2,"pid":1}', '{"version":1,"pid":-1}', "{".repeat(10)]) {
      writeFileSync(file, bad);
      expect(await readWatcherState(file)).toBeUndefined();
    }
  });
});

describe("acquireWatcherLock", () => {
  it("refuses while the owner lives, naming its pid", async () => {
    const sb = sandbox();
    const file = path.join(sb.root, "w.lock");
    const lock = await acquireWatcherLock(file, "/agent");
    await expect(acquireWatcherLock(file, "/agent")).rejects.toThrow(`pid ${process.pid}`);
    await lock.release();
    expect(existsSync(file)).toBe(false);
  });

  it("takes over the lock of a dead process (kill -9 leaves the file)", async () => {
    const sb = sandbox();
    const file = path.join(sb.root, "w.lock");
    const dead = spawnSync(process.execPath, ["-e", "console.log(process.pid)"], { encoding: "utf8" });
    const pid = Number(dead.stdout.trim());
    writeFileSync(file, JSON.stringify({ pid, host: os.hostname(), token: "old", since: "then" }));
    const lock = await acquireWatcherLock(file, "/agent");
    expect(JSON.parse(readFileSync(file, "utf8")).pid).toBe(process.pid);
    await lock.release();
  });

  it("takes over when the pid now belongs to another process (a different start time)", async () => {
    const sb = sandbox();
    const file = path.join(sb.root, "w.lock");
    writeFileSync(file, JSON.stringify({ pid: process.pid, host: os.hostname(), procStart: "1", token: "old", since: "then" }));
    const lock = await acquireWatcherLock(file, "/agent");
    expect(JSON.parse(readFileSync(file, "utf8")).token).not.toBe("old");
    await lock.release();
  });

  it("takes over a lock file that is not JSON once it is old enough to be a crashed writer's", async () => {
    const sb = sandbox();
    const file = path.join(sb.root, "w.lock");
    writeFileSync(file, "garbage");
    const old = new Date(Date.now() - 60_000);
    (await import("node:fs")).utimesSync(file, old, old);
    const lock = await acquireWatcherLock(file, "/agent");
    await lock.release();
  });
});
