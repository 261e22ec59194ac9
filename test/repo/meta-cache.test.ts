// Issue 9, metadata that scales: the local metadata cache is verified and rebuildable, a reused
// Repository follows deletions by other processes, and index consolidation stays correct when two
// writers consolidate at once or one is killed in the middle.

import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readKeyFile } from "../../src/config/credentials.js";
import { BlobWriter } from "../../src/repo/blob-writer.js";
import { BlobType } from "../../src/repo/format.js";
import { CONSOLIDATE_FANOUT } from "../../src/repo/index-files.js";
import { Repository } from "../../src/repo/repository.js";
import { SealPool } from "../../src/repo/seal-pool.js";
import { createSnapshot } from "../../src/snapshot/snapshotter.js";
import { LocalTarget } from "../../src/targets/local.js";
import { cli, collect, initRepo, ok, PROJECT_ROOT, snapshot, spawnCli } from "../helpers/cli.js";
import { makeSandbox, treeState, writeFileExact, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
beforeEach(async () => {
  sb = makeSandbox("meta");
  writePiConfigFiles(sb.agentDir);
  writeFileExact(path.join(sb.sessionsDir, "--p--", "s1.jsonl"), "first line\n", 0o644);
  await initRepo(sb);
});
afterEach(() => sb.cleanup());

const keyOf = async () => (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!;
/** A Repository as the CLI opens it: with the metadata cache in the sandbox's data dir. */
async function openCached(warnings: string[] = []): Promise<Repository> {
  const repo = await Repository.open(new LocalTarget(sb.repo), await keyOf(), { dataDir: path.join(sb.dataHome, "pi-guard") });
  repo.onWarning = (m) => warnings.push(m);
  return repo;
}
const cacheDirOf = (repo: Repository) => repo.cache!.dir;
const indexFiles = () => readdirSync(path.join(sb.repo, "index"));
const roots = () => [{ name: "agent", path: sb.agentDir }];

/** Snapshots as read from the repository itself, bypassing any cache. */
async function truth(): Promise<{ snapshots: string; blobs: string[] }> {
  const repo = await Repository.open(new LocalTarget(sb.repo), await keyOf());
  const index = await repo.loadIndex({ fromTarget: true });
  return { snapshots: JSON.stringify(await repo.listSnapshots({ fromTarget: true })), blobs: [...index.entries()].map(([id]) => id).sort() };
}
const blobsOf = (repo: Repository) => [...repo.index.entries()].map(([id]) => id).sort();

/** `count` index files of one tiny pack each, written as separate snapshots would (no consolidation). */
async function writeSmallIndexFiles(repo: Repository, count: number, tag: string): Promise<void> {
  await repo.loadIndex();
  const pool = new SealPool(0);
  try {
    for (let i = 0; i < count; i++) {
      const writer = new BlobWriter(repo, pool);
      const data = Buffer.from(`blob ${tag} ${i}`);
      await writer.add(BlobType.Data, data, [0, data.length], [repo.blobId(data)]);
      await writer.finish();
    }
  } finally {
    await pool.close();
  }
}

async function expectCheckClean(): Promise<void> {
  const check = await cli(sb, ["check", "--read-data", "--json"]);
  expect(check.code, check.stdout + check.stderr).toBe(0);
  expect(check.json<{ problems: { severity: string }[] }>().problems.filter((p) => p.severity === "error")).toEqual([]);
}

async function expectEverySnapshotRestores(expected: Map<string, Map<string, unknown>>): Promise<void> {
  for (const [id, state] of expected) {
    const dest = sb.dir(`restore-${id.slice(0, 8)}`);
    await ok(sb, ["restore", id, "--target", dest, "--json"]);
    expect(treeState(dest)).toEqual(state);
  }
}

describe("metadata cache", () => {
  it("a tampered cache entry is detected and refetched from the repository, with one warning", async () => {
    await snapshot(sb);
    appendFileSync(path.join(sb.sessionsDir, "--p--", "s1.jsonl"), "second line\n");
    await snapshot(sb);
    const want = await truth();
    const first = await openCached();
    await first.loadIndex();
    await first.listSnapshots();
    const dir = cacheDirOf(first);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const kind of ["index", "snapshots"]) {
      const file = path.join(dir, `${kind}.log`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const raw = readFileSync(file);
      // Flip one byte inside every record body: structure intact, content altered.
      for (let at = 60; at < raw.length - 40; at += 97) raw[at] ^= 0x20;
      writeFileSync(file, raw);
    }
    const warnings: string[] = [];
    const second = await openCached(warnings);
    await second.loadIndex();
    expect(blobsOf(second)).toEqual(want.blobs);
    expect(JSON.stringify(await second.listSnapshots())).toBe(want.snapshots);
    expect(warnings.length).toBe(1);
    expect(warnings[0]).toMatch(/metadata cache .* damaged/);
    // The damaged part was replaced: the next process trusts the cache again, silently.
    const third = await openCached(warnings);
    await third.loadIndex();
    expect(JSON.stringify(await third.listSnapshots())).toBe(want.snapshots);
    expect(warnings.length).toBe(1);
  });

  it("a cache entry swapped for another object's is refused (the HMAC binds name and content)", async () => {
    await snapshot(sb);
    appendFileSync(path.join(sb.sessionsDir, "--p--", "s1.jsonl"), "second line\n");
    await snapshot(sb);
    const want = await truth();
    const first = await openCached();
    await first.listSnapshots();
    const file = path.join(cacheDirOf(first), "snapshots.log");
    const raw = readFileSync(file);
    // Exchange the two 32-byte names of the first batch's records.
    const a = raw.indexOf(Buffer.from(JSON.parse(want.snapshots)[0].id, "hex"));
    const b = raw.indexOf(Buffer.from(JSON.parse(want.snapshots)[1].id, "hex"));
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);
    const nameA = Buffer.from(raw.subarray(a, a + 32));
    raw.copy(raw, a, b, b + 32);
    nameA.copy(raw, b);
    writeFileSync(file, raw);
    const warnings: string[] = [];
    const second = await openCached(warnings);
    expect(JSON.stringify(await second.listSnapshots())).toBe(want.snapshots);
    expect(warnings.length).toBe(1);
  });

  it("a deleted cache is rebuilt silently, and a garbage one with one warning; the CLI works throughout", async () => {
    const s1 = await snapshot(sb);
    const first = await openCached();
    await first.listSnapshots();
    const dir = cacheDirOf(first);
    expect(existsSync(path.join(dir, "snapshots.log"))).toBe(true);

    rmSync(path.join(sb.dataHome, "pi-guard", "cache"), { recursive: true });
    const warnings: string[] = [];
    const second = await openCached(warnings);
    expect((await second.listSnapshots()).map((r) => r.id)).toEqual([s1.snapshotId]);
    await second.loadIndex();
    expect(warnings).toEqual([]);
    expect(existsSync(path.join(dir, "snapshots.log"))).toBe(true);

    for (const kind of ["index", "snapshots", "heads"]) writeFileSync(path.join(dir, `${kind}.log`), Buffer.from("garbage, not a cache file at all"));
    const third = await openCached(warnings);
    expect((await third.listSnapshots()).map((r) => r.id)).toEqual([s1.snapshotId]);
    expect(blobsOf(await third.loadIndex().then(() => third))).toEqual((await truth()).blobs);
    expect(warnings.length).toBe(1);

    // Through the CLI, with the cache garbage again: a snapshot still finds its parent and works.
    for (const kind of ["index", "snapshots", "heads"]) writeFileSync(path.join(dir, `${kind}.log`), Buffer.from("more garbage"));
    appendFileSync(path.join(sb.sessionsDir, "--p--", "s1.jsonl"), "appended\n");
    const s2 = await snapshot(sb);
    expect(s2.parent).toBe(s1.snapshotId);
    const list = (await ok(sb, ["snapshots", "--json"])).json<{ id: string }[]>();
    expect(list.map((s) => s.id)).toEqual([s1.snapshotId, s2.snapshotId]);
  });

  it("briefs: a tampered, garbage, malformed or lying brief is not trusted; restore <time> still chooses what the repository holds", async () => {
    const s1 = await snapshot(sb);
    appendFileSync(path.join(sb.sessionsDir, "--p--", "s1.jsonl"), "second line\n");
    const s2 = await snapshot(sb);
    const want = (JSON.parse((await truth()).snapshots) as { id: string; snapshot: { time: string } }[]).map((r) => [r.id, r.snapshot.time]);
    expect(want.map(([id]) => id)).toEqual([s1.snapshotId, s2.snapshotId]);
    const briefsOf = async (repo: Repository) => (await repo.listSnapshotBriefs()).map((r) => [r.id, r.snapshot.time]);
    const first = await openCached();
    expect(await briefsOf(first)).toEqual(want);
    const file = path.join(cacheDirOf(first), "briefs.log");
    expect(statSync(file).mode & 0o777).toBe(0o600);

    // Altered bytes: the HMAC fails, the briefs are rebuilt from the snapshots, one warning.
    const raw = readFileSync(file);
    const at = raw.indexOf(Buffer.from(want[1][1]));
    expect(at).toBeGreaterThan(0);
    raw[at + 3] ^= 0x01; // another year
    writeFileSync(file, raw);
    const warnings: string[] = [];
    expect(await briefsOf(await openCached(warnings))).toEqual(want);
    expect(warnings.length).toBe(1);
    expect(await briefsOf(await openCached(warnings))).toEqual(want);
    expect(warnings.length).toBe(1);

    // Garbage: the same.
    writeFileSync(file, Buffer.from("garbage, not a cache file at all"));
    const w2: string[] = [];
    expect(await briefsOf(await openCached(w2))).toEqual(want);
    expect(w2.length).toBe(1);

    // Authentic but malformed (a broken writer): not used, rebuilt.
    const writer = await openCached();
    await writer.cache!.put("briefs", [[s2.snapshotId, Buffer.from(JSON.stringify({ time: 5, host: "h", tags: [] }))]]);
    expect(await briefsOf(await openCached())).toEqual(want);
    // Written by an earlier build, without the sizes the snapshots table shows: rebuilt with them.
    await writer.cache!.put("briefs", [[s2.snapshotId, Buffer.from(JSON.stringify({ time: want[1][1], host: "h", tags: [] }))]]);
    const rebuilt = (await (await openCached()).listSnapshotBriefs()).find((r) => r.id === s2.snapshotId)!;
    expect(rebuilt.snapshot).toMatchObject({ files: s2.files, bytesTotal: expect.any(Number), bytesStored: expect.any(Number) });

    // Authentic but lying: s1 claims to be the newest. The chosen snapshot is read in full from the
    // repository, its time disagrees with its brief, and the choice is made again from the snapshots.
    await writer.cache!.put("briefs", [[s1.snapshotId, Buffer.from(JSON.stringify({ time: "2999-01-01T00:00:00.000Z", host: "h", tags: [], files: 1, bytesTotal: 1, bytesStored: 1 }))]]);
    // The file now holds s1 twice: the later record counts, and s1 is listed once.
    expect(await briefsOf(await openCached())).toEqual([want[1], [s1.snapshotId, "2999-01-01T00:00:00.000Z"]]);
    const { chooseSnapshot } = await import("../../src/engine.js");
    expect((await chooseSnapshot(await openCached(), "latest")).id).toBe(s2.snapshotId);
    const restored = (await ok(sb, ["restore", "latest", "--target", sb.dir("r-latest"), "--json"])).json<{ snapshotId: string }>();
    expect(restored.snapshotId).toBe(s2.snapshotId);

    // A snapshot deleted from the repository (forget) is not chosen, though its brief is cached.
    rmSync(path.join(sb.repo, "snapshots", s2.snapshotId));
    expect(readFileSync(file).includes(Buffer.from(s2.snapshotId, "hex"))).toBe(true);
    expect((await briefsOf(await openCached())).map(([id]) => id)).toEqual([s1.snapshotId]);
    // and its brief is dropped from the file.
    expect(readFileSync(file).includes(Buffer.from(s2.snapshotId, "hex"))).toBe(false);
    const r1 = (await ok(sb, ["restore", "latest", "--target", sb.dir("r-after"), "--json"])).json<{ snapshotId: string }>();
    expect(r1.snapshotId).toBe(s1.snapshotId);
  });

  it("a snapshot finds its parent from the cache, and skips a parent that was deleted since", async () => {
    const s1 = await snapshot(sb);
    appendFileSync(path.join(sb.sessionsDir, "--p--", "s1.jsonl"), "two\n");
    const s2 = await snapshot(sb);
    expect(s2.parent).toBe(s1.snapshotId);
    // Another process forgets s2 (its object is deleted): the next parent must not be s2.
    rmSync(path.join(sb.repo, "snapshots", s2.snapshotId));
    appendFileSync(path.join(sb.sessionsDir, "--p--", "s1.jsonl"), "three\n");
    const s3 = await snapshot(sb);
    expect(s3.parent).toBe(s1.snapshotId);
    const dest = sb.dir("r3");
    await ok(sb, ["restore", s3.snapshotId, "--target", dest]);
    expect(readFileSync(path.join(dest, "sessions", "--p--", "s1.jsonl"), "utf8")).toBe("first line\ntwo\nthree\n");
  });
});

describe("a reused Repository follows deletions by other processes", () => {
  it("after another process prunes a pack, it rebuilds and stores that data again rather than dedup against a deleted blob", async () => {
    const watcher = await openCached();
    const opts = { roots: roots(), filter: { include: [], exclude: [] } };
    await createSnapshot(watcher, opts);
    const packs = () => new Set(readdirSync(path.join(sb.repo, "data"), { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => d.name));
    const before = packs();
    // s1 adds one file, so its new data pack holds only that file's bytes; s2 no longer has it.
    const extra = path.join(sb.sessionsDir, "--q--", "only-in-s1.jsonl");
    const content = "a session that is forgotten and pruned\n".repeat(50);
    writeFileExact(extra, content, 0o644);
    const s1 = await createSnapshot(watcher, opts);
    const dataPack = [...packs()].filter((p) => !before.has(p)).find((p) => [...watcher.index.entries()].some(([, loc]) => loc.pack === p && loc.type === BlobType.Data))!;
    expect(dataPack).toBeDefined();
    const lost = [...watcher.index.entries()].filter(([, loc]) => loc.pack === dataPack).map(([id]) => id);
    rmSync(extra);
    await createSnapshot(watcher, opts);
    // Another process forgets s1 and prunes its data: the snapshot, the pack, and (repair) its index entry.
    rmSync(path.join(sb.repo, "snapshots", s1.id));
    rmSync(findPack(dataPack));
    await ok(sb, ["repair", "index", "--json"]);
    await watcher.refreshIndex();
    for (const blob of lost) expect(watcher.index.has(blob), `blob ${blob.slice(0, 8)} of a deleted pack`).toBe(false);
    // The file comes back: the same watcher must store its bytes again.
    writeFileExact(extra, content, 0o644);
    const s3 = await createSnapshot(watcher, opts);
    for (const blob of lost) expect(watcher.index.has(blob)).toBe(true);
    const dest = sb.dir("after-prune");
    await ok(sb, ["restore", s3.id, "--target", dest]);
    expect(treeState(dest)).toEqual(treeState(sb.agentDir));
    await expectCheckClean();
  });

  it("after other processes consolidate the index, it sees every blob without a rebuild and never reads a vanished file as damage", async () => {
    const watcher = await openCached();
    const warnings: string[] = [];
    watcher.onWarning = (m) => warnings.push(m);
    await writeSmallIndexFiles(watcher, 3, "watcher");
    await watcher.refreshIndex();
    const other = await openCached();
    await writeSmallIndexFiles(other, CONSOLIDATE_FANOUT, "other");
    const before = indexFiles().length;
    const done = await other.consolidateIndex();
    expect(done.written).toBeDefined();
    expect(indexFiles().length).toBeLessThan(before);
    const indexBefore = watcher.index;
    await watcher.refreshIndex();
    expect(watcher.index).toBe(indexBefore); // extended, not rebuilt: consolidation deleted nothing
    expect(blobsOf(watcher)).toEqual((await truth()).blobs);
    expect(warnings).toEqual([]);
  });
});

describe("a long-lived Repository (as the watcher keeps one)", () => {
  it("snapshots again and again through one Repository: each takes the previous as parent, index/ stays small, all restore", async () => {
    const repo = await openCached();
    const opts = { roots: roots(), filter: { include: [], exclude: [] } };
    const file = path.join(sb.sessionsDir, "--p--", "s1.jsonl");
    const expected = new Map<string, Map<string, unknown>>();
    let previous: string | undefined;
    for (let i = 0; i < CONSOLIDATE_FANOUT + 6; i++) {
      appendFileSync(file, `turn ${i}\n`);
      const s = await createSnapshot(repo, opts);
      if (previous) expect(s.snapshot.parent).toBe(previous);
      if (previous) expect(s.snapshot.summary.filesChanged).toBe(1);
      previous = s.id;
      expected.set(s.id, treeState(sb.agentDir));
    }
    expect(indexFiles().length).toBeLessThan(CONSOLIDATE_FANOUT);
    expect(blobsOf(repo)).toEqual((await truth()).blobs);
    await expectCheckClean();
    await expectEverySnapshotRestores(new Map([...expected].slice(-3)));
  }, 120_000);

  it("an index file listed but deleted before it is read (consolidated meanwhile) is listed again, not taken for damage", async () => {
    await snapshot(sb);
    const setup = await openCached();
    await writeSmallIndexFiles(setup, 2, "ghost");
    const before = indexFiles();
    await writeSmallIndexFiles(setup, CONSOLIDATE_FANOUT, "more");
    await setup.consolidateIndex();
    const ghosts = before.filter((id) => !indexFiles().includes(id));
    expect(ghosts.length).toBeGreaterThan(0);
    // A listing taken before the consolidation deleted them: it still names the ghosts once.
    class StaleListing extends LocalTarget {
      stale = true;
      override async listNames(prefix: string): Promise<string[]> {
        const names = await super.listNames(prefix);
        if (prefix !== "index" || !this.stale) return names;
        this.stale = false;
        return [...names, ...ghosts];
      }
    }
    const target = new StaleListing(sb.repo);
    const warnings: string[] = [];
    const reader = await Repository.open(target, await keyOf());
    reader.onWarning = (m) => warnings.push(m);
    await reader.loadIndex();
    expect(target.stale).toBe(false);
    expect(warnings).toEqual([]);
    expect(reader.recoveredPacks.size).toBe(0);
    expect(reader.unreadableIndexes).toEqual([]);
    expect(blobsOf(reader)).toEqual((await truth()).blobs);
  });
});

describe("index consolidation", () => {
  it("keeps index/ small over many snapshots, and every snapshot restores", async () => {
    const expected = new Map<string, Map<string, unknown>>();
    const file = path.join(sb.sessionsDir, "--p--", "s1.jsonl");
    for (let i = 0; i < CONSOLIDATE_FANOUT + 4; i++) {
      appendFileSync(file, `line ${i}\n`);
      const s = await snapshot(sb);
      expected.set(s.snapshotId, treeState(sb.agentDir));
    }
    expect(indexFiles().length).toBeLessThan(CONSOLIDATE_FANOUT);
    await expectCheckClean();
    await expectEverySnapshotRestores(expected);
  }, 120_000);

  it("two writers consolidating the same files at once: check --read-data passes and every snapshot restores", async () => {
    const expected = new Map<string, Map<string, unknown>>();
    const s = await snapshot(sb);
    expected.set(s.snapshotId, treeState(sb.agentDir));
    const a = await openCached();
    await writeSmallIndexFiles(a, CONSOLIDATE_FANOUT + 2, "a");
    const b = await Repository.open(new LocalTarget(sb.repo), await keyOf()); // no cache: reads everything
    const want = (await truth()).blobs;
    const [ra, rb] = await Promise.all([a.consolidateIndex(), b.consolidateIndex()]);
    expect(ra.written ?? rb.written).toBeDefined();
    expect((await truth()).blobs).toEqual(want);
    await expectCheckClean();
    // Concurrent CLI snapshots on top (they consolidate too, and wait for each other's lock today).
    const file = path.join(sb.sessionsDir, "--p--", "s1.jsonl");
    appendFileSync(file, "more\n");
    const runs = await Promise.all([0, 1].map(() => collect(spawnSnapshot())));
    for (const r of runs) {
      expect(r.code, r.stderr).toBe(0);
      expected.set(JSON.parse(r.stdout).snapshotId, treeState(sb.agentDir));
    }
    await expectCheckClean();
    await expectEverySnapshotRestores(expected);
  }, 120_000);

  it("killed between writing the consolidated file and deleting the old ones: readers are fine, the next run cleans up", async () => {
    const s = await snapshot(sb);
    const repo = await openCached();
    await writeSmallIndexFiles(repo, CONSOLIDATE_FANOUT, "k");
    await repo.refreshIndex();
    const old = indexFiles();
    // The state a kill leaves after the write and one of the deletes: the new file supersedes the
    // old ones, some of which are still there.
    const { decodeIndex } = await import("../../src/repo/format.js");
    const plain = await Repository.open(new LocalTarget(sb.repo), await keyOf());
    const packs = [];
    for (const id of old) packs.push(...decodeIndex(await readIndexPlain(plain, id), id).packs);
    await plain.saveIndex({ supersedes: old, packs });
    rmSync(path.join(sb.repo, "index", old[0]));
    expect(indexFiles().length).toBe(old.length);
    await expectCheckClean();
    const dest = sb.dir("r");
    await ok(sb, ["restore", s.snapshotId, "--target", dest]);
    expect(treeState(dest)).toEqual(treeState(sb.agentDir));
    // The next writer deletes the leftovers (each is covered by the file that supersedes it).
    appendFileSync(path.join(sb.sessionsDir, "--p--", "s1.jsonl"), "next\n");
    await snapshot(sb);
    for (const id of old) expect(existsSync(path.join(sb.repo, "index", id))).toBe(false);
    await expectCheckClean();
  });

  it("survives kill -9 at random points of consolidation loops", async () => {
    const s = await snapshot(sb);
    const script = path.join(sb.root, "consolidate-loop.mjs");
    const dist = (p: string) => JSON.stringify(path.join(PROJECT_ROOT, "dist/src", p));
    writeFileSync(
      script,
      `import { readKeyFile } from ${dist("config/credentials.js")};
import { Repository } from ${dist("repo/repository.js")};
import { BlobWriter } from ${dist("repo/blob-writer.js")};
import { SealPool } from ${dist("repo/seal-pool.js")};
import { LocalTarget } from ${dist("targets/local.js")};
const repo = await Repository.open(new LocalTarget(process.argv[2]), await readKeyFile(process.argv[3]), { dataDir: process.argv[4] });
const pool = new SealPool(0);
await repo.loadIndex();
for (let i = 0; ; i++) {
  const writer = new BlobWriter(repo, pool);
  const data = Buffer.from("loop " + process.pid + " " + i);
  await writer.add(0, data, [0, data.length], [repo.blobId(data)]);
  await writer.finish();
  await repo.consolidateIndex();
}
`,
    );
    const { spawn } = await import("node:child_process");
    for (let round = 0; round < 6; round++) {
      const child = spawn(process.execPath, [script, sb.repo, path.join(sb.configHome, "pi-guard", "key"), path.join(sb.dataHome, "pi-guard")], { stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
      await new Promise((r) => setTimeout(r, 400 + round * 170));
      child.kill("SIGKILL");
      await new Promise((r) => child.on("exit", r));
      expect(stderr).toBe("");
      await expectCheckClean();
      const dest = sb.dir(`kill-${round}`);
      await ok(sb, ["restore", s.snapshotId, "--target", dest]);
      expect(treeState(dest)).toEqual(treeState(sb.agentDir));
    }
    // Nothing was lost: every blob any index ever named is still named.
    const t = await truth();
    expect(t.blobs.length).toBeGreaterThan(CONSOLIDATE_FANOUT);
    appendFileSync(path.join(sb.sessionsDir, "--p--", "s1.jsonl"), "after kills\n");
    await snapshot(sb);
    expect(indexFiles().length).toBeLessThan(3 * CONSOLIDATE_FANOUT);
    await expectCheckClean();
  }, 120_000);
});

function spawnSnapshot() {
  return spawnCli(sb, ["snapshot", "--json", "--lock-wait", "60"]);
}

async function readIndexPlain(repo: Repository, id: string): Promise<Buffer> {
  const { AAD } = await import("../../src/repo/format.js");
  return repo.unseal(readFileSync(path.join(sb.repo, "index", id)), id, AAD.index);
}

function findPack(id: string): string {
  return path.join(sb.repo, "data", id.slice(0, 2), id);
}

describe("MemoryIndex straight from encoded index bytes", () => {
  it("holds exactly what decoding and adding pack by pack holds, and refuses a malformed file without adding from it", async () => {
    const { encodeIndex } = await import("../../src/repo/format.js");
    const { MemoryIndex } = await import("../../src/repo/memory-index.js");
    const { randomBytes } = await import("node:crypto");
    const packs = Array.from({ length: 40 }, (_, p) => ({
      id: randomBytes(32).toString("hex"),
      size: 1000 + p,
      blobs: Array.from({ length: 1 + (p % 7) }, (_, b) => ({ type: (b % 2) as BlobType, id: randomBytes(32).toString("hex"), offset: b * 100, length: 90 + b, inFrame: b * 3, rawLength: 50 + b })),
    }));
    // One blob in two packs, as after two writers raced: either copy is kept once.
    packs[1].blobs.push({ ...packs[0].blobs[0] });
    const body = encodeIndex({ supersedes: [randomBytes(32).toString("hex")], packs });
    const slow = new MemoryIndex();
    for (const p of packs) slow.addPack(p);
    const fast = new MemoryIndex();
    const info = fast.addEncodedIndex(body, "test index");
    expect(info.packs).toEqual(packs.map((p) => `${p.id}/${p.blobs.length}`));
    expect([...fast.entries()]).toEqual([...slow.entries()]);
    expect([...fast.packs]).toEqual([...slow.packs]);
    const empty = new MemoryIndex();
    expect(() => empty.addEncodedIndex(body.subarray(0, body.length - 5), "cut index")).toThrow(/cut index: index is truncated/);
    expect(() => empty.addEncodedIndex(Buffer.concat([body, Buffer.of(0)]), "long index")).toThrow(/trailing bytes/);
    expect(empty.size).toBe(0);
    expect(empty.packs.size).toBe(0);
  });
});
