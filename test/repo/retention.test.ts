// Retention policy (pure): keeps exactly what the policy names, over fixed timestamps in local time
// (Date built from local fields, so the cases hold in any TZ). Restic's semantics: per host+roots
// group, newest first; each period rule keeps the newest snapshot of each of the n latest periods
// that have one; keep-within is relative to the group's newest snapshot.

import { describe, expect, it } from "vitest";
import type { RetentionPolicy } from "../../src/config/config.js";
import { SUSPECT_LOSS_TAG, type Snapshot, type SnapshotFields } from "../../src/repo/format.js";
import type { SnapshotRecord } from "../../src/repo/repository.js";
import { applyPolicy, isoWeek, parseKeepWithin, subtractDuration } from "../../src/repo/retention.js";

/** A snapshot record named `name`, at local time [y, month (1-12), d, h, min]. */
function snap(name: string, t: [number, number, number, number?, number?], extra: Partial<SnapshotFields> = {}): SnapshotRecord {
  const time = new Date(t[0], t[1] - 1, t[2], t[3] ?? 12, t[4] ?? 0).toISOString();
  return {
    id: name,
    snapshot: { version: 1, time, host: "h", user: "u", tags: [], roots: [{ name: "agent", path: "/a" }], tree: [], program: "t", summary: {} as Snapshot["summary"], ...extra },
  };
}

const NOW = new Date(2026, 0, 1);

interface Case {
  name: string;
  snapshots: SnapshotRecord[];
  policy: RetentionPolicy;
  includeSpecial?: boolean;
  /** name -> reasons, for every kept snapshot; the rest must be removed. */
  keep: Record<string, string[]>;
}

const cases: Case[] = [
  {
    name: "keep-last keeps the n newest, whatever their order in the input",
    snapshots: [snap("c", [2025, 5, 3]), snap("a", [2025, 5, 1]), snap("d", [2025, 5, 4]), snap("b", [2025, 5, 2])],
    policy: { keepLast: 2 },
    keep: { c: ["last"], d: ["last"] },
  },
  {
    name: "hourly: the newest in each hour, for the n latest hours that have one; hour boundaries exact",
    snapshots: [
      snap("a", [2025, 5, 1, 9, 0]),
      snap("b", [2025, 5, 1, 9, 59]),
      snap("c", [2025, 5, 1, 10, 0]),
      snap("d", [2025, 5, 1, 10, 30]),
      snap("e", [2025, 5, 1, 13, 5]),
    ],
    policy: { keepHourly: 3 },
    keep: { e: ["hourly"], d: ["hourly"], b: ["hourly"] },
  },
  {
    name: "daily across midnight: 23:59 and 00:00 are different days",
    snapshots: [snap("a", [2025, 5, 1, 23, 59]), snap("b", [2025, 5, 2, 0, 0]), snap("c", [2025, 5, 2, 18, 0]), snap("d", [2025, 4, 30, 8, 0])],
    policy: { keepDaily: 2 },
    keep: { c: ["daily"], a: ["daily"] },
  },
  {
    name: "weekly uses ISO weeks (Monday start): Sunday and the Monday after are different weeks",
    snapshots: [snap("sun", [2025, 6, 1, 20]), snap("mon", [2025, 6, 2, 8]), snap("sat", [2025, 5, 31, 8]), snap("prev", [2025, 5, 25, 8])],
    policy: { keepWeekly: 2 },
    keep: { mon: ["weekly"], sun: ["weekly"] },
  },
  {
    name: "monthly and yearly: month and year boundaries; empty periods are not counted",
    snapshots: [
      snap("dec31", [2024, 12, 31, 23, 30]),
      snap("jan1", [2025, 1, 1, 0, 10]),
      snap("jan20", [2025, 1, 20]),
      snap("mar", [2025, 3, 3]),
      snap("y2023", [2023, 7, 7]),
    ],
    policy: { keepMonthly: 2, keepYearly: 3 },
    keep: { mar: ["monthly", "yearly"], jan20: ["monthly"], dec31: ["yearly"], y2023: ["yearly"] },
  },
  {
    name: "keep-within is relative to the newest snapshot, not to now; the boundary is inclusive",
    snapshots: [snap("new", [2025, 5, 10, 12, 0]), snap("edge", [2025, 5, 8, 11, 0]), snap("out", [2025, 5, 8, 10, 59]), snap("old", [2025, 1, 1])],
    policy: { keepWithin: "2d1h" },
    keep: { new: ["within 2d1h"], edge: ["within 2d1h"] },
  },
  {
    name: "rules combine: a snapshot kept by several lists every reason",
    snapshots: [snap("a", [2025, 5, 1, 8]), snap("b", [2025, 5, 1, 9]), snap("c", [2025, 5, 2, 9]), snap("d", [2025, 5, 2, 9, 30])],
    policy: { keepLast: 1, keepHourly: 2, keepDaily: 2 },
    keep: { d: ["last", "hourly", "daily"], b: ["hourly", "daily"] },
  },
  {
    name: "keep-tag: any listed tag; a,b needs both",
    snapshots: [snap("x", [2025, 5, 1], { tags: ["x"] }), snap("xy", [2025, 5, 2], { tags: ["x", "y"] }), snap("y", [2025, 5, 3], { tags: ["y"] }), snap("none", [2025, 5, 4])],
    policy: { keepTags: ["x,y"], keepLast: 1 },
    keep: { xy: ["tag x,y"], none: ["last"] },
  },
  {
    name: "specials are kept and do not use up a period: the real snapshot of that hour stays",
    snapshots: [
      snap("real", [2025, 5, 1, 9, 10]),
      snap("loss", [2025, 5, 1, 9, 20], { tags: [SUSPECT_LOSS_TAG] }),
      snap("pre", [2025, 5, 1, 9, 30], { tags: ["pre-restore"] }),
      snap("imp", [2025, 5, 1, 9, 40], { tags: ["import"], imported: "2025-05-01T00:00:00Z" }),
      snap("del", [2025, 5, 1, 9, 50], { tags: ["pre-delete"] }),
      snap("older", [2025, 5, 1, 8, 10]),
    ],
    policy: { keepHourly: 1 },
    keep: { real: ["hourly"], loss: [SUSPECT_LOSS_TAG], pre: ["pre-restore"], imp: ["import"], del: ["pre-delete"] },
  },
  {
    name: "with includeSpecial the policy decides about specials too",
    snapshots: [snap("real", [2025, 5, 1, 9, 10]), snap("loss", [2025, 5, 1, 9, 20], { tags: [SUSPECT_LOSS_TAG] }), snap("pre", [2025, 5, 1, 7, 30], { tags: ["pre-restore"] })],
    policy: { keepHourly: 1 },
    includeSpecial: true,
    keep: { loss: ["hourly"] },
  },
  {
    name: "hosts are separate groups: keep-last 1 keeps one per host",
    snapshots: [snap("a1", [2025, 5, 1]), snap("a2", [2025, 5, 2]), snap("b1", [2025, 5, 1], { host: "other" }), snap("b2", [2025, 5, 3], { host: "other" })],
    policy: { keepLast: 1 },
    keep: { a2: ["last"], b2: ["last"] },
  },
  {
    name: "a snapshot dated after now is kept and does not shift keep-within",
    snapshots: [snap("future", [2030, 1, 1]), snap("recent", [2025, 12, 31, 20]), snap("hourback", [2025, 12, 31, 19, 30]), snap("old", [2025, 12, 1])],
    policy: { keepWithin: "1h" },
    keep: { future: ["in the future"], recent: ["within 1h"], hourback: ["within 1h"] },
  },
  {
    name: "the default policy over 3 days of 20-minute snapshots",
    snapshots: Array.from({ length: 3 * 72 }, (_, i) => snap(`s${String(i).padStart(3, "0")}`, [2025, 5, 1 + Math.floor(i / 72), Math.floor((i % 72) / 3), (i % 3) * 20])),
    policy: { keepWithin: "1h", keepHourly: 48, keepDaily: 30, keepWeekly: 26 },
    keep: Object.fromEntries([
      // Within 1h of the newest (May 3 23:40): 22:40, 23:00, 23:20, 23:40.
      ...["s212", "s213", "s214", "s215"].map((n) => [n, []]),
      // Hourly: the :40 snapshot of each of the last 48 hours (May 2 00h .. May 3 23h).
      ...Array.from({ length: 48 }, (_, h) => [`s${String(72 + 3 * h + 2).padStart(3, "0")}`, []]),
      // Daily adds May 1's last.
      ["s071", []],
    ]),
  },
];

describe("applyPolicy", () => {
  for (const c of cases) {
    it(c.name, () => {
      const r = applyPolicy(c.snapshots, c.policy, NOW, { includeSpecial: c.includeSpecial });
      const kept = Object.fromEntries(r.keep.map((k) => [k.record.id, k.reasons]));
      expect(Object.keys(kept).sort()).toEqual(Object.keys(c.keep).sort());
      // An empty list in a case means "kept, for whatever reasons" (the big default-policy case).
      for (const [n, reasons] of Object.entries(c.keep)) if (reasons.length) expect(kept[n], n).toEqual(reasons);
      expect(r.keep.length + r.remove.length).toBe(c.snapshots.length);
    });
  }

  it("an empty policy is refused, never 'forget everything'", () => {
    expect(() => applyPolicy([snap("a", [2025, 1, 1])], {}, NOW)).toThrow(/keeps nothing/);
    expect(() => applyPolicy([snap("a", [2025, 1, 1])], { keepLast: 0, keepTags: [] }, NOW)).toThrow(/keeps nothing/);
  });

  it("durations and ISO weeks", () => {
    expect(parseKeepWithin("1y2m3w4d5h")).toEqual({ y: 1, m: 2, w: 3, d: 4, h: 5 });
    expect(() => parseKeepWithin("1x")).toThrow(/not a duration/);
    expect(() => parseKeepWithin("")).toThrow(/not a duration/);
    const d = subtractDuration(new Date(2025, 2, 31, 10), "1m");
    expect([d.getMonth(), d.getDate()]).toEqual([2, 3]); // Feb 31 rolls over to Mar 3, as restic's AddDate does
    expect(isoWeek(new Date(2024, 11, 30))).toBe("2025-W1"); // Monday Dec 30 2024 is in week 1 of 2025
    expect(isoWeek(new Date(2021, 0, 3))).toBe("2020-W53");
    expect(isoWeek(new Date(2025, 5, 1))).toBe("2025-W22");
    expect(isoWeek(new Date(2025, 5, 2))).toBe("2025-W23");
  });
});
