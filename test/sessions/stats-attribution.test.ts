// attributeCopies on crafted catalog records: the cases real pi files do not produce but a damaged
// or hostile file can (origins that name each other, an origin that lacks the entry, copies whose
// origin is unknown). Every copied entry is counted at most once, and totals stay row sums.

import { describe, expect, it } from "vitest";
import type { SessionRecord } from "../../src/sessions/catalog.js";
import { attributeCopies, computeStats } from "../../src/sessions/stats.js";
import type { CopiedUse } from "../../src/sessions/summary.js";

const use = (k: string, tokens: number): CopiedUse => ({ k, slot: "2026-11-01T00:00Z", model: "p/m", use: { input: tokens, output: 0, cacheRead: 0, cacheWrite: 0, tokens, cost: tokens / 1000 } });

function record(id: string, started: string, copied: CopiedUse[], origins: string[] = []): SessionRecord {
  return { id, started, copied, origins, usage: [], turnsBySlot: {}, name: null, project: "/p", size: 1, deleted: false, tokens: 0, cost: 0, turns: 0 } as unknown as SessionRecord;
}

const keysOf = (m: Map<string, CopiedUse[]>) => Object.fromEntries([...m].map(([id, cs]) => [id, cs.map((c) => c.k)]));

describe("attributeCopies", () => {
  it("counts copies that an older origin holds there, and the rest once, oldest session first", () => {
    const sessions = [record("b-fork", "2026-11-02", [use("k1", 10), use("k2", 20)], ["a-parent"]), record("a-parent", "2026-11-01", []), record("c-fork", "2026-11-03", [use("k2", 20), use("k3", 30)], ["gone"])];
    const counted = attributeCopies(sessions, new Map([["a-parent", new Set(["k1"])]]));
    // k1 is the parent's; k2 is in no origin: the older fork counts it; k3 only c has.
    expect(keysOf(counted)).toEqual({ "a-parent": [], "b-fork": ["k2"], "c-fork": ["k3"] });
  });

  it("never lets two sessions that name each other as origins both skip an entry", () => {
    const sessions = [record("x", "2026-11-01", [use("k", 5)], ["y"]), record("y", "2026-11-02", [use("k", 5)], ["x"])];
    const counted = attributeCopies(sessions, new Map([["x", new Set(["k"])], ["y", new Set(["k"])]]));
    // Only an older session can be an origin: x counts k, y defers to x.
    expect(keysOf(counted)).toEqual({ x: ["k"], y: [] });
    const stats = computeStats(sessions, { target: "t", timeline: [] }, { gapHours: 24, originKeys: new Map([["x", new Set(["k"])], ["y", new Set(["k"])]]) });
    expect(stats.totals.tokens).toBe(5);
    expect(stats.sessions.map((r) => [r.id, r.tokens, r.copied])).toEqual([["x", 5, 0], ["y", 0, 1]]);
  });

  it("ignores an origin that is the session itself or younger than it", () => {
    const sessions = [record("old", "2026-11-01", [use("k", 7)], ["old", "new"]), record("new", "2026-11-05", [])];
    const counted = attributeCopies(sessions, new Map([["old", new Set(["k"])], ["new", new Set(["k"])]]));
    expect(keysOf(counted)).toEqual({ old: ["k"], new: [] });
  });
});
