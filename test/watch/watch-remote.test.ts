// The watcher on a remote (S3) repository: changes are batched to one snapshot per
// watch.remoteBatchMs (set short in the config file here), a SIGTERM still flushes the last
// changes, and the requests it sent are counted into its state file, from which `status` shows
// the exact counts, and PUTs per day only once there is enough running time to extrapolate from
// (test/watch/status.test.ts has those). A real s3rver on 127.0.0.1, the built CLI.

import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, ok } from "../helpers/cli.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { makeSandbox, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";
import { readState, restoredBytes, startWatch, stopWatch, waitFor, waitReady, watchEnv } from "./watch-helpers.js";

const BUCKET = "watched";
const BATCH_MS = 1500;
const CHANGES = 12;

let sb: Sandbox;
let server: S3Server;

beforeAll(async () => {
  sb = makeSandbox("watch-remote");
  server = await startS3Server(sb.dir("s3rver"), BUCKET);
  Object.assign(sb.env, server.env, { PI_GUARD_REPO: `s3://${BUCKET}/pi` });
  writePiConfigFiles(sb.agentDir);
  mkdirSync(path.join(sb.sessionsDir, "--proj--"), { recursive: true });
  writeFileSync(path.join(sb.sessionsDir, "--proj--", "s.jsonl"), '{"type":"session","version":3,"id":"s"}\n');
  mkdirSync(path.join(sb.configHome, "pi-guard"), { recursive: true });
  writeFileSync(path.join(sb.configHome, "pi-guard", "config.json"), JSON.stringify({ watch: { debounceMs: 50, maxDelayMs: 200, remoteBatchMs: BATCH_MS } }));
  await ok(sb, ["init"]);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sb?.cleanup();
});

describe("watch on S3: remote batching and request counts", () => {
  it("makes fewer snapshots than changes, flushes on SIGTERM, and status shows PUTs/day from the exact counts", { timeout: 60_000 }, async () => {
    const w = startWatch(sb);
    try {
      await waitReady(sb, w, 1);
      const file = path.join(sb.sessionsDir, "--proj--", "s.jsonl");
      // A change every 100 ms: with debounce 50 and maxDelay 200 a local repository would take
      // about one snapshot per change; the remote batch allows one per 1.5 s.
      const t0 = Date.now();
      for (let i = 0; i < CHANGES; i++) {
        appendFileSync(file, JSON.stringify({ type: "message", id: `e${i}`, text: `change ${i}` }) + "\n");
        await new Promise((r) => setTimeout(r, 100));
      }
      const spanMs = Date.now() - t0;
      // The last change is taken at the next batch boundary, not before. (A snapshot is dated at
      // its commit: one that read the file just before the last append can be dated after it;
      // pendingSince says whether every change seen is in a snapshot.)
      const state = await waitFor("a snapshot after the last change", () => {
        const s = readState(sb);
        return s && s.lastSnapshot && Date.parse(s.lastSnapshot.time) >= t0 + spanMs - 100 && !s.pendingSince ? s : undefined;
      });
      const afterFirst = state.snapshots.made - 1;
      expect(afterFirst).toBeGreaterThanOrEqual(1);
      expect(afterFirst).toBeLessThanOrEqual(Math.ceil(spanMs / BATCH_MS) + 1);
      expect(afterFirst).toBeLessThan(CHANGES);
      const last = state.lastSnapshot!.id;
      expect((await restoredBytes(sb, last, "sessions/--proj--/s.jsonl")).toString()).toContain(`"change ${CHANGES - 1}"`);

      // A change just before SIGTERM is flushed at once, batch interval or not.
      appendFileSync(file, JSON.stringify({ type: "message", id: "final", text: "the final change" }) + "\n");
      await new Promise((r) => setTimeout(r, 150));
      const stop = await stopWatch(w);
      expect(stop.code, w.stderr()).toBe(0);
      const final = readState(sb)!;
      expect(final.snapshots.made).toBe(state.snapshots.made + 1);
      expect((await restoredBytes(sb, final.lastSnapshot!.id, "sessions/--proj--/s.jsonl")).toString()).toContain("the final change");

      // The counts in the state file, and status's rate computed from exactly them.
      const rq = final.requests!;
      // Each snapshot puts at least a lock, a pack, an index and a snapshot object, and deletes its lock.
      expect(rq.puts).toBeGreaterThanOrEqual(5 * final.snapshots.made);
      expect(rq.gets).toBeGreaterThan(0);
      expect(rq.lists).toBeGreaterThan(0);
      const overMs = Date.parse(final.updatedAt) - Date.parse(final.startedAt);
      const status = await cli(watchEnv(sb), ["status", "--json"]);
      const report = status.json<{ watcher: { requests: Record<string, unknown> } }>();
      // Seconds of running say nothing about a day: no extrapolation before 10 minutes.
      expect(report.watcher.requests).toEqual({ ...rq, overMs, putsPerDay: null, remote: true, why: expect.stringMatching(/^too early to tell \(the watcher has run \d+ s; it takes 10 min\)$/), extrapolated: true });
      const text = (await cli(watchEnv(sb), ["status"])).stdout;
      expect(text).toContain(`${rq.puts} PUT, ${rq.gets} GET, ${rq.lists} LIST in `);
      expect(text).toMatch(/PUTs\/day: too early to tell/);
      expect(text).not.toMatch(/about \d+ PUTs\/day/);
    } finally {
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
    }
  });
});
