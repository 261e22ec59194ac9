// forget + prune end to end through the CLI: a policy over snapshots at fixed times removes exactly
// the ones it does not name; dry runs change no byte of the repository; prune deletes and repacks
// so that the repository shrinks, `check --read-data` passes with no leftover, and every survivor
// restores byte-identical. A Repository kept open across a prune (as the watcher keeps one) still
// makes a good snapshot afterwards.

import { existsSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { snapshotAgentDir } from "../../src/engine.js";
import { cli, expectOneLineError, initRepo, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, treeState, writeFileExact } from "../helpers/tmp.js";
import { expectRestores, makeHistory, openRepo, repoListing, retime, type Round } from "./prune-fixture.js";

/** Local times [y, month, d, h, min] of the 8 rounds; s5 becomes a pre-restore snapshot. */
const TIMES: [number, number, number, number, number][] = [
  [2025, 1, 5, 10, 0],
  [2025, 3, 10, 9, 0],
  [2025, 6, 1, 8, 0],
  [2025, 6, 1, 20, 0],
  [2025, 6, 2, 7, 0],
  [2025, 6, 2, 7, 40],
  [2025, 6, 2, 9, 15],
  [2025, 6, 2, 9, 20],
];
const POLICY = ["--keep-last", "1", "--keep-hourly", "2", "--keep-daily", "2", "--keep-monthly", "3"];

describe("forget and prune", () => {
  let sb: Sandbox;
  let rounds: Round[];

  beforeAll(async () => {
    sb = makeSandbox("prune");
    await initRepo(sb);
    rounds = await makeHistory(sb, TIMES.length);
    const repo = await openRepo(sb);
    for (let i = 0; i < rounds.length; i++) {
      const [y, mo, d, h, mi] = TIMES[i];
      rounds[i].id = await retime(repo, rounds[i].id, new Date(y, mo - 1, d, h, mi), i === 5 ? ["pre-restore"] : []);
    }
  }, 120_000);

  afterAll(() => sb?.cleanup());

  it("forget keeps exactly what the policy names; a dry run changes nothing", async () => {
    const before = repoListing(sb.repo);
    const dry = (await ok(sb, ["forget", ...POLICY, "--dry-run", "--json"])).json();
    expect(repoListing(sb.repo)).toEqual(before);
    expect(dry.dryRun).toBe(true);
    expect(dry.removed).toBe(0);
    const reasons = Object.fromEntries(dry.keep.map((k: { id: string; reasons: string[] }) => [rounds.findIndex((r) => r.id === k.id), k.reasons]));
    // Newest first: s7 last+hourly+daily+monthly; s6 shares s7's hour; s4 is the second hour;
    // s3 the second day; s1 and s0 the second and third month; s5 is pre-restore; s2 goes.
    expect(reasons).toEqual({
      7: ["last", "hourly", "daily", "monthly"],
      4: ["hourly"],
      3: ["daily"],
      1: ["monthly"],
      0: ["monthly"],
      5: ["pre-restore"],
    });
    expect(dry.remove.map((r: { id: string }) => r.id).sort()).toEqual([rounds[2].id, rounds[6].id].sort());

    const pruneDry = (await ok(sb, ["prune", "--dry-run", "--json"])).json();
    expect(pruneDry.dryRun).toBe(true);
    expect(repoListing(sb.repo)).toEqual(before);

    const real = (await ok(sb, ["forget", ...POLICY, "--json"])).json();
    expect(real.removed).toBe(2);
    const left = (await ok(sb, ["snapshots", "--json"])).json<{ id: string }[]>().map((s) => s.id);
    expect(left.sort()).toEqual(rounds.filter((_, i) => i !== 2 && i !== 6).map((r) => r.id).sort());
    // Only snapshot objects went.
    const after = repoListing(sb.repo);
    expect(Object.keys(before).filter((k) => !(k in after)).sort()).toEqual([`snapshots/${rounds[2].id}`, `snapshots/${rounds[6].id}`].sort());
  });

  it("prune frees what only forgotten snapshots used; survivors restore byte-identical; a second prune has nothing to do", async () => {
    const r = (await ok(sb, ["prune", "--json"])).json();
    expect(r.nothingToDo).toBe(false);
    expect(r.blobs.removed).toBeGreaterThan(0);
    // Tree packs of the forgotten snapshots held nothing else; their data packs also held data
    // that survivors use, which moved.
    expect(r.packs.deleted).toBeGreaterThan(0);
    expect(r.packs.repacked).toBeGreaterThan(0);
    expect(r.blobs.repacked).toBeGreaterThan(0);
    expect(r.bytes.after).toBeLessThan(r.bytes.before);
    expect(r.bytes.after).toBe(r.bytes.before - r.bytes.deleted - r.bytes.repacked + r.bytes.written);
    expect(r.packs.after).toBe(r.packs.before - r.packs.deleted - r.packs.repacked + r.packs.written);
    expect(r.blobs.missing).toEqual([]);
    expect(readdirSync(path.join(sb.repo, "index"))).toEqual([r.indexFiles.written]);
    const dataFiles = readdirSync(path.join(sb.repo, "data"), { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    expect(dataFiles).toHaveLength(r.packs.after);

    const check = await cli(sb, ["check", "--read-data", "--json"]);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.json().problems).toEqual([]);
    await expectRestores(sb, rounds.filter((_, i) => i !== 2 && i !== 6));

    const again = (await ok(sb, ["prune", "--json"])).json();
    expect(again.nothingToDo).toBe(true);
    expect(again.packs.before).toBe(r.packs.after);
  });

  it("forget by id, and its mistakes: no policy, unknown or malformed ids, policy and ids together", async () => {
    expect(expectOneLineError(await cli(sb, ["forget"]), 2)).toMatch(/forgetting every snapshot is never allowed/);
    expect(expectOneLineError(await cli(sb, ["forget", "--keep-last", "0"]), 2)).toMatch(/keeps nothing/);
    expect(expectOneLineError(await cli(sb, ["forget", "--keep-within", "3x"]), 2)).toMatch(/not a duration/);
    expect(expectOneLineError(await cli(sb, ["forget", "abcdef0123"]), 1)).toMatch(/no snapshot abcdef0123/);
    expect(expectOneLineError(await cli(sb, ["forget", "zz"]), 2)).toMatch(/not a snapshot id/);
    expect(expectOneLineError(await cli(sb, ["forget", rounds[0].id.slice(0, 8), "--keep-last", "1"]), 2)).toMatch(/not both/);
    expect(expectOneLineError(await cli(sb, ["prune", "--max-unused", "150%"]), 2)).toMatch(/percentage/);
    const byId = (await ok(sb, ["forget", rounds[0].id.slice(0, 8), "--json"])).json();
    expect(byId.remove.map((e: { id: string }) => e.id)).toEqual([rounds[0].id]);
    expect(byId.removed).toBe(1);
    expect(existsSync(path.join(sb.repo, "snapshots", rounds[0].id))).toBe(false);
  });

  it("a Repository kept open across a prune (the watcher's) snapshots correctly afterwards", async () => {
    const repo = await openRepo(sb);
    await repo.loadIndex();
    // Forget all but the newest, then prune under this open repository object's feet.
    (await ok(sb, ["forget", "--keep-last", "1", "--include-special", "--prune", "--max-unused", "0%", "--json"])).json();
    writeFileExact(path.join(sb.sessionsDir, "--proj--", "after-prune.jsonl"), "{}\n".repeat(1000), 0o644);
    const made = await snapshotAgentDir(loadConfig({}, sb.env), repo);
    const state = treeState(sb.agentDir);
    const check = await cli(sb, ["check", "--read-data", "--json"]);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    await expectRestores(sb, [{ id: made.id, state }]);
    rmSync(path.join(sb.sessionsDir, "--proj--", "after-prune.jsonl"));
  });
});

describe("the used-blob walk", () => {
  let sb: Sandbox;
  afterAll(() => sb?.cleanup());

  it("the memoised walk (a tree blob read once per entry state) finds exactly what a full walk of every tree finds", async () => {
    sb = makeSandbox("prune-walk");
    await initRepo(sb);
    const dir = path.join(sb.sessionsDir, "--wide--");
    // Long multi-byte names: lines straddle tree blobs, some inside a multi-byte character.
    const name = (i: number) => path.join(dir, `séance-✓-${"ü".repeat(i % 40)}-${i}.jsonl`);
    for (let i = 0; i < 400; i++) writeFileExact(name(i), `{"n":${i}}\n`.repeat(1 + (i % 7)), 0o644);
    const ids: string[] = [];
    for (let round = 0; round < 4; round++) {
      for (let i = round; i < 400; i += 37) writeFileExact(name(i), `{"round":${round},"i":${i}}\n`.repeat(3), 0o644);
      ids.push((await ok(sb, ["snapshot", "--json"])).json().snapshotId);
    }
    const repo = await openRepo(sb);
    await repo.loadIndex();
    const snapshots = await repo.listSnapshots();
    const { usedBlobs } = await import("../../src/repo/prune-plan.js");
    const { readTree, treeLeaves } = await import("../../src/snapshot/tree.js");
    const { BlobReader } = await import("../../src/repo/blob-reader.js");
    const { SealPool } = await import("../../src/repo/seal-pool.js");
    const naive = new Set<string>();
    for (const s of snapshots) {
      // The tree list blobs (version 2) are used too, and so is every leaf they name.
      const leaves = await treeLeaves(new BlobReader(repo, new SealPool(0)), s.snapshot);
      expect(leaves.length).toBeGreaterThan(3);
      for (const t of [...(s.snapshot.treeList ?? []), ...leaves]) naive.add(t);
      for await (const node of readTree(new BlobReader(repo, new SealPool(0)), s.snapshot)) for (const c of node.content ?? []) naive.add(c);
    }
    expect([...(await usedBlobs(repo, snapshots))].sort()).toEqual([...naive].sort());
    // The same when the tree list cache is emptied before every snapshot's lists are read (each
    // snapshot twice in a row, so that the second time all its lists were read just before).
    expect([...(await usedBlobs(repo, snapshots.flatMap((s) => [s, s]), 1))].sort()).toEqual([...naive].sort());
    expect(ids).toHaveLength(4);
  });
});
