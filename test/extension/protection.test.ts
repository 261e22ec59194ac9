// The footer line the extension shows, from the watcher's state file as it may be found: every
// status of docs/EXTENSION.md, and hostile fields that must give a line, never a throw.
import os from "node:os";
import { describe, expect, it } from "vitest";
import { protection } from "../../src/pi-extension/protection.js";
import type { WatcherState } from "../../src/watch/state.js";

const host = os.hostname();
const now = Date.parse("2026-12-02T02:00:00.000Z");
const iso = (msBefore: number) => new Date(now - msBefore).toISOString();

function state(over: Partial<WatcherState> = {}): WatcherState {
  return {
    version: 1,
    pid: process.pid, // this test's own process: alive
    host,
    agentDir: "/a",
    repo: "/r",
    startedAt: iso(60_000),
    updatedAt: iso(1000),
    cpu: { userMs: 0, systemMs: 0 },
    rssBytes: 0,
    snapshots: { made: 3, failed: 0 },
    nextJobs: [],
    ...over,
  };
}

describe("the extension's protection status", () => {
  it("names each state of the watcher", () => {
    expect(protection(undefined, host, 0, now).text).toBe("pi-guard: NOT PROTECTED: no watcher running (pi-guard watch)");
    expect(protection(state({ pid: 999_999_999 }), host, 0, now).text).toBe("pi-guard: NOT PROTECTED: watcher stopped");
    expect(protection(state({ updatedAt: iso(6 * 60_000) }), host, 0, now).text).toBe("pi-guard: NOT PROTECTED: watcher not responding");
    expect(protection(state({ host: "elsewhere" }), host, 0, now).text).toBe("pi-guard: NOT PROTECTED: the watcher's state is from host elsewhere");
    expect(protection(state({ suspectLoss: { since: iso(5000), snapshot: "s", filesBefore: 9, filesNow: 0 } }), host, 0, now).text).toBe("pi-guard: NOT PROTECTED: suspect loss (pi-guard status)");
    expect(protection(state({ failingSince: iso(180_000), failures: 4 }), host, 0, now).text).toBe("pi-guard: NOT PROTECTED: snapshots failing for 3 min");
    const unhealthy = state({ health: { healthy: false, since: iso(1), problems: [{ kind: "mirror-lag", message: "mirror s3://b/p lags\nby 20 min" }] } });
    expect(protection(unhealthy, host, 0, now).text).toBe("pi-guard: NOT PROTECTED: mirror s3://b/p lags by 20 min");
    expect(protection(state(), host, 0, now).text).toBe("pi-guard: watching");
  });

  it("a turn is saved only by a snapshot that began after it", () => {
    const turnAt = now - 3000;
    // Ended 2 s ago after 500 ms: began 2.5 s ago, after the turn.
    const after = state({ lastSnapshot: { id: "x", time: iso(2000), durationMs: 500, files: 3 } });
    expect(protection(after, host, turnAt, now)).toMatchObject({ kind: "saved", text: "pi-guard: saved 2 s ago" });
    // Ended after the turn but began before it: it may not hold the turn.
    const straddling = state({ lastSnapshot: { id: "x", time: iso(2000), durationMs: 1500, files: 3 } });
    expect(protection(straddling, host, turnAt, now).text).toBe("pi-guard: saving…");
    const old = state({ lastSnapshot: { id: "x", time: iso(200_000), durationMs: 500, files: 3 } });
    expect(protection(old, host, now - 60_000, now).text).toBe("pi-guard: saving…"); // an S3 batch may wait 30 s
    expect(protection(old, host, now - 130_000, now).text).toBe("pi-guard: NOT PROTECTED: last turn not saved after 2 min");
  });

  it("a watcher that records when a snapshot began is believed over time - durationMs", () => {
    const turnAt = now - 3000;
    // `time` is the commit and durationMs counts the work after it too: time - durationMs is not the start, `began` is.
    const begunBefore = state({ lastSnapshot: { id: "x", time: iso(2000), began: iso(3100), durationMs: 600, files: 3 } });
    expect(protection(begunBefore, host, turnAt, now).text).toBe("pi-guard: saving…");
    const begunAfter = state({ lastSnapshot: { id: "x", time: iso(2000), began: iso(2500), durationMs: 1500, files: 3 } });
    expect(protection(begunAfter, host, turnAt, now)).toMatchObject({ kind: "saved", text: "pi-guard: saved 2 s ago" });
    const garbage = state({ lastSnapshot: { id: "x", time: iso(2000), began: "soon", durationMs: 500, files: 3 } } as unknown as Partial<WatcherState>);
    expect(protection(garbage, host, turnAt, now).kind).toBe("saved");
  });

  it("hostile fields give a line, never a throw", () => {
    const weird = [
      { host: 42 },
      { updatedAt: "not a time" },
      { failingSince: "garbage" },
      { health: { healthy: false, problems: "many" } },
      { health: { healthy: false, problems: [null] } },
      { lastSnapshot: { time: 5, durationMs: "long" } },
      { lastSnapshot: null },
    ] as unknown as Partial<WatcherState>[];
    for (const w of weird) {
      const p = protection(state(w), host, now - 1000, now);
      expect(p.text).toMatch(/^pi-guard: /);
      expect(p.text).not.toMatch(/\n/);
    }
  });
});
