// Damage in the repository is found, named, and never turned into wrong bytes: a flipped byte in a
// pack, a truncated or deleted pack, a damaged index file, a damaged snapshot file.

import { randomBytes } from "node:crypto";
import { cpSync, readdirSync, readFileSync, statSync, truncateSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, type CliResult, expectOneLineError, initRepo, ok, restoreJson, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { copyFixtures, fingerprint, type FileState, listFiles, makeSandbox, type Sandbox, treeState, writeFileExact, writePiConfigFiles } from "../helpers/tmp.js";

const DAMAGED = "pi-hermes-memory/sessions.db";

function flipByte(file: string, at: number): void {
  const data = readFileSync(file);
  data[at] ^= 0x40;
  writeFileSync(file, data);
}

/** Every file in `dir` has exactly the bytes it had in the snapshot, and no temp file is left. */
function expectNoWrongBytes(dir: string, expected: Map<string, FileState>): void {
  for (const [rel, state] of treeState(dir)) {
    expect(rel, "a temp file was left behind").not.toMatch(/pi-guard-|\.tmp/);
    expect(expected.get(rel)?.sha256, `${rel} has bytes the snapshot never had`).toBe(state.sha256);
  }
}

describe("corruption is detected and contained", () => {
  let sb: Sandbox;
  let s1: SnapshotJson;
  let s2: SnapshotJson;
  let state1: Map<string, FileState>;
  let state2: Map<string, FileState>;
  let pristine: string;
  /** The pack written by the second snapshot: mostly the 2 MB of DAMAGED's data. */
  let newPack: string;
  let newIndex: string;

  /** A copy of the undamaged repository to break in one way. */
  const damagedCopy = (name: string, damage: (repo: string) => void): string => {
    const repo = path.join(sb.root, `repo-${name}`);
    cpSync(pristine, repo, { recursive: true });
    damage(repo);
    return repo;
  };
  const inRepo = (repo: string, abs: string) => path.join(repo, path.relative(sb.repo, abs));

  beforeAll(async () => {
    sb = makeSandbox("corrupt");
    writePiConfigFiles(sb.agentDir);
    copyFixtures(sb.agentDir);
    await initRepo(sb);
    s1 = await snapshot(sb);
    state1 = treeState(sb.agentDir);

    const packsBefore = new Set(listFiles(path.join(sb.repo, "data")));
    const indexBefore = new Set(listFiles(path.join(sb.repo, "index")));
    writeFileExact(path.join(sb.agentDir, DAMAGED), randomBytes(2 * 1024 * 1024), 0o644);
    s2 = await snapshot(sb);
    state2 = treeState(sb.agentDir);
    const newPacks = listFiles(path.join(sb.repo, "data")).filter((f) => !packsBefore.has(f));
    newPack = newPacks.sort((a, b) => statSync(b).size - statSync(a).size)[0];
    newIndex = listFiles(path.join(sb.repo, "index")).filter((f) => !indexBefore.has(f))[0];
    pristine = path.join(sb.root, "pristine-repo");
    cpSync(sb.repo, pristine, { recursive: true });
  });

  afterAll(() => sb?.cleanup());

  it("the second snapshot wrote one big new pack and one new index file", () => {
    expect(statSync(newPack).size).toBeGreaterThan(2 * 1024 * 1024);
    expect(newIndex).toBeDefined();
  });

  describe("one flipped byte inside a pack", () => {
    let repo: string;
    beforeAll(() => {
      repo = damagedCopy("flipped", (r) => flipByte(inRepo(r, newPack), Math.floor(statSync(newPack).size / 4)));
    });

    it("check without --read-data sees a sound structure; check --read-data exits 3 and names the damaged file", async () => {
      const structure = await cli(sb, ["check", "--json"], { env: { PI_GUARD_REPO: repo } });
      expect(structure.code, structure.stdout + structure.stderr).toBe(0);

      const r = await cli(sb, ["check", "--read-data", "--json"], { env: { PI_GUARD_REPO: repo } });
      expect(r.code, r.stderr).toBe(3);
      const report = r.json();
      expect(report.ok).toBe(false);
      expect(report.damagedFiles).toEqual([{ snapshot: s2.snapshotId, root: "agent", path: DAMAGED }]);

      const text = await cli(sb, ["check", "--read-data"], { env: { PI_GUARD_REPO: repo } });
      expect(text.code).toBe(3);
      expect(text.stdout + text.stderr).toContain(DAMAGED);
      expect(text.stderr).not.toMatch(/^\s+at /m);
    });

    it("restore --target writes every other file and refuses the damaged one (exit 3)", async () => {
      const target = path.join(sb.root, "restore-flipped");
      const r = await cli(sb, ["restore", s2.snapshotId, "--target", target, "--json"], { env: { PI_GUARD_REPO: repo } });
      expect(r.code, r.stderr).toBe(3);
      expect(r.json().failed.map((f: { path: string }) => f.path)).toEqual([DAMAGED]);
      expect(r.stderr).toContain(DAMAGED);
      expect(r.stderr).not.toMatch(/^\s+at /m);
      const restored = treeState(target);
      expect(restored.has(DAMAGED)).toBe(false);
      expect(fingerprint(restored)).toEqual(fingerprint(state2, (rel) => rel !== DAMAGED));
      expect(readdirSync(path.join(target, path.dirname(DAMAGED))).filter((n) => n !== path.basename(DAMAGED))).toEqual([]);
    });

    it("an in-place restore does not replace the live file with damaged data, and leaves no temp file", async () => {
      const live = path.join(sb.agentDir, DAMAGED);
      writeFileExact(live, "the user's current database\n", 0o644);
      const session = [...state2.keys()].find((k) => k.endsWith("branched.jsonl"))!;
      writeFileExact(path.join(sb.agentDir, session), "rewritten by something\n", 0o644);

      const r = await cli(sb, ["restore", s2.snapshotId, "--json"], { env: { PI_GUARD_REPO: repo } });
      expect(r.code, r.stderr).toBe(3);
      expect(readFileSync(live, "utf8")).toBe("the user's current database\n");
      expect(readdirSync(path.dirname(live))).toEqual([path.basename(DAMAGED)]);
      // The other file was restored.
      expect(treeState(sb.agentDir).get(session)?.sha256).toBe(state2.get(session)?.sha256);
    });

    it("the first snapshot, which does not use the damaged data, restores byte-identical", async () => {
      const target = path.join(sb.root, "restore-flipped-s1");
      const r = await restoreJson(sb, [s1.snapshotId, "--target", target], { env: { PI_GUARD_REPO: repo } });
      expect(r.failed).toEqual([]);
      expect(fingerprint(treeState(target))).toEqual(fingerprint(state1));
    });
  });

  /** Restore both snapshots from a damaged repo: each either succeeds byte-identical or fails clearly. */
  async function restoreBoth(repo: string, name: string): Promise<{ r1: CliResult; r2: CliResult; t1: string; t2: string }> {
    const t1 = path.join(sb.root, `${name}-s1`);
    const t2 = path.join(sb.root, `${name}-s2`);
    const r1 = await cli(sb, ["restore", s1.snapshotId, "--target", t1], { env: { PI_GUARD_REPO: repo } });
    const r2 = await cli(sb, ["restore", s2.snapshotId, "--target", t2], { env: { PI_GUARD_REPO: repo } });
    for (const [r, t, state] of [[r1, t1, state1], [r2, t2, state2]] as const) {
      expect(r.stderr).not.toMatch(/^\s+at /m);
      expect(r.stderr).not.toMatch(/internal error/);
      expectNoWrongBytes(t, state);
    }
    return { r1, r2, t1, t2 };
  }

  // The second snapshot's tree blobs live in the same pack as its data, so losing the pack's tail
  // loses its file list too: its restore must fail as a whole, clearly, with nothing wrong written.
  it("a truncated pack: check exits 3; the snapshot that needs it fails clearly, the other restores", async () => {
    const repo = damagedCopy("truncated", (r) => truncateSync(inRepo(r, newPack), Math.floor(statSync(newPack).size * 0.6)));
    const check = await cli(sb, ["check", "--json"], { env: { PI_GUARD_REPO: repo } });
    expect(check.code).toBe(3);
    expect(JSON.stringify(check.json().problems)).toMatch(/bytes|truncated|size/);
    const { r1, r2, t1, t2 } = await restoreBoth(repo, "truncated");
    expect(r1.code, r1.stderr).toBe(0);
    expect(fingerprint(treeState(t1))).toEqual(fingerprint(state1));
    expect(r2.code, r2.stderr).toBe(3);
    expect(r2.stderr).toMatch(/truncated|damaged|missing/);
    expect(r2.stderr.trim().split("\n").length).toBeLessThanOrEqual(3);
    expect(treeState(t2).has(DAMAGED)).toBe(false);
  });

  it("a deleted pack: check exits 3 naming it missing; the snapshot that needs it fails clearly, the other restores", async () => {
    const repo = damagedCopy("deleted", (r) => unlinkSync(inRepo(r, newPack)));
    const check = await cli(sb, ["check", "--json"], { env: { PI_GUARD_REPO: repo } });
    expect(check.code).toBe(3);
    const problems = JSON.stringify(check.json().problems);
    expect(problems).toMatch(/missing/);
    expect(problems).toContain(s2.snapshotId.slice(0, 8));
    const { r1, r2, t1, t2 } = await restoreBoth(repo, "deleted");
    expect(r1.code, r1.stderr).toBe(0);
    expect(fingerprint(treeState(t1))).toEqual(fingerprint(state1));
    expect(r2.code, r2.stderr).toBe(3);
    expect(treeState(t2).has(DAMAGED)).toBe(false);
  });

  it("a damaged index file: check exits 3, restores fail with one clear line or give the right bytes", async () => {
    const repo = damagedCopy("index", (r) => flipByte(inRepo(r, newIndex), Math.floor(statSync(newIndex).size / 2)));
    const check = await cli(sb, ["check"], { env: { PI_GUARD_REPO: repo } });
    expect(check.code, check.stdout + check.stderr).toBe(3);
    expect(check.stdout + check.stderr).toMatch(/index/);
    const { r1, r2 } = await restoreBoth(repo, "index");
    for (const r of [r1, r2]) if (r.code !== 0) expectOneLineError(r);
  });

  it("a damaged snapshot file: check exits 3 naming it; that snapshot fails clearly; the other still restores", async () => {
    const snapFile = path.join(sb.repo, "snapshots", s2.snapshotId);
    const repo = damagedCopy("snapshot", (r) => flipByte(inRepo(r, snapFile), Math.floor(statSync(snapFile).size / 2)));
    const check = await cli(sb, ["check"], { env: { PI_GUARD_REPO: repo } });
    expect(check.code, check.stdout + check.stderr).toBe(3);
    expect(check.stdout + check.stderr).toContain(s2.snapshotId.slice(0, 8));

    const t2 = path.join(sb.root, "snapshot-s2");
    const r2 = await cli(sb, ["restore", s2.snapshotId, "--target", t2], { env: { PI_GUARD_REPO: repo } });
    expect(expectOneLineError(r2)).toContain(s2.snapshotId.slice(0, 8));

    // One bad snapshot object must not make every other snapshot unreachable.
    const t1 = path.join(sb.root, "snapshot-s1");
    const r1 = await cli(sb, ["restore", s1.snapshotId, "--target", t1], { env: { PI_GUARD_REPO: repo } });
    expect(r1.code, r1.stderr).toBe(0);
    expect(fingerprint(treeState(t1))).toEqual(fingerprint(state1));
  });

  it("the undamaged repository still checks clean", async () => {
    const r = await ok(sb, ["check", "--read-data", "--json"], { env: { PI_GUARD_REPO: pristine } });
    expect(r.json().ok).toBe(true);
  });
});
