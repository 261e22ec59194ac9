// The two levels of a version 2 file list (docs/FORMAT.md §7, §8): leaf tree blobs, and tree list
// blobs that name them. Old repositories (version 1 snapshots, written before the list existed)
// must keep working; everything that counts or copies blobs must count the list blobs; a hostile
// list is refused in one line.

import { randomBytes } from "node:crypto";
import { cpSync, existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readKeyFile } from "../../src/config/credentials.js";
import { BlobWriter } from "../../src/repo/blob-writer.js";
import { BlobType, MAX_TREE_LISTS, type Snapshot } from "../../src/repo/format.js";
import { Repository } from "../../src/repo/repository.js";
import { SealPool } from "../../src/repo/seal-pool.js";
import { LocalTarget } from "../../src/targets/local.js";
import { cli, expectOneLineError, initRepo, ok, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, treeState, writeFileExact, writePiConfigFiles } from "../helpers/tmp.js";

const FIXTURE = path.join(import.meta.dirname, "..", "fixtures", "repo-v1");

type FileMap = Record<string, { mode?: number; base64?: string; link?: string }>;

/** A restored folder in the shape of the fixture's states.json. */
function stateOf(dir: string): FileMap {
  const files: FileMap = {};
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const p = path.join(d, name);
      const st = lstatSync(p);
      if (st.isSymbolicLink()) files[r] = { link: readlinkSync(p) };
      else if (st.isDirectory()) walk(p, r);
      else files[r] = { mode: st.mode & 0o777, base64: readFileSync(p).toString("base64") };
    }
  };
  walk(dir, "");
  return files;
}

async function open(repoDir: string, keyFile: string): Promise<Repository> {
  const repo = await Repository.open(new LocalTarget(repoDir), (await readKeyFile(keyFile))!);
  await repo.loadIndex();
  return repo;
}

async function expectCheckClean(sb: Sandbox, env: Record<string, string> = {}): Promise<void> {
  const check = await cli(sb, ["check", "--read-data", "--json"], { env });
  expect(check.code, check.stdout + check.stderr).toBe(0);
}

describe("a repository of version 1 snapshots (test/fixtures/repo-v1, made by pi-guard before the tree list)", () => {
  let sb: Sandbox;
  let env: Record<string, string>;
  const states = JSON.parse(readFileSync(path.join(FIXTURE, "states.json"), "utf8")) as { id: string; files: FileMap }[];
  beforeAll(() => {
    sb = makeSandbox("tree-list-v1");
    cpSync(path.join(FIXTURE, "repo"), sb.repo, { recursive: true });
    env = { PI_GUARD_KEY_FILE: path.join(FIXTURE, "key"), PI_GUARD_HOST: "fixture" };
  });
  afterAll(() => sb?.cleanup());

  const restoresAll = async (ids: string[]) => {
    for (const id of ids) {
      const to = path.join(sb.root, `restore-${id.slice(0, 8)}-${randomBytes(3).toString("hex")}`);
      await ok(sb, ["restore", id, "--target", to], { env });
      expect(stateOf(to), id).toEqual(states.find((s) => s.id === id)!.files);
    }
  };

  it("is read as it was written: its snapshots list, restore byte for byte, and check", async () => {
    const repo = await open(sb.repo, env.PI_GUARD_KEY_FILE);
    const listed = await repo.listSnapshots();
    expect(listed.map((r) => r.id)).toEqual(states.map((s) => s.id));
    for (const { snapshot: s } of listed) {
      expect(s.version).toBe(1);
      expect(s.treeList).toBeUndefined();
      expect(s.tree!.length).toBeGreaterThan(0);
    }
    expect(repo.config.chunker.list).toBeUndefined();
    const rows = (await ok(sb, ["snapshots", "--json"], { env })).json<{ id: string }[]>();
    expect(rows.map((r) => r.id)).toEqual(states.map((s) => s.id));
    await restoresAll(states.map((s) => s.id));
    await expectCheckClean(sb, env);
  });

  it("forgets and prunes, and takes version 2 snapshots with its own leaf parameters beside the old ones", async () => {
    await ok(sb, ["forget", states[0].id], { env });
    await ok(sb, ["prune"], { env });
    await expectCheckClean(sb, env);
    await restoresAll(states.slice(1).map((s) => s.id));

    // A new snapshot of a tree into this old repository: version 2, its list blobs cut with the
    // default list parameters (the config has none), its leaves with the config's 8 KiB.
    writePiConfigFiles(sb.agentDir);
    writeFileExact(path.join(sb.sessionsDir, "--p--", "s.jsonl"), '{"type":"session"}\n'.repeat(500), 0o644);
    const made = await snapshot(sb, [], { env });
    const repo = await open(sb.repo, env.PI_GUARD_KEY_FILE);
    const s = await repo.loadSnapshotFromTarget(made.snapshotId);
    expect(s.version).toBe(2);
    expect(s.tree).toBeUndefined();
    expect(s.treeList!.length).toBeGreaterThan(0);
    const to = path.join(sb.root, "restore-new");
    await ok(sb, ["restore", made.snapshotId, "--target", to], { env });
    expect([...treeState(to)].filter(([rel]) => !rel.startsWith("pi-guard"))).toEqual([...treeState(sb.agentDir)]);

    // Old and new together: prune keeps both forms' blobs.
    await ok(sb, ["forget", states[1].id], { env });
    await ok(sb, ["prune"], { env });
    await expectCheckClean(sb, env);
    await restoresAll([states[2].id]);
    rmSync(to, { recursive: true });
    await ok(sb, ["restore", made.snapshotId, "--target", to], { env });
    expect([...treeState(to)]).toEqual([...treeState(sb.agentDir)]);
  });
});

describe("version 2 snapshots in a new repository", () => {
  let sb: Sandbox;
  const ids: string[] = [];
  const states = new Map<string, ReturnType<typeof treeState>>();
  const keyFile = () => path.join(sb.configHome, "pi-guard", "key");
  const session = (i: number) => path.join(sb.sessionsDir, "--proj--", `2026-11-30T10-00-00-000Z_0b9c5c3e-0000-4000-8000-00000000000${i}.jsonl`);

  beforeAll(async () => {
    sb = makeSandbox("tree-list-v2");
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);
    // Enough files for several leaves and several list blobs; each round changes a few of them.
    for (let f = 0; f < 300; f++) writeFileExact(path.join(sb.agentDir, "extensions", `e${String(f).padStart(3, "0")}.json`), JSON.stringify({ f }), 0o644);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 3; i++) writeFileExact(session(i), `{"round":${round},"i":${i},"pad":"${randomBytes(2000).toString("hex")}"}\n`, 0o644);
      writeFileExact(path.join(sb.agentDir, "extensions", `e${String(round * 100).padStart(3, "0")}.json`), JSON.stringify({ round }), 0o644);
      const made = await snapshot(sb);
      ids.push(made.snapshotId);
      states.set(made.snapshotId, treeState(sb.agentDir));
    }
  });
  afterAll(() => sb?.cleanup());

  const restoresAs = async (id: string, env: Record<string, string> = {}) => {
    const to = path.join(sb.root, `restore-${id.slice(0, 8)}-${randomBytes(3).toString("hex")}`);
    await ok(sb, ["restore", id, "--target", to], { env });
    expect([...treeState(to)]).toEqual([...states.get(id)!]);
  };

  it("hold a tree list, no leaf list, and the config the list chunker", async () => {
    const repo = await open(sb.repo, keyFile());
    expect(repo.config.chunker.list).toEqual({ min: 128, avg: 512, max: 2048 });
    expect(repo.config.chunker.tree).toEqual({ min: 512, avg: 2048, max: 8192 });
    for (const id of ids) {
      const s = await repo.loadSnapshotFromTarget(id);
      expect(s.version).toBe(2);
      expect(s.tree).toBeUndefined();
      expect(s.treeList!.length).toBeGreaterThan(1);
      for (const l of s.treeList!) expect(repo.index.get(l)?.type).toBe(BlobType.Tree);
    }
  });

  it("a mirror made by copy gets the list blobs: it checks, and restores byte for byte", async () => {
    const mirror = path.join(sb.root, "mirror");
    await ok(sb, ["copy", "--to", mirror]);
    const env = { PI_GUARD_REPO: mirror };
    await expectCheckClean(sb, env);
    const there = await open(mirror, keyFile());
    for (const id of ids) for (const l of (await there.loadSnapshotFromTarget(id)).treeList!) expect(there.index.has(l), l).toBe(true);
    for (const id of ids) await restoresAs(id, env);
  });

  it("prune keeps the list blobs of kept snapshots and removes those only forgotten ones used", async () => {
    const before = await open(sb.repo, keyFile());
    const lists = async (id: string) => new Set((await before.loadSnapshotFromTarget(id)).treeList);
    const forgotten = await lists(ids[0]);
    const kept = new Set([...(await lists(ids[1])), ...(await lists(ids[2]))]);
    const onlyForgotten = [...forgotten].filter((l) => !kept.has(l));
    expect(onlyForgotten.length).toBeGreaterThan(0);
    await ok(sb, ["forget", ids[0]]);
    await ok(sb, ["prune"]);
    const after = await open(sb.repo, keyFile());
    for (const l of kept) expect(after.index.has(l), `kept ${l}`).toBe(true);
    for (const l of onlyForgotten) expect(after.index.has(l), `forgotten ${l}`).toBe(false);
    await expectCheckClean(sb);
    await restoresAs(ids[1]);
    await restoresAs(ids[2]);
  });

  describe("a hostile file list is refused in one line", () => {
    let repo: Repository;
    let good: Snapshot;
    beforeAll(async () => {
      repo = await open(sb.repo, keyFile());
      good = await repo.loadSnapshotFromTarget(ids[2]);
    });

    /** Store blobs of `type` with these bytes; their ids. */
    const store = async (type: BlobType, parts: Buffer[]): Promise<string[]> => {
      const pool = new SealPool(0);
      try {
        const writer = new BlobWriter(repo, pool);
        const out: string[] = [];
        for (const p of parts) {
          const id = repo.blobId(p);
          await writer.add(type, p, [0, p.length], [id]);
          out.push(id);
        }
        await writer.finish();
        await repo.loadIndex(true);
        return out;
      } finally {
        await pool.close();
      }
    };
    const restoreOf = async (s: Partial<Snapshot>) => {
      // Hostile shapes on purpose (both lists, neither, wrong version): past the type, as a forged object would be.
      const id = await repo.saveSnapshot({ ...good, time: new Date().toISOString(), ...s } as Snapshot);
      const r = await cli(sb, ["restore", id, "--target", path.join(sb.root, `hostile-${id.slice(0, 8)}`)]);
      await ok(sb, ["forget", id]);
      return expectOneLineError(r, 3);
    };
    const idsAsList = (leaves: string[]) => Buffer.concat(leaves.map((l) => Buffer.from(l, "hex")));

    it("a list that names a blob the index does not have", async () => {
      const [list] = await store(BlobType.Tree, [idsAsList([randomBytes(32).toString("hex")])]);
      expect(await restoreOf({ treeList: [list] })).toMatch(/blob [0-9a-f]{12} is missing from the index/);
    });

    it("a list that names a data blob, or is one", async () => {
      const [data] = await store(BlobType.Data, [Buffer.from("{}\n")]);
      const [list] = await store(BlobType.Tree, [idsAsList([data])]);
      expect(await restoreOf({ treeList: [list] })).toMatch(/tree blob [0-9a-f]{12} is a data blob, not a tree blob/);
      const [asData] = await store(BlobType.Data, [idsAsList([good.treeList![0]])]);
      expect(await restoreOf({ treeList: [asData] })).toMatch(/tree list blob [0-9a-f]{12} is a data blob, not a tree blob/);
    });

    it("prune and check refuse it too: prune deletes nothing, check names the snapshot", async () => {
      const [data] = await store(BlobType.Data, [Buffer.from("not a file list\n")]);
      const [list] = await store(BlobType.Tree, [idsAsList([data])]);
      const id = await repo.saveSnapshot({ ...good, time: new Date().toISOString(), treeList: [list] } as Snapshot);
      const packs = readdirSync(path.join(sb.repo, "data"), { recursive: true }).sort();
      const prune = expectOneLineError(await cli(sb, ["prune"]), 3);
      expect(prune).toContain(`snapshot ${id.slice(0, 8)} cannot be read (its tree blob ${data.slice(0, 12)} is a data blob, not a tree blob)`);
      expect(readdirSync(path.join(sb.repo, "data"), { recursive: true }).sort()).toEqual(packs);
      const check = await cli(sb, ["check"]);
      expect(check.code).toBe(3);
      expect(check.stdout + check.stderr).toContain(`snapshot ${id.slice(0, 8)}: its tree blob ${data.slice(0, 12)} is a data blob, not a tree blob`);
      await ok(sb, ["forget", id]);
    });

    it("a loop: a list that names a list (its own id cannot be in it) is a leaf that is not JSON lines", async () => {
      const [list] = await store(BlobType.Tree, [idsAsList([good.treeList![0], good.treeList![0]])]);
      expect(await restoreOf({ treeList: [list] })).toMatch(/file list is not valid JSON/);
    });

    it("a list that is not a whole number of ids", async () => {
      const [list] = await store(BlobType.Tree, [Buffer.concat([idsAsList([good.treeList![0]]), Buffer.from("xyz")])]);
      expect(await restoreOf({ treeList: [list] })).toMatch(/tree list ends in 3 bytes that are no whole blob id/);
    });

    it("a list of more than 2^20 leaves is refused before it is held", async () => {
      // 5 blobs of 7 MiB: 1,146,880 ids (they need not exist: the count is refused first).
      const lists = await store(BlobType.Tree, Array.from({ length: 5 }, () => randomBytes(7 * 1024 * 1024)));
      expect(await restoreOf({ treeList: lists })).toMatch(/tree list names more than 1048576 tree blobs/);
    });

    it("a treeList of too many ids, a version 2 snapshot with a leaf list, a newer version", async () => {
      const id = good.treeList![0];
      const listed = async (s: Partial<Snapshot>) => {
        const saved = await repo.saveSnapshot({ ...good, time: new Date().toISOString(), ...s } as Snapshot);
        const r = await cli(sb, ["restore", saved, "--target", path.join(sb.root, `hostile-${saved.slice(0, 8)}`)]);
        await ok(sb, ["forget", saved]);
        return expectOneLineError(r);
      };
      expect(await listed({ treeList: Array.from({ length: MAX_TREE_LISTS + 1 }, () => id) })).toMatch(/treeList: more than 65536 ids/);
      expect(await listed({ tree: [id] })).toMatch(/tree: not allowed in version 2/);
      expect(await listed({ version: 3 })).toMatch(/version: 3 is newer than this pi-guard reads \(2\); upgrade pi-guard/);
      expect(existsSync(sb.repo)).toBe(true);
    });
  });
});
