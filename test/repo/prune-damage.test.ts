// Prune never silently drops data that snapshots use. Missing or damaged used blobs, or a snapshot
// whose file list cannot be read, make it refuse (exit 3, one line naming them and `check`) and
// change nothing. --allow-damaged goes on, keeping damaged packs whole: afterwards nothing that was
// readable before is lost, and the exit code still says the repository is damaged.

import { openSync, readFileSync, writeSync, closeSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BlobType, packKey, snapshotKey, type PackEntry } from "../../src/repo/format.js";
import { planPrune } from "../../src/repo/prune-plan.js";
import { cli, expectOneLineError, initRepo, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { expectRestores, makeHistory, openRepo, repoListing, type Round } from "./prune-fixture.js";

describe("prune and damage", () => {
  let sb: Sandbox | undefined;
  afterEach(() => sb?.cleanup());

  async function world(): Promise<{ sb: Sandbox; kept: Round[] }> {
    sb = makeSandbox("prune-damage");
    await initRepo(sb);
    const rounds = await makeHistory(sb, 4);
    await ok(sb, ["forget", "--keep-last", "2"]);
    return { sb, kept: rounds.slice(-2) };
  }

  it("a used pack that is gone: refuses and changes nothing; --allow-damaged prunes the rest, exit 3", async () => {
    const { sb } = await world();
    const repo = await openRepo(sb);
    await repo.loadIndex();
    const plan = await planPrune(repo, await repo.listSnapshots());
    // A data pack: losing a tree pack makes a snapshot unreadable, the next test's case.
    const isData = (e: PackEntry) => e.blobs[0]?.type === BlobType.Data;
    const victim = plan.keep.find(isData) ?? plan.repack.find((p) => isData(p.entry))!;
    rmSync(path.join(sb.repo, packKey(victim.id)));
    const before = repoListing(sb.repo);
    const line = expectOneLineError(await cli(sb, ["prune"]), 3);
    expect(line).toMatch(/blob\(s\) that snapshots use are missing .*pi-guard check --read-data/);
    expect(repoListing(sb.repo)).toEqual(before);

    const r = await cli(sb, ["prune", "--allow-damaged", "--json"]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.json().blobs.missing.length).toBeGreaterThan(0);
    expect(r.json().packs.deleted).toBeGreaterThan(0);
    // Nothing new is wrong: check names only what was already missing.
    const check = (await cli(sb, ["check", "--json"])).json();
    expect(check.problems.length).toBeGreaterThan(0);
    expect(check.problems.every((p: { message: string }) => /missing/.test(p.message))).toBe(true);
  });

  it("a damaged blob in a pack being repacked: refuses, nothing deleted, no new pack left; --allow-damaged keeps that pack whole", async () => {
    const { sb } = await world();
    const repo = await openRepo(sb);
    await repo.loadIndex();
    const plan = await planPrune(repo, await repo.listSnapshots());
    const victim = plan.repack.find((p) => p.used.length > 0 && p.type === BlobType.Data)!;
    expect(victim, "the fixture makes a pack to repack").toBeDefined();
    const blob = victim.used[0];
    const file = path.join(sb.repo, packKey(victim.id));
    const fd = openSync(file, "r+");
    const at = blob.offset + Math.floor(blob.length / 2);
    writeSync(fd, Buffer.from([readFileSync(file)[at] ^ 0x40]), 0, 1, at);
    closeSync(fd);
    const before = repoListing(sb.repo);
    const line = expectOneLineError(await cli(sb, ["prune"]), 3);
    expect(line).toContain(blob.id.slice(0, 12));
    expect(line).toMatch(/damaged.*pi-guard check --read-data/);
    expect(repoListing(sb.repo)).toEqual(before);

    const r = await cli(sb, ["prune", "--allow-damaged", "--json"]);
    expect(r.code, r.stderr).toBe(3);
    const report = r.json();
    expect(report.blobs.damaged).toContain(blob.id);
    expect(report.packs.damagedKept).toEqual([]);
    // The damaged pack is still there, still indexed: check names the same damage, nothing more.
    expect(repoListing(sb.repo)[packKey(victim.id)]).toBeDefined();
    const check = await cli(sb, ["check", "--read-data", "--json"]);
    expect(check.code).toBe(3);
    for (const p of check.json().problems) expect(p.message).toMatch(new RegExp(`${victim.id.slice(0, 12)}|${blob.id.slice(0, 12)}|damaged|restore`));
  });

  it("a snapshot that cannot be read: prune refuses whatever the flags; forgetting it by id lets prune run", async () => {
    const { sb, kept } = await world();
    const bad = kept[0].id;
    writeFileSync(path.join(sb.repo, snapshotKey(bad)), "garbage");
    const before = repoListing(sb.repo);
    for (const args of [["prune"], ["prune", "--allow-damaged"]]) {
      const line = expectOneLineError(await cli(sb, args), 3);
      expect(line).toContain(`snapshot ${bad.slice(0, 8)} cannot be read`);
      expect(line).toContain(`pi-guard forget ${bad.slice(0, 8)}`);
    }
    expect(repoListing(sb.repo)).toEqual(before);
    await ok(sb, ["forget", bad.slice(0, 8)]);
    await ok(sb, ["prune"]);
    const check = await cli(sb, ["check", "--read-data", "--json"]);
    expect(check.code, check.stdout).toBe(0);
    await expectRestores(sb, kept.slice(1));
  });
});
