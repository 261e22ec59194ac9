// `repair --from A --to B` through the built CLI, on real damage to real files: a pack deleted,
// a bit flipped in another, an index file deleted and a snapshot object damaged on the mirror.
// `check` names each, repair heals them from the primary, and afterwards `check --read-data`
// passes and every snapshot restores byte-identical from the mirror. When the primary lacks a
// blob too, repair says exactly what it could not heal, exits 3 and deletes nothing good.

import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli, ok } from "../helpers/cli.js";
import { copyFixtures, fingerprint, makeSandbox, treeState, type Sandbox } from "../helpers/tmp.js";
import { writeConfig } from "./mirror-helpers.js";

const sandboxes: Sandbox[] = [];
afterEach(() => {
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

/** Object files under `dir`, oldest first. */
function objects(dir: string): string[] {
  let files: string[] = [];
  try {
    files = readdirSync(dir, { recursive: true }).map(String).filter((f) => /[0-9a-f]{64}$/.test(f)).map((f) => path.join(dir, f));
  } catch {
    return [];
  }
  return files.sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs);
}
const dataPacks = (repo: string) => objects(path.join(repo, "data")).filter((f) => statSync(f).size > 400_000);
const idOf = (file: string) => path.basename(file);

function flipBit(file: string, at?: number): void {
  const buf = readFileSync(file);
  const i = at ?? Math.floor(buf.length / 3);
  buf[i] ^= 0x10;
  writeFileSync(file, buf);
}

/** A primary with three snapshots, each shipped to the mirror as it was made (so each has its own packs there). */
async function primaryAndMirror(label: string): Promise<{ sb: Sandbox; mirror: string; snaps: string[] }> {
  const sb = makeSandbox(label);
  sandboxes.push(sb);
  copyFixtures(sb.agentDir);
  const mirror = path.join(sb.root, "mirror");
  writeConfig(sb, { mirrors: [mirror] });
  await ok(sb, ["init"]);
  const snaps: string[] = [];
  for (let i = 1; i <= 3; i++) {
    // f2 spans several frames of its pack, so damage to one frame leaves the others salvageable.
    writeFileSync(path.join(sb.agentDir, `f${i}.bin`), randomBytes(i === 2 ? 3_000_000 : 600_000));
    const s = (await ok(sb, ["snapshot", "--json"])).json();
    expect(s.mirrors[0].ok).toBe(true);
    snaps.push(s.snapshotId);
  }
  return { sb, mirror, snaps };
}

async function restoresAlike(sb: Sandbox, mirror: string, ids: string[]): Promise<void> {
  for (const id of ids) {
    const a = sb.dir(`from-primary-${id.slice(0, 8)}`);
    const b = sb.dir(`from-mirror-${id.slice(0, 8)}`);
    await ok(sb, ["restore", id, "--target", a]);
    await ok(sb, ["restore", id, "--target", b, "--repo", mirror]);
    expect(fingerprint(treeState(b))).toEqual(fingerprint(treeState(a)));
  }
}

describe("repair --from A --to B", () => {
  it("heals a deleted pack, a flipped bit, a deleted index file and a damaged snapshot object", { timeout: 120_000 }, async () => {
    const { sb, mirror, snaps } = await primaryAndMirror("repair-heal");
    const packs = dataPacks(mirror);
    expect(packs).toHaveLength(3);
    const [gone, flipped] = [packs[0], packs[1]];
    rmSync(gone);
    flipBit(flipped);
    const indexFiles = objects(path.join(mirror, "index"));
    expect(indexFiles).toHaveLength(3);
    rmSync(indexFiles[2]);
    const snapFile = path.join(mirror, "snapshots", snaps[0]);
    flipBit(snapFile, 20);

    const check = await cli(sb, ["check", "--read-data", "--json", "--repo", mirror]);
    expect(check.code).toBe(3);
    const problems = check.json().problems.map((p: { message: string }) => p.message).join("\n");
    expect(problems).toContain(`pack ${idOf(gone).slice(0, 12)} is in the index but missing`);
    expect(problems).toContain(`pack ${idOf(flipped).slice(0, 12)}: content does not match its name`);
    expect(problems).toContain(`snapshot ${snaps[0].slice(0, 8)}: content does not match its name`);
    // The deleted index file: the newest snapshot's data is no longer indexed.
    expect(problems).toMatch(new RegExp(`snapshot ${snaps[2].slice(0, 8)}: .*missing`));

    const dry = await cli(sb, ["repair", "--from", sb.repo, "--to", mirror, "--dry-run", "--json"]);
    expect(dry.code).toBe(3);
    expect(dry.json()).toMatchObject({ dryRun: true, sound: false, newIndex: null });
    expect(objects(path.join(mirror, "index"))).toHaveLength(2);

    const r = (await ok(sb, ["repair", "--from", sb.repo, "--to", mirror, "--json"])).json();
    expect(r.packs.missing).toEqual([idOf(gone)]);
    expect(r.packs.damaged).toEqual([idOf(flipped)]);
    expect(r.snapshots.damaged).toEqual([snaps[0]]);
    expect(r.snapshots.replaced).toEqual([snaps[0]]);
    expect(r.unhealed).toEqual({ blobs: [], snapshots: [] });
    expect(r.blobs.copied).toBeGreaterThan(0);
    // The flipped pack's other frames still verify: their blobs come from the mirror itself.
    expect(r.blobs.salvaged).toBeGreaterThan(0);
    expect(r.deleted.packs).toEqual([idOf(flipped)]);
    // The two old files left, and the one that named the new packs before the final index replaced it.
    for (const f of indexFiles.slice(0, 2)) expect(r.deleted.indexFiles).toContain(idOf(f));
    expect(r.deleted.indexFiles).toHaveLength(3);
    expect(objects(path.join(mirror, "index")).map(idOf)).toEqual([r.newIndex]);

    const after = (await ok(sb, ["check", "--read-data", "--json", "--repo", mirror])).json();
    expect(after.ok).toBe(true);
    expect(after.problems).toEqual([]);
    await restoresAlike(sb, mirror, snaps);
    // Healed: a second repair finds nothing.
    const again = await ok(sb, ["repair", "--from", sb.repo, "--to", mirror]);
    expect(again.stdout).toContain("nothing to repair");
  });

  it("what the source lacks too is named exactly, exit 3, and nothing good is deleted", { timeout: 120_000 }, async () => {
    const { sb, mirror, snaps } = await primaryAndMirror("repair-lost");
    const packs = dataPacks(mirror);
    const primaryPacks = dataPacks(sb.repo);
    expect(primaryPacks).toHaveLength(3);
    rmSync(packs[1]); // f2's data, gone from the mirror...
    rmSync(primaryPacks[1]); // ...and from the primary
    flipBit(packs[2]); // f3's data, damaged on the mirror...
    flipBit(primaryPacks[2]); // ...and on the primary
    flipBit(path.join(mirror, "snapshots", snaps[0]), 20); // healable: the primary's copy is sound
    const goodBefore = objects(path.join(mirror, "data")).filter((f) => f !== packs[1] && f !== packs[2]).map(idOf);

    const r = await cli(sb, ["repair", "--from", sb.repo, "--to", mirror, "--json"]);
    expect(r.code).toBe(3);
    const report = r.json();
    expect(report.packs).toMatchObject({ missing: [idOf(packs[1])], damaged: [idOf(packs[2])] });
    expect(report.snapshots.replaced).toEqual([snaps[0]]);
    expect(report.unhealed.blobs.length).toBeGreaterThan(0);
    expect(report.unhealed.snapshots).toEqual([]);
    expect(r.stderr).toContain(`${report.unhealed.blobs.length} object(s) could not be healed`);
    for (const id of report.unhealed.blobs) expect(r.stderr).toContain(`cannot heal blob ${id.slice(0, 12)}`);
    // The damaged pack still holds what nothing else has: kept, like every good pack.
    expect(report.deleted.packs).toEqual([]);
    const now = objects(path.join(mirror, "data")).map(idOf);
    for (const id of [...goodBefore, idOf(packs[2])]) expect(now).toContain(id);
    // The first snapshot uses neither file and restores from the mirror; the others name exactly the lost files.
    await restoresAlike(sb, mirror, [snaps[0]]);
    const check = await cli(sb, ["check", "--read-data", "--json", "--repo", mirror]);
    expect(check.code).toBe(3);
    const damaged = check.json().damagedFiles.map((f: { snapshot: string; path: string }) => `${f.snapshot.slice(0, 8)} ${f.path}`);
    expect(damaged.sort()).toEqual([`${snaps[1].slice(0, 8)} f2.bin`, `${snaps[2].slice(0, 8)} f2.bin`, `${snaps[2].slice(0, 8)} f3.bin`].sort());
  });
});
