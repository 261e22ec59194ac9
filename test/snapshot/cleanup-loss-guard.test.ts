// The age-based cleanup verdict (loss-guard.ts judgeCleanup / judgeSnapshot) and the retention rule
// that keeps what a cleanup removed (retention.ts applyPolicy), on their own. The real sweep of a
// real Claude Code transcript, end to end, is test/agents/claude-sweep.test.ts.

import { describe, expect, it } from "vitest";
import { DEFAULT_WATCH } from "../../src/config/config.js";
import { claudeCleanup } from "../../src/agents/claude/index.js";
import { retentionDays } from "../../src/agents/gemini/index.js";
import { AGENT_CLEANUP_TAG, type Snapshot, type SnapshotFields } from "../../src/repo/format.js";
import type { SnapshotRecord } from "../../src/repo/repository.js";
import { applyPolicy } from "../../src/repo/retention.js";
import { shipSelection } from "../../src/repo/replicate.js";
import { describeLoss, judgeCleanup, judgeLoss, judgeSnapshot } from "../../src/snapshot/loss-guard.js";
import type { ParentFile } from "../../src/snapshot/snapshotter.js";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeSandbox } from "../helpers/tmp.js";

const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.parse("2026-12-01T12:00:00Z");

/** Claude files of a last whole snapshot: transcripts `ageDays` old, `gone` of them vanished. */
function claudeFiles(spec: { ageDays: number; gone: boolean }[], others: ParentFile[] = []): ParentFile[] {
  return [
    ...spec.map((s, i) => ({ root: "claude", path: `projects/-p/${String(i).padStart(8, "0")}-0000-0000-0000-000000000000.jsonl`, found: !s.gone, mtimeMs: NOW - s.ageDays * DAY })),
    ...others,
  ];
}

const judge = {
  agentOf: (f: ParentFile) => (f.root === "claude" ? "claude" : f.root === "agent" ? "pi" : undefined),
  sessionOf: (f: ParentFile) => (f.path.endsWith(".jsonl") ? (f.root === "claude" ? "claude" : "pi") : undefined),
  cleanupOf: (agent: string) => (agent === "claude" ? { days: 30, setting: "cleanupPeriodDays 30" } : undefined),
  now: NOW,
};

describe("judgeCleanup: an agent's age-based cleanup", () => {
  it("old transcripts gone while a newer one remains: a cleanup, with count and sample", () => {
    const files = claudeFiles([
      { ageDays: 40, gone: true },
      { ageDays: 35, gone: true },
      { ageDays: 2, gone: false },
    ]);
    const c = judgeCleanup(files, judge)!;
    expect(c.agents).toEqual([{ agent: "claude", days: 30, setting: "cleanupPeriodDays 30", files: 2, sessions: 2, sample: [`claude:${files[0].path}`, `claude:${files[1].path}`] }]);
    expect(c.swept.size).toBe(2);
  });
  it("a young file among the vanished ones: no cleanup (not what an age sweep does)", () => {
    expect(judgeCleanup(claudeFiles([{ ageDays: 40, gone: true }, { ageDays: 10, gone: true }, { ageDays: 2, gone: false }]), judge)).toBeUndefined();
  });
  it("every transcript gone, old ones too: no cleanup (a wipe takes the new ones)", () => {
    expect(judgeCleanup(claudeFiles([{ ageDays: 40, gone: true }, { ageDays: 50, gone: true }]), judge)).toBeUndefined();
  });
  it("every old transcript gone as a new session begins (the sweep runs as the agent starts): a cleanup", () => {
    const files = claudeFiles([{ ageDays: 40, gone: true }, { ageDays: 50, gone: true }]);
    expect(judgeCleanup(files, { ...judge, newFiles: [{ root: "claude", path: "todos/x.json" }] })).toBeUndefined();
    expect(judgeCleanup(files, { ...judge, newFiles: [{ root: "claude", path: "projects/-p/new.jsonl" }] })!.agents[0]).toMatchObject({ agent: "claude", sessions: 2 });
  });
  it("a file with no recorded mtime: no cleanup", () => {
    const files = claudeFiles([{ ageDays: 40, gone: true }, { ageDays: 1, gone: false }]);
    delete files[0].mtimeMs;
    expect(judgeCleanup(files, judge)).toBeUndefined();
  });
  it("the agent's own days: 60 days keeps a 40-day-old file from being read as swept", () => {
    const files = claudeFiles([{ ageDays: 40, gone: true }, { ageDays: 1, gone: false }]);
    expect(judgeCleanup(files, { ...judge, cleanupOf: () => ({ days: 60, setting: "cleanupPeriodDays 60" }) })).toBeUndefined();
    expect(judgeCleanup(files, { ...judge, cleanupOf: () => undefined })!.agents[0]).toMatchObject({ days: 30, files: 1 });
    expect(judgeCleanup(files, { ...judge, cleanupOf: () => undefined })!.agents[0].setting).toBeUndefined();
  });
  it("only non-session files gone: no cleanup verdict", () => {
    const files = claudeFiles([{ ageDays: 1, gone: false }], [{ root: "claude", path: "todos/x.json", found: false, mtimeMs: NOW - 40 * DAY }]);
    expect(judgeCleanup(files, judge)).toBeUndefined();
  });
});

describe("judgeSnapshot: a sweep is recorded, not a suspected loss", () => {
  const config = (dir: string) => ({
    agentDir: path.join(dir, "pi"),
    roots: [{ name: "claude", path: path.join(dir, ".claude") }],
    rootAgents: { claude: "claude" },
    agents: [],
    watch: DEFAULT_WATCH,
  });
  it("most files gone, all of them old: a cleanup and no loss", () => {
    const sb = makeSandbox("cleanup-unit");
    try {
      // Six old transcripts swept, one new one left: "most files at once" alone would call it a loss.
      const files = claudeFiles([...Array.from({ length: 6 }, () => ({ ageDays: 45, gone: true })), { ageDays: 1, gone: false }]);
      const v = judgeSnapshot(files, 1, config(sb.root), "a".repeat(64), { now: NOW });
      expect(v.loss).toBeUndefined();
      expect(v.cleanup).toMatchObject({ against: "a".repeat(64), agents: [{ agent: "claude", days: 30, files: 6, sessions: 6 }] });
      // Without a last whole snapshot to name, nothing is recorded (and the rule is judgeLoss's alone).
      expect(judgeSnapshot(files, 1, config(sb.root), undefined, { now: NOW }).cleanup).toBeUndefined();
    } finally {
      sb.cleanup();
    }
  });
  it("every transcript gone: still a suspected loss", () => {
    const sb = makeSandbox("cleanup-unit");
    try {
      const v = judgeSnapshot(claudeFiles([{ ageDays: 45, gone: true }, { ageDays: 50, gone: true }]), 0, config(sb.root), "a".repeat(64), { now: NOW });
      expect(v.loss?.reason).toBe("sessions");
      expect(v.cleanup).toBeUndefined();
    } finally {
      sb.cleanup();
    }
  });
});

describe("the adapters' ageCleanup settings", () => {
  it("Claude Code: cleanupPeriodDays, the default when unset or 0", () => {
    const sb = makeSandbox("cleanup-claude");
    try {
      const dir = path.join(sb.home, ".claude");
      mkdirSync(dir, { recursive: true });
      expect(claudeCleanup(dir)).toMatchObject({ days: 30, setting: expect.stringMatching(/not set: the default/) });
      writeFileSync(path.join(dir, "settings.json"), JSON.stringify({ cleanupPeriodDays: 7 }));
      expect(claudeCleanup(dir)).toMatchObject({ days: 7 });
      writeFileSync(path.join(dir, "settings.json"), JSON.stringify({ cleanupPeriodDays: 0 }));
      expect(claudeCleanup(dir)).toMatchObject({ days: 30, setting: expect.stringMatching(/0 in .*read as the default/) });
    } finally {
      sb.cleanup();
    }
  });
  it("Gemini CLI: general.sessionRetention.maxAge periods", () => {
    expect([retentionDays("30d"), retentionDays("2w"), retentionDays("1m"), retentionDays("48h"), retentionDays("0d"), retentionDays("soon")]).toEqual([30, 14, 30, 2, undefined, undefined]);
  });
});

describe("forget keeps what a cleanup removed", () => {
  const snap = (id: string, day: number, extra: Partial<SnapshotFields> = {}): SnapshotRecord => ({
    id: id.padEnd(64, "0"),
    snapshot: { version: 1, time: new Date(2026, 10, day, 12).toISOString(), host: "h", user: "u", tags: [], roots: [{ name: "claude", path: "/c" }], tree: [], program: "t", summary: {} as Snapshot["summary"], ...extra },
  });
  const cleanup = { against: "b".padEnd(64, "0"), agents: [{ agent: "claude", days: 30, files: 3, sessions: 2, sample: ["claude:projects/-p/x.jsonl"] }] };
  const all = [snap("a", 1), snap("b", 2), snap("c", 3, { tags: [AGENT_CLEANUP_TAG], cleanup }), snap("d", 4), snap("e", 5)];
  it("a policy that would remove both keeps the snapshot holding the swept files and the record", () => {
    for (const includeSpecial of [false, true]) {
      const r = applyPolicy(all, { keepLast: 1 }, new Date(2026, 11, 1), { includeSpecial });
      const kept = new Map(r.keep.map((k) => [k.record.id.slice(0, 1), k.reasons]));
      expect([...kept.keys()].sort()).toEqual(["b", "c", "e"]);
      expect(kept.get("b")).toEqual(["holds 2 session file(s) claude's cleanup removed (snapshot c0000000)"]);
      expect(kept.get("c")).toEqual(["records claude's cleanup of 2 session file(s), kept in b0000000"]);
    }
  });
  it("a hostile cleanup record is ignored", () => {
    const bad = [snap("b", 2), snap("c", 3, { cleanup: { against: 7, agents: "x" } as unknown as Snapshot["cleanup"] }), snap("e", 5)];
    expect(applyPolicy(bad, { keepLast: 1 }, new Date(2026, 11, 1)).keep.map((k) => k.record.id.slice(0, 1))).toEqual(["e"]);
  });
});

describe("mirrors get what a cleanup removed", () => {
  it("the ship policy sends the snapshot a cleanup record names, though it is neither newest nor tagged", () => {
    const rec = (id: string, minute: number, extra: Partial<SnapshotFields> = {}): SnapshotRecord => ({
      id: id.padEnd(64, "0"),
      snapshot: { version: 1, time: `2026-11-30T10:${String(minute).padStart(2, "0")}:00Z`, host: "h", user: "u", tags: [], roots: [], tree: [], program: "t", summary: {} as Snapshot["summary"], ...extra },
    });
    const cleanup = { against: "b".padEnd(64, "0"), agents: [{ agent: "claude", days: 30, files: 1, sessions: 1, sample: [] }] };
    const all = [rec("a", 1), rec("b", 2), rec("c", 3, { tags: [AGENT_CLEANUP_TAG], cleanup }), rec("d", 4), rec("e", 5)];
    expect(shipSelection(all).map((r) => r.id.slice(0, 1))).toEqual(["b", "c", "e"]);
  });
});

describe("judgeLoss: a db that lost most rows of its key table", () => {
  const rule = DEFAULT_WATCH.suspectLoss; // at least 3 and at least half
  const db = (before: number, now: number): ParentFile => ({ root: "opencode", path: "opencode.db", found: true, rows: { table: "session", before, now } });
  const isSession = () => undefined;
  it("10 → 2 sessions: a loss with reason rows, named in the line", () => {
    const v = judgeLoss([db(10, 2)], 1, rule, isSession, "f".repeat(64))!;
    expect(v).toMatchObject({ reason: "rows", lost: 0, rows: [{ file: "opencode:opencode.db", table: "session", before: 10, now: 2 }], sample: ["opencode:opencode.db"] });
    expect(describeLoss(v, "e".repeat(64), undefined)).toMatch(/^SUSPECTED LOSS: a database lost most of its sessions \(opencode:opencode\.db: 2 of 10 rows of table session left of snapshot ffffffff\); snapshot eeeeeeee is tagged suspect-loss/);
  });
  for (const [before, now, why] of [
    [10, 6, "under the fraction"],
    [4, 2, "under minFiles"],
    [3, 5, "grown"],
  ] as const) {
    it(`${before} → ${now}: no loss (${why})`, () => {
      expect(judgeLoss([db(before, now)], 1, rule, isSession)).toBeUndefined();
    });
  }
});
