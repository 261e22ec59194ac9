// The real session files in test/fixtures (v1 from pi's repo, v3 written by pi 0.73.1, a
// v1 file with a garbage line) survive snapshot + restore byte for byte, and pi can still load them.

import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRepo, ok, restoreJson, snapshot } from "../helpers/cli.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { copyFixtures, FIXTURES_DIR, makeSandbox, type Sandbox, sha256File, treeState, fingerprint } from "../helpers/tmp.js";

describe("real fixtures through snapshot and restore", () => {
  let sb: Sandbox;
  let copies: string[];
  let snapId: string;

  beforeAll(async () => {
    sb = makeSandbox("fixtures");
    copies = copyFixtures(sb.agentDir);
    await initRepo(sb);
    snapId = (await snapshot(sb)).snapshotId;
  });

  afterAll(() => sb?.cleanup());

  /** The shared original of a copy: copies are named "<group>-<file>" (groups contain dashes). */
  const originalOf = (copy: string) => {
    const base = path.basename(copy);
    const group = ["pi-mono-v1", "pi-v3"].find((g) => base.startsWith(`${g}-`));
    if (!group) throw new Error(`unknown fixture copy ${copy}`);
    return path.join(FIXTURES_DIR, group, base.slice(group.length + 1));
  };

  it("copied all five fixtures", () => {
    expect(copies.map((c) => path.basename(c)).sort()).toEqual([
      "pi-mono-v1-before-compaction.jsonl",
      "pi-mono-v1-large-session.jsonl",
      "pi-v3-branched.jsonl",
      "pi-v3-forked.jsonl",
      "pi-v3-legacy-v1-with-garbage-line.jsonl",
    ]);
  });

  it("restores the deleted sessions in place, byte-identical to the shared originals", async () => {
    const before = fingerprint(treeState(sb.agentDir));
    rmSync(sb.sessionsDir, { recursive: true });
    const r = await restoreJson(sb, [snapId]);
    expect(r.failed).toEqual([]);
    expect(r.create).toBe(copies.length);
    expect(fingerprint(treeState(sb.agentDir))).toEqual(before);
    for (const copy of copies) expect(sha256File(copy), copy).toBe(sha256File(originalOf(copy)));
  });

  it("restores into a target dir byte-identical too", async () => {
    const target = path.join(sb.root, "target");
    await restoreJson(sb, [snapId, "--target", target]);
    for (const copy of copies) {
      const restored = path.join(target, path.relative(sb.agentDir, copy));
      expect(sha256File(restored), restored).toBe(sha256File(originalOf(copy)));
    }
  });

  it("pi's in-memory parser loads every restored session", () => {
    for (const copy of copies) {
      const text = readFileSync(copy, "utf8");
      const v = validateWithPi(text);
      expect(v.entries.length, copy).toBeGreaterThan(0);
    }
    // pi-guard kept the garbage line pi's loader would drop: the bytes are the user's, not ours.
    const garbage = copies.find((c) => c.endsWith("legacy-v1-with-garbage-line.jsonl"))!;
    const text = readFileSync(garbage, "utf8");
    const lines = text.split("\n").filter((l) => l.trim()).length;
    expect(validateWithPi(text).parsedLines).toBeLessThan(lines);
    // The v1 files have no ids on disk; the restored bytes still have none (nothing was migrated).
    const v1 = readFileSync(copies.find((c) => c.endsWith("large-session.jsonl"))!, "utf8");
    expect(JSON.parse(v1.slice(0, v1.indexOf("\n"))).version ?? 1).toBe(1);
  });

  it("check --read-data passes", async () => {
    const r = await ok(sb, ["check", "--read-data", "--json"]);
    expect(r.json().ok).toBe(true);
  });
});
