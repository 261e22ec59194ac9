// Restore in pack order (PackOrderedRead in src/repo/read-pipeline.ts, TempFiles in the restorer):
// files that share blobs across packs (one file's chunks pointing back into packs written for
// another, the same blob twice in one file), each sealed byte fetched at most once, a failing pack
// read failing exactly the files that need that pack, and a budget smaller than one read. Real
// repositories on disk, real packs; "remote" is the same folder read through getRange only.

import { randomBytes } from "node:crypto";
import { cpSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Credentials } from "../../src/repo/keys.js";
import { packKey, type TreeNode } from "../../src/repo/format.js";
import { type BlobSink, PackOrderedRead } from "../../src/repo/read-pipeline.js";
import { Repository, type SnapshotRecord } from "../../src/repo/repository.js";
import { SealPool } from "../../src/repo/seal-pool.js";
import { restoreSnapshot } from "../../src/restore/restorer.js";
import { LocalTarget } from "../../src/targets/local.js";
import { TargetError, type OpOptions, type Target } from "../../src/targets/target.js";
import { TargetWrapper } from "../../src/targets/wrap.js";
import { listFiles, type Sandbox } from "../helpers/tmp.js";
import { damageBlobInRawFrame, pipelineFixture } from "./pipeline-fixture.js";

// Worker threads cannot load the TypeScript sources under vitest: all work runs on the main thread.
process.env.PI_GUARD_WORKERS = "0";

let sb: Sandbox;
let cred: Credentials;
let record: SnapshotRecord;
let nodes: Map<string, TreeNode>;
let source: Map<string, Buffer>;

/** Counts and records ranged reads; fails every read of one pack when told to. */
class ProbeTarget extends LocalTarget {
  ranges: { key: string; offset: number; length: number }[] = [];
  active = 0;
  maxActive = 0;
  failPack?: string;
  override async getRange(key: string, offset: number, length: number, opts: OpOptions = {}): Promise<Buffer> {
    this.ranges.push({ key, offset, length });
    if (this.failPack && key === packKey(this.failPack)) throw new TargetError("connection reset by the test", "io", true);
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      await new Promise((r) => setImmediate(r));
      return await super.getRange(key, offset, length, opts);
    } finally {
      this.active--;
    }
  }

  /** A remote restore streams each read: recorded and failed the same way. */
  override async *readRange(key: string, offset: number, length: number, opts: OpOptions = {}): AsyncIterable<Uint8Array> {
    this.ranges.push({ key, offset, length });
    if (this.failPack && key === packKey(this.failPack)) throw new TargetError("connection reset by the test", "io", true);
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      yield* super.readRange(key, offset, length, opts);
    } finally {
      this.active--;
    }
  }
}

class RemoteLike extends TargetWrapper {
  override get localPath(): string | undefined {
    return undefined;
  }
}

async function open(target: Target): Promise<Repository> {
  const repo = await Repository.open(target, cred);
  await repo.loadIndex();
  return repo;
}

const tempLeft = (dir: string) => listFiles(dir).filter((f) => path.basename(f).includes(".pi-guard-"));
const packsOf = (repo: Repository, rel: string) => new Set(nodes.get(rel)!.content!.map((id) => repo.index.get(id)!.pack));

beforeAll(async () => {
  const x = randomBytes(3 * 1024 * 1024);
  const y = randomBytes(1536 * 1024);
  const files: [string, Buffer][] = [
    ["sessions/--p--/a.jsonl", x],
    // Y's chunks are new and land in later packs; the X part points back into A's packs.
    ["sessions/--p--/b.jsonl", Buffer.concat([y, x])],
    // X twice: the same blobs twice in one file.
    ["sessions/--p--/c.jsonl", Buffer.concat([x, x])],
    ["sessions/--q--/d.jsonl", Buffer.from('{"type":"session","id":"d"}\n'.repeat(20_000))],
    ["sessions/--q--/empty.jsonl", Buffer.alloc(0)],
  ];
  ({ sb, cred, record, nodes, source } = await pipelineFixture("pack-order", files));
}, 60_000);

afterAll(() => sb?.cleanup());

describe("restore in pack order", () => {
  it("the tree shares blobs across packs: B points back into A's packs, C holds blobs twice", async () => {
    const repo = await open(new LocalTarget(sb.repo));
    const a = packsOf(repo, "sessions/--p--/a.jsonl");
    const b = packsOf(repo, "sessions/--p--/b.jsonl");
    expect(a.size).toBeGreaterThanOrEqual(3);
    expect([...b].filter((p) => a.has(p)).length).toBeGreaterThanOrEqual(2);
    expect([...b].filter((p) => !a.has(p)).length).toBeGreaterThanOrEqual(1);
    const c = nodes.get("sessions/--p--/c.jsonl")!.content!;
    expect(new Set(c).size).toBeLessThan(c.length);
  });

  for (const remote of [false, true]) {
    it(`${remote ? "remote" : "local"}: byte-identical, and no sealed byte is fetched twice`, async () => {
      const probe = new ProbeTarget(sb.repo);
      const repo = await open(remote ? new RemoteLike(probe) : probe);
      const dest = path.join(sb.root, `dest-${remote ? "remote" : "local"}`);
      mkdirSync(dest);
      const before = probe.ranges.length;
      const report = await restoreSnapshot(repo, record, { destinations: { agent: dest } });
      expect(report.failed).toEqual([]);
      expect(report.files.map((f) => f.path).sort()).toEqual([...source.keys()].sort());
      expect(report.bytesWritten).toBe([...source.values()].reduce((n, b) => n + b.length, 0));
      for (const [rel, data] of source) expect(readFileSync(path.join(dest, rel)).equals(data), rel).toBe(true);
      expect(tempLeft(dest)).toEqual([]);
      if (!remote) return; // a local pack is read by the decoding thread itself, not through getRange
      // The restore's own reads (the tree was read while planning): no two overlap.
      const reads = probe.ranges.slice(before);
      const packs = new Set(reads.map((r) => r.key));
      for (const key of packs) {
        const mine = reads.filter((r) => r.key === key).sort((p, q) => p.offset - q.offset);
        for (let i = 1; i < mine.length; i++) expect(mine[i].offset, key).toBeGreaterThanOrEqual(mine[i - 1].offset + mine[i - 1].length);
      }
      // Each pack holding file data is read once (packs of 1-2 MiB, reads of up to 4 MiB).
      const dataPacks = new Set([...nodes.values()].flatMap((n) => (n.content ?? []).map((id) => repo.index.get(id)!.pack)));
      expect(reads.filter((r) => dataPacks.has(r.key.split("/")[2])).length).toBe(dataPacks.size);
    });
  }

  it("one temp file open at a time: files written across several reads are closed, reopened, and still exact", async () => {
    const repo = await open(new RemoteLike(new ProbeTarget(sb.repo)));
    const dest = path.join(sb.root, "dest-one-open");
    mkdirSync(dest);
    const report = await restoreSnapshot(repo, record, { destinations: { agent: dest }, maxOpenFiles: 1 });
    expect(report.failed).toEqual([]);
    for (const [rel, data] of source) expect(readFileSync(path.join(dest, rel)).equals(data), rel).toBe(true);
    expect(tempLeft(dest)).toEqual([]);
  });

  it("a pack whose read fails fails exactly the files that need it; the others are restored exactly, no temp file stays", async () => {
    const repo0 = await open(new LocalTarget(sb.repo));
    const dataPacks = [...new Set([...nodes.values()].flatMap((n) => (n.content ?? []).map((id) => repo0.index.get(id)!.pack)))];
    // Every pack in turn; the tree's files share them unevenly (some need all, some a few).
    const subsets = new Set<string>();
    for (const failPack of dataPacks) {
      const name = failPack.slice(0, 8);
      const need = [...nodes.keys()].filter((k) => packsOf(repo0, k).has(failPack)).sort();
      subsets.add(need.join(","));
      const probe = new ProbeTarget(sb.repo);
      const repo = await open(new RemoteLike(probe));
      probe.failPack = failPack;
      const dest = path.join(sb.root, `dest-fail-${name}`);
      mkdirSync(dest);
      const report = await restoreSnapshot(repo, record, { destinations: { agent: dest } });
      expect(report.failed.map((f) => f.path).sort(), name).toEqual(need);
      for (const f of report.failed) expect(f).toMatchObject({ kind: "io", error: `pack ${failPack.slice(0, 12)} cannot be read: connection reset by the test` });
      const ok = [...source.keys()].filter((k) => !need.includes(k)).sort();
      expect(report.files.map((f) => f.path).sort()).toEqual(ok);
      expect(report.bytesWritten).toBe(ok.reduce((n, k) => n + source.get(k)!.length, 0));
      expect(
        listFiles(dest)
          .map((f) => path.relative(dest, f))
          .sort(),
      ).toEqual(ok);
      for (const rel of ok) expect(readFileSync(path.join(dest, rel)).equals(source.get(rel)!), rel).toBe(true);
      expect(tempLeft(dest)).toEqual([]);
    }
    expect(dataPacks.length).toBeGreaterThanOrEqual(3);
    expect(subsets.size).toBeGreaterThanOrEqual(2);
  });

  it("a blob of B that does not match its id, in a pack other files read too: only B fails, local and remote", async () => {
    const dir = path.join(sb.root, "repo-mismatch");
    cpSync(sb.repo, dir, { recursive: true });
    const repo0 = await open(new LocalTarget(dir));
    const others = [...nodes.keys()].filter((k) => !k.endsWith("b.jsonl"));
    const otherIds = new Set(others.flatMap((k) => nodes.get(k)!.content ?? []));
    const otherPacks = new Set(others.flatMap((k) => [...packsOf(repo0, k)]));
    // A blob only B holds (Y's bytes: random, so its frame is stored raw), in a pack others need too.
    damageBlobInRawFrame(repo0, dir, nodes.get("sessions/--p--/b.jsonl")!.content!, 3, 0x08, (id) => !otherIds.has(id) && otherPacks.has(repo0.index.get(id)!.pack));
    for (const remote of [false, true]) {
      const repo = await open(remote ? new RemoteLike(new LocalTarget(dir)) : new LocalTarget(dir));
      const dest = path.join(sb.root, `dest-mismatch-${remote}`);
      mkdirSync(dest);
      const report = await restoreSnapshot(repo, record, { destinations: { agent: dest } });
      expect(report.failed).toEqual([expect.objectContaining({ path: "sessions/--p--/b.jsonl", kind: "damaged", error: expect.stringMatching(/does not match its id/) })]);
      expect(report.files.map((f) => f.path).sort()).toEqual(others.sort());
      for (const rel of others) expect(readFileSync(path.join(dest, rel)).equals(source.get(rel)!), rel).toBe(true);
      expect(listFiles(dest).some((f) => f.endsWith("b.jsonl"))).toBe(false);
      expect(tempLeft(dest)).toEqual([]);
    }
  });

  it("a budget smaller than one read: one read (local) or one job (remote) at a time, every byte written once, each file done once after all its bytes", async () => {
    for (const remote of [true, false]) {
      const probe = new ProbeTarget(sb.repo);
      const repo = await open(remote ? new RemoteLike(probe) : probe);
      const pool = new SealPool(0);
      const files = [...nodes.values()];
      const out = files.map((n) => Buffer.alloc(n.size ?? 0));
      const covered = files.map((n) => new Uint8Array(n.size ?? 0));
      const done: number[] = [];
      const writing = new Map<ArrayBufferLike, number>();
      let maxWriting = 0;
      const sink: BlobSink = {
        write: async (f, pos, parts) => {
          // One job's blobs are views of one decoded buffer: count the jobs being written at once.
          const job = parts[0].buffer;
          writing.set(job, (writing.get(job) ?? 0) + 1);
          maxWriting = Math.max(maxWriting, writing.size);
          await new Promise((r) => setImmediate(r));
          if (writing.get(job) === 1) writing.delete(job);
          else writing.set(job, writing.get(job)! - 1);
          for (const p of parts) {
            p.copy(out[f], pos);
            for (let i = pos; i < pos + p.length; i++) covered[f][i]++;
            pos += p.length;
          }
        },
        done: (f) => {
          expect(covered[f].every((c) => c === 1), files[f].path).toBe(true);
          done.push(f);
        },
        fail: (f, err) => {
          throw new Error(`${files[f].path} failed: ${err.message}`);
        },
        failed: () => false,
      };
      try {
        const reader = new PackOrderedRead(repo, pool, { budgetBytes: 1, concurrency: 4 });
        const before = probe.ranges.length;
        await reader.run(
          files.map((n) => n.content ?? []),
          sink,
        );
        expect(reader.budget.inUse).toBe(0);
        expect(done.sort()).toEqual(files.map((_, i) => i));
        files.forEach((n, f) => expect(out[f].equals(source.get(n.path)!), n.path).toBe(true));
        if (remote) {
          // Streams still open one after another, but the budget lets one job's bytes at a time
          // be held: the next job is taken off a stream only once the last one is written.
          expect(probe.ranges.length).toBeGreaterThan(before + 1);
          expect(maxWriting).toBe(1);
        }
      } finally {
        await pool.close();
      }
    }
  });
});
