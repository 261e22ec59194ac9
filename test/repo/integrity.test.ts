// Objects are checked against their names and bound to their type; one damaged index file is
// skipped and healed by `pi-guard repair index`; leftovers of interrupted writers can be removed.

import { createHash, randomBytes } from "node:crypto";
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalTarget } from "../../src/targets/local.js";
import { Repository } from "../../src/repo/repository.js";
import { BlobReader } from "../../src/repo/blob-reader.js";
import { SealPool } from "../../src/repo/seal-pool.js";
import { treeLeaves } from "../../src/snapshot/tree.js";
import { acquireLock } from "../../src/repo/lock.js";
import { cli, expectOneLineError, initRepo, ok, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { fingerprint, type FileState, listFiles, makeSandbox, type Sandbox, treeState, writeFileExact, writePiConfigFiles } from "../helpers/tmp.js";

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

function flipBit(file: string, at: number): void {
  const data = readFileSync(file);
  data[at] ^= 0x01;
  writeFileSync(file, data);
}

describe("repository integrity", () => {
  let sb: Sandbox;
  const snaps: SnapshotJson[] = [];
  const states: Map<string, FileState>[] = [];
  /** Index files in the order the snapshots wrote them. */
  const indexFiles: string[] = [];
  /** Pack names each snapshot added. */
  const packsOf: string[][] = [];
  let pristine: string;

  const copyRepo = (name: string): string => {
    const repo = path.join(sb.root, `repo-${name}`);
    cpSync(pristine, repo, { recursive: true });
    return repo;
  };
  const env = (repo: string) => ({ env: { PI_GUARD_REPO: repo } });

  async function expectRestoresExact(repo: string, name: string): Promise<void> {
    for (let i = 0; i < snaps.length; i++) {
      const target = path.join(sb.root, `${name}-${i}`);
      const r = await cli(sb, ["restore", snaps[i].snapshotId, "--target", target, "--json"], env(repo));
      expect(r.code, r.stderr).toBe(0);
      expect(fingerprint(treeState(target))).toEqual(fingerprint(states[i]));
    }
  }

  beforeAll(async () => {
    sb = makeSandbox("integrity");
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);
    for (let i = 0; i < 3; i++) {
      const before = new Set(listFiles(path.join(sb.repo, "index")).map((f) => path.basename(f)));
      const packsBefore = new Set(listFiles(path.join(sb.repo, "data")).map((f) => path.basename(f)));
      writeFileExact(path.join(sb.sessionsDir, "--proj--", `s${i}.jsonl`), randomBytes(200_000).toString("base64"), 0o644);
      snaps.push(await snapshot(sb));
      states.push(treeState(sb.agentDir));
      indexFiles.push(listFiles(path.join(sb.repo, "index")).map((f) => path.basename(f)).find((n) => !before.has(n))!);
      packsOf.push(listFiles(path.join(sb.repo, "data")).map((f) => path.basename(f)).filter((n) => !packsBefore.has(n)));
    }
    pristine = path.join(sb.root, "pristine");
    cpSync(sb.repo, pristine, { recursive: true });
  });
  afterAll(() => sb?.cleanup());

  it("a snapshot object copied over another's name is named by check and never restored as that snapshot", async () => {
    const repo = copyRepo("swapped");
    const [a, b] = [snaps[0].snapshotId, snaps[2].snapshotId];
    copyFileSync(path.join(repo, "snapshots", a), path.join(repo, "snapshots", b));

    const check = await cli(sb, ["check", "--read-data", "--json"], env(repo));
    expect(check.code, check.stderr).toBe(3);
    expect(JSON.stringify(check.json().problems)).toMatch(new RegExp(`snapshot ${b.slice(0, 8)}: content does not match its name`));

    const target = path.join(sb.root, "swapped-restore");
    const r = await cli(sb, ["restore", b, "--target", target], env(repo));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(b.slice(0, 8));
    expect(existsSync(path.join(target, "sessions"))).toBe(false);
  });

  it("a lock object stored under a snapshot name does not unseal as a snapshot (type bound as associated data)", async () => {
    const repo = copyRepo("lock-as-snapshot");
    const keyFile = readFileSync(path.join(sb.configHome, "pi-guard", "key"), "utf8").trim();
    const opened = await Repository.open(new LocalTarget(repo), { kind: "keyfile", secret: Buffer.from(keyFile, "base64"), path: "key" });
    const lock = await acquireLock(opened, { exclusive: false, command: "test" });
    const sealed = readFileSync(path.join(repo, "locks", lock.id));
    await lock.release();
    const fake = sha256(sealed);
    writeFileSync(path.join(repo, "snapshots", fake), sealed);

    const check = await cli(sb, ["check", "--json"], env(repo));
    expect(check.code, check.stderr).toBe(3);
    expect(JSON.stringify(check.json().problems)).toContain(`snapshot ${fake.slice(0, 8)} failed authentication`);
    // Every real snapshot still lists and restores.
    await expectRestoresExact(repo, "lock-as-snapshot");
  });

  it("a frame stored under an index name is refused as an index, and the rest of the index still loads", async () => {
    const repo = copyRepo("frame-as-index");
    const pack = listFiles(path.join(repo, "data")).sort()[0];
    const raw = readFileSync(pack);
    const headerLength = raw.readUInt32LE(raw.length - 4);
    // A whole sealed pack header is a sealed object too: it must not pass as an index either.
    const header = raw.subarray(raw.length - 4 - headerLength, raw.length - 4);
    writeFileSync(path.join(repo, "index", sha256(header)), header);
    const check = await cli(sb, ["check", "--json"], env(repo));
    expect(check.code, check.stderr).toBe(3);
    expect(JSON.stringify(check.json().problems)).toContain(`index ${sha256(header).slice(0, 12)} failed authentication`);
  });

  it("a format 1 repository is refused in one line", async () => {
    const repo = copyRepo("v1");
    const config = JSON.parse(readFileSync(path.join(repo, "config"), "utf8"));
    writeFileSync(path.join(repo, "config"), JSON.stringify({ ...config, version: 1 }));
    const line = expectOneLineError(await cli(sb, ["snapshots"], env(repo)));
    expect(line).toMatch(/repository format 1 is no longer supported; .*pi-guard init/);
  });

  describe("one damaged index file", () => {
    let repo: string;
    beforeAll(() => {
      repo = copyRepo("index");
      const file = path.join(repo, "index", indexFiles[1]);
      flipBit(file, Math.floor(readFileSync(file).length / 2));
    });

    it("restores of every snapshot still give the exact bytes, with a warning naming the index", async () => {
      const target = path.join(sb.root, "index-warn");
      const r = await cli(sb, ["restore", snaps[1].snapshotId, "--target", target], env(repo));
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`index ${indexFiles[1].slice(0, 12)}`);
      expect(r.stderr).toContain("pi-guard repair index");
      await expectRestoresExact(repo, "index");
    });

    it("check exits 3 naming the index and the command that fixes it", async () => {
      const r = await cli(sb, ["check", "--read-data"], env(repo));
      expect(r.code).toBe(3);
      expect(r.stderr).toContain(`index ${indexFiles[1].slice(0, 12)}`);
      expect(r.stderr).toContain("`pi-guard repair index` rebuilds the index");
      expect(r.stdout + r.stderr).not.toMatch(/harmless|prune/);
    });

    it("a snapshot still works and stores nothing it already has", async () => {
      const other = path.join(sb.root, "repo-index-snapshot");
      cpSync(repo, other, { recursive: true });
      const s = (await ok(sb, ["snapshot", "--json"], env(other))).json<SnapshotJson>();
      expect(s.bytesNew).toBe(0);
    });

    it("`pi-guard repair index` rebuilds it: one new index superseding all, then check --read-data is clean", async () => {
      const damaged = readFileSync(path.join(repo, "index", indexFiles[1]));
      const r = await ok(sb, ["repair", "index", "--json"], env(repo));
      const report = r.json();
      expect(report.damagedIndexFiles).toEqual([indexFiles[1]]);
      expect(report.packsFromHeaders.length).toBeGreaterThan(0);
      expect(report.replaced.sort()).toEqual([...indexFiles].sort());
      expect(readdirSync(path.join(repo, "index"))).toEqual([report.newIndex]);
      const check = await cli(sb, ["check", "--read-data"], env(repo));
      expect(check.code, check.stderr).toBe(0);
      expect(check.stderr).toBe("");
      await expectRestoresExact(repo, "repaired");

      // A crash after the new index was written but before the old ones were deleted: the damaged
      // file is superseded, so it is ignored without a word.
      writeFileSync(path.join(repo, "index", indexFiles[1]), damaged);
      const after = await cli(sb, ["check"], env(repo));
      expect(after.code, after.stderr).toBe(0);
      expect(after.stderr).toBe("");

      // repair index finishes that job.
      const finish = await ok(sb, ["repair", "index"], env(repo));
      expect(finish.stdout).toMatch(/deleted 1 index file\(s\) that another index already replaces/);
      expect(readdirSync(path.join(repo, "index"))).toEqual([report.newIndex]);
      const again = await ok(sb, ["repair", "index"], env(repo));
      expect(again.stdout).toMatch(/the index is sound \(1 index files, \d+ packs\); nothing to rebuild/);
    });
  });

  it("a damaged file list in the newest snapshot does not stop the next snapshot", async () => {
    const repo = copyRepo("parent-tree");
    // The smaller of the last snapshot's two packs holds its tree blobs (the other its 200 kB of data).
    const treePack = listFiles(path.join(repo, "data")).filter((f) => packsOf[2].includes(path.basename(f))).sort((x, y) => readFileSync(x).length - readFileSync(y).length)[0];
    // The tree blobs in the pack's first frame (where the bit flips): usually one, but the file
    // list is cut by content (mtimes included), so sometimes two.
    const keyFile = readFileSync(path.join(sb.configHome, "pi-guard", "key"), "utf8").trim();
    const opened = await Repository.open(new LocalTarget(repo), { kind: "keyfile", secret: Buffer.from(keyFile, "base64"), path: "key" });
    await opened.loadIndex();
    // Every tree blob: the leaves and, in version 2, the list blobs that name them.
    const treeIds = async (id: string) => {
      const s = await opened.loadSnapshot(id);
      return [...(s.treeList ?? []), ...(await treeLeaves(new BlobReader(opened, new SealPool(0)), s))];
    };
    const before = await treeIds(snaps[2].snapshotId);
    const damagedBlobs = before.filter((id) => {
      const loc = opened.index.get(id)!;
      return loc.pack === path.basename(treePack) && loc.offset === 0;
    }).length;
    expect(damagedBlobs).toBeGreaterThanOrEqual(1);
    flipBit(treePack, 20);
    const damagedIds = new Set(before.filter((id) => opened.index.get(id)!.pack === path.basename(treePack)));
    // Nothing changed, but the parent cannot be read: every file is read in full, and its node records
    // when (fullReadMs), so the new file list is not the damaged one: it is written anew and reuses
    // none of the damaged tree blobs (commit refuses a list that would: "would reuse … damaged").
    const same = await cli(sb, ["snapshot", "--json"], env(repo));
    expect(same.code, same.stderr).toBe(0);
    expect(same.stderr).toContain(`parent snapshot ${snaps[2].snapshotId.slice(0, 8)} is unreadable`);
    const fresh = await Repository.open(new LocalTarget(repo), { kind: "keyfile", secret: Buffer.from(keyFile, "base64"), path: "key" });
    await fresh.loadIndex();
    const after = await fresh.loadSnapshot(same.json<SnapshotJson>().snapshotId);
    expect([...(after.treeList ?? []), ...(await treeLeaves(new BlobReader(fresh, new SealPool(0)), after))].filter((id) => damagedIds.has(id))).toEqual([]);
    // Something changed: the snapshot is made and restores exactly.
    writeFileExact(path.join(sb.agentDir, "extensions", "x.json"), "{}", 0o644);
    const r = await cli(sb, ["snapshot", "--json"], env(repo));
    const expected = treeState(sb.agentDir);
    rmSync(path.join(sb.agentDir, "extensions"), { recursive: true });
    expect(r.code, r.stderr).toBe(0);
    const target = path.join(sb.root, "parent-tree-restore");
    const restored = await cli(sb, ["restore", r.json<SnapshotJson>().snapshotId, "--target", target], env(repo));
    expect(restored.code, restored.stderr).toBe(0);
    expect(fingerprint(treeState(target))).toEqual(fingerprint(expected));
  });

  describe("leftovers of an interrupted snapshot", () => {
    let repo: string;
    const garbage = "ab" + "0".repeat(62);
    beforeAll(() => {
      repo = copyRepo("leftovers");
      // The last snapshot as if killed after its packs were stored but before its index and snapshot object.
      unlinkSync(path.join(repo, "index", indexFiles[2]));
      unlinkSync(path.join(repo, "snapshots", snaps[2].snapshotId));
      mkdirSync(path.join(repo, "data", "ab"), { recursive: true });
      writeFileSync(path.join(repo, "data", "ab", garbage), randomBytes(3000));
      writeFileSync(path.join(repo, "data", "ab", `${garbage}.tmp-0123456789ab`), randomBytes(100));
      writeFileSync(path.join(repo, "index", `${"cd".repeat(32)}.tmp-0123456789ab`), randomBytes(100));
    });

    it("check names them and only commands that exist", async () => {
      const r = await cli(sb, ["check"], env(repo));
      expect(r.stdout + r.stderr).toContain("`pi-guard repair index`");
      expect(r.stdout + r.stderr).toContain("`pi-guard prune`");
    });

    it("`pi-guard repair index` indexes intact leftover packs, deletes unreadable ones and temp files", async () => {
      const report = (await ok(sb, ["repair", "index", "--json"], env(repo))).json();
      expect(packsOf[2].length).toBeGreaterThan(0);
      expect(report.packsFromHeaders.sort()).toEqual([...packsOf[2]].sort());
      expect(report.deletedPacks.map((p: { key: string }) => p.key)).toEqual([`data/ab/${garbage}`]);
      expect(report.tempFilesDeleted).toBe(2);
      expect(listFiles(repo).filter((f) => f.includes(".tmp-") || f.includes(garbage))).toEqual([]);
      const check = await cli(sb, ["check", "--read-data"], env(repo));
      expect(check.code, check.stderr).toBe(0);
      expect(check.stdout + check.stderr).not.toMatch(/warning/);
      // The re-indexed data is used again: snapshotting the same files adds no data, only a new
      // file list (its nodes record when each file was last read in full, now).
      const before = new Set(listFiles(path.join(repo, "data")));
      const s = (await ok(sb, ["snapshot", "--json"], env(repo))).json<SnapshotJson>();
      expect(s.bytesNew).toBeLessThan(16 * 1024);
      const added = listFiles(path.join(repo, "data")).filter((f) => !before.has(f));
      expect(added.length).toBeLessThanOrEqual(1);
    });

    it("temp files whose writer cannot be known dead outlive a snapshot (append lock) and go with prune (exclusive)", async () => {
      const other = copyRepo("leftover-tmp");
      const tmp = path.join(other, "snapshots", `${"ef".repeat(32)}.tmp-0123456789ab`);
      writeFileSync(tmp, randomBytes(100));
      mkdirSync(path.join(other, "tmp"), { recursive: true });
      writeFileSync(path.join(other, "tmp", "otherhost-1-abcdef.pack"), randomBytes(100));
      await snapshot(sb, [], env(other));
      expect(existsSync(tmp)).toBe(true);
      expect(readdirSync(path.join(other, "tmp"))).toEqual(["otherhost-1-abcdef.pack"]);
      await ok(sb, ["prune"], env(other));
      expect(existsSync(tmp)).toBe(false);
      expect(readdirSync(path.join(other, "tmp"))).toEqual([]);
    });
  });
});
