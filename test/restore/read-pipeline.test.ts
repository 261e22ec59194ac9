// The restore read pipeline (src/repo/read-pipeline.ts): byte-identical output under a tiny byte
// budget, a blob whose bytes do not match its id in the middle of a big file, a target that fails
// a ranged read part-way, and an abort while a read hangs. Real repositories on disk, real packs.

import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Credentials } from "../../src/repo/keys.js";
import { packKey, type TreeNode } from "../../src/repo/format.js";
import { ByteBudget } from "../../src/repo/read-pipeline.js";
import { Repository, type SnapshotRecord } from "../../src/repo/repository.js";
import { applyRestore, planRestore, restoreSnapshot } from "../../src/restore/restorer.js";
import { LocalTarget } from "../../src/targets/local.js";
import { RetryTarget } from "../../src/targets/retry.js";
import { TargetError, type OpOptions, type Target } from "../../src/targets/target.js";
import { TargetWrapper } from "../../src/targets/wrap.js";
import { cpSync } from "node:fs";
import { cli, initRepo, restoreJson, snapshot, type RestoreJson } from "../helpers/cli.js";
import { readKeyFile } from "../../src/config/credentials.js";
import { BlobReader } from "../../src/repo/blob-reader.js";
import { SealPool } from "../../src/repo/seal-pool.js";
import { readTree } from "../../src/snapshot/tree.js";
import { listFiles, makeSandbox, writeFileExact, type Sandbox } from "../helpers/tmp.js";
import { damageBlobInRawFrame, pipelineFixture } from "./pipeline-fixture.js";

// Worker threads cannot load the TypeScript sources under vitest: in-process, all work runs on the
// main thread. The last test restores through the built CLI, with its worker.
process.env.PI_GUARD_WORKERS = "0";

let sb: Sandbox;
let cred: Credentials;
let record: SnapshotRecord;
let nodes: Map<string, TreeNode>;
let source: Map<string, Buffer>;

/** JSON lines that compress (zstd frames). */
function text(bytes: number, seed: number): Buffer {
  const parts: Buffer[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const p = Buffer.from(`{"seed":${seed},"line":${i},"text":"${"lorem ipsum ".repeat(1 + ((i * 7919 + seed) % 97))}"}\n`);
    parts.push(p);
    n += p.length;
  }
  return Buffer.concat(parts).subarray(0, bytes);
}

/** A repository copy of its own, so that each test may damage it. */
function copyRepo(name: string): string {
  const dir = path.join(sb.root, `repo-${name}`);
  cpSync(sb.repo, dir, { recursive: true });
  return dir;
}

async function open(target: Target): Promise<Repository> {
  const repo = await Repository.open(target, cred);
  await repo.loadIndex();
  return repo;
}

/** Where the big file's middle blob lies. */
function middleOfBig(repo: Repository): { key: string; offset: number } {
  const ids = nodes.get("sessions/--p--/big.jsonl")!.content!;
  const loc = repo.index.get(ids[Math.floor(ids.length / 2)])!;
  return { key: packKey(loc.pack), offset: loc.offset };
}

/** A copy of the repository with the pack under the big file's middle cut short there, and an empty destination. */
async function truncatedUnderBig(name: string, target: (dir: string) => Target): Promise<{ repo: Repository; dest: string }> {
  const dir = copyRepo(name);
  const repo = await open(target(dir));
  const { key, offset } = middleOfBig(repo);
  const file = path.join(dir, key);
  writeFileSync(file, readFileSync(file).subarray(0, offset + 10));
  const dest = path.join(sb.root, `dest-${name}`);
  mkdirSync(dest);
  return { repo, dest };
}

const tempLeft = (dir: string) => listFiles(dir).filter((f) => path.basename(f).includes(".pi-guard-"));

beforeAll(async () => {
  const files: [string, Buffer][] = [
    // Random bytes in the middle do not compress: those frames are stored raw.
    ["sessions/--p--/big.jsonl", Buffer.concat([text(2 * 1024 * 1024, 1), randomBytes(3 * 1024 * 1024), text(2 * 1024 * 1024 + 12_345, 4)])],
    ["sessions/--p--/medium.jsonl", text(400_000, 2)],
    ["sessions/--q--/small.jsonl", Buffer.from('{"type":"session"}\n')],
    ["sessions/--q--/empty.jsonl", Buffer.alloc(0)],
    ["sessions/--q--/dup.jsonl", Buffer.concat([text(300_000, 3), text(300_000, 3)])],
  ];
  ({ sb, cred, record, nodes, source } = await pipelineFixture("pipeline", files));
}, 60_000);

afterAll(() => sb?.cleanup());

/** A local target that counts ranged reads and may fail or hang some of them. */
class ProbeTarget extends LocalTarget {
  reads = 0;
  /** Fail (once, as a transient network error) the first read that covers this pack offset. */
  failAt?: { key: string; offset: number };
  hangFrom = -1;
  onHang?: () => void;
  /** Streams that failed part-way. */
  streamFailures = 0;
  override async getRange(key: string, offset: number, length: number, opts: OpOptions = {}): Promise<Buffer> {
    const n = this.reads++;
    if (this.failAt && key === this.failAt.key && offset <= this.failAt.offset && this.failAt.offset < offset + length) {
      this.failAt = undefined;
      throw new TargetError("connection reset by the test", "io", true);
    }
    if (this.hangFrom >= 0 && n >= this.hangFrom) {
      this.onHang?.();
      return new Promise<Buffer>(() => undefined); // never answers, and ignores the signal
    }
    await new Promise((r) => setImmediate(r));
    return super.getRange(key, offset, length, opts);
  }

  /** The remote restore's streams: the failure comes part-way, after the bytes before the offset. */
  override async *readRange(key: string, offset: number, length: number, opts: OpOptions = {}): AsyncIterable<Uint8Array> {
    const n = this.reads++;
    const failAt = this.failAt && key === this.failAt.key && offset <= this.failAt.offset && this.failAt.offset < offset + length ? this.failAt.offset : undefined;
    if (this.hangFrom >= 0 && n >= this.hangFrom) {
      this.onHang?.();
      await new Promise<never>(() => undefined); // never answers, and ignores the signal
    }
    let at = offset;
    for await (const chunk of super.readRange(key, offset, length, opts)) {
      if (failAt !== undefined && at + chunk.length > failAt) {
        this.failAt = undefined;
        if (failAt > at) yield chunk.subarray(0, failAt - at);
        this.streamFailures++;
        throw new TargetError("connection reset by the test", "io", true);
      }
      at += chunk.length;
      yield chunk;
    }
  }
}

/**
 * The same folder seen as remote storage: every read goes through getRange (a local repository's
 * packs are read by the decoding thread itself), and restore plans shared reads for it.
 */
class RemoteLike extends TargetWrapper {
  override get localPath(): string | undefined {
    return undefined;
  }
}

describe("the test repository, and ByteBudget", () => {
  it("the big file spans many packs and frames", async () => {
    const repo = await open(new LocalTarget(sb.repo));
    const big = nodes.get("sessions/--p--/big.jsonl")!;
    const packs = new Set(big.content!.map((id) => repo.index.get(id)!.pack));
    const frames = new Set(big.content!.map((id) => `${repo.index.get(id)!.pack}:${repo.index.get(id)!.offset}`));
    expect(packs.size).toBeGreaterThanOrEqual(3);
    expect(frames.size).toBeGreaterThanOrEqual(5);
  });

  it("ByteBudget serves waiters first come, first served, and lets one oversized request through when idle", async () => {
    const b = new ByteBudget(10);
    expect(b.tryAcquire(25)).toBe(true); // idle: a read bigger than the budget still runs, alone
    const order: string[] = [];
    const first = b.acquire(8).then(() => order.push("8"));
    const second = b.acquire(1).then(() => order.push("1"));
    expect(b.tryAcquire(1)).toBe(false); // someone waits: no overtaking
    b.release(25);
    await Promise.all([first, second]);
    expect(order).toEqual(["8", "1"]);
    expect(b.inUse).toBe(9);
    const ac = new AbortController();
    const blocked = b.acquire(5, ac.signal);
    ac.abort(new Error("stop"));
    await expect(blocked).rejects.toThrow("stop");
    b.release(9);
    expect(b.inUse).toBe(0);
  });
});

describe("restore through the pipeline", () => {
  it("a blob whose bytes do not match its id in the middle of the big file: that file is reported damaged and nothing of it is written", async () => {
    const dir = copyRepo("mismatch");
    const repo = await open(new LocalTarget(dir));
    const big = nodes.get("sessions/--p--/big.jsonl")!;
    // A stored-raw frame (random bytes do not compress) in the middle of the file, re-sealed with
    // the right key after one byte of the blob changed: it authenticates, but the blob is wrong.
    const ids = big.content!;
    damageBlobInRawFrame(repo, dir, ids.slice(ids.length / 3), 7, 0x40);

    const dest = path.join(sb.root, "dest-mismatch");
    mkdirSync(dest);
    const report = await restoreSnapshot(repo, record, { destinations: { agent: dest } });
    expect(report.failed).toEqual([expect.objectContaining({ path: "sessions/--p--/big.jsonl", kind: "damaged", error: expect.stringMatching(/does not match its id/) })]);
    const restored = listFiles(dest).map((f) => path.relative(dest, f)).sort();
    expect(restored).toEqual([...source.keys()].filter((k) => !k.endsWith("big.jsonl")).sort());
    for (const rel of restored) expect(readFileSync(path.join(dest, rel)).equals(source.get(rel)!), rel).toBe(true);
    expect(tempLeft(dest)).toEqual([]);
  });

  it("a ranged read that fails part-way through the big file: that file fails cleanly (no file, no temp file); the others are restored", async () => {
    const target = new ProbeTarget(sb.repo);
    const repo = await open(new RemoteLike(target));
    // The planning reads the tree first; count from the restore's own reads.
    const dest = path.join(sb.root, "dest-fail");
    mkdirSync(dest);
    target.failAt = middleOfBig(repo);
    const report = await restoreSnapshot(repo, record, { destinations: { agent: dest } });
    expect(report.failed).toEqual([expect.objectContaining({ path: "sessions/--p--/big.jsonl", kind: "io", error: expect.stringMatching(/^pack [0-9a-f]{12} cannot be read: connection reset by the test$/) })]);
    expect(report.files.map((f) => f.path).sort()).toEqual([...source.keys()].filter((k) => !k.endsWith("big.jsonl")).sort());
    expect(readdirSync(path.join(dest, "sessions", "--p--")).sort()).toEqual(["medium.jsonl"]);
    expect(tempLeft(dest)).toEqual([]);
  });

  it("a local pack cut short under the big file (read by the decoding thread itself): that file is damaged, nothing of it written", async () => {
    const { repo, dest } = await truncatedUnderBig("truncated", (dir) => new LocalTarget(dir));
    const report = await restoreSnapshot(repo, record, { destinations: { agent: dest } });
    expect(report.failed).toEqual([expect.objectContaining({ path: "sessions/--p--/big.jsonl", kind: "damaged", error: expect.stringMatching(/^pack [0-9a-f]{12} is truncated$/) })]);
    expect(listFiles(dest).filter((f) => f.endsWith("big.jsonl"))).toEqual([]);
    expect(tempLeft(dest)).toEqual([]);
  });

  it("a remote pack whose stream ends early under the big file: that file is damaged, nothing of it written; the others are exact", async () => {
    const { repo, dest } = await truncatedUnderBig("truncated-remote", (dir) => new RemoteLike(new LocalTarget(dir)));
    const report = await restoreSnapshot(repo, record, { destinations: { agent: dest } });
    expect(report.failed.map((f) => f.path)).toContain("sessions/--p--/big.jsonl");
    for (const f of report.failed) expect(f).toMatchObject({ kind: "damaged", error: expect.stringMatching(/^pack [0-9a-f]{12} is truncated$/) });
    for (const f of report.files) expect(readFileSync(path.join(dest, f.path)).equals(source.get(f.path)!), f.path).toBe(true);
    expect(listFiles(dest).filter((f) => f.endsWith("big.jsonl"))).toEqual([]);
    expect(tempLeft(dest)).toEqual([]);
  });

  it("the same failure once behind RetryTarget is retried, and the restore is complete and exact", async () => {
    const probe = new ProbeTarget(sb.repo);
    const repo = await open(new RetryTarget(new RemoteLike(probe), { baseDelayMs: 1, maxDelayMs: 2 }));
    const dest = path.join(sb.root, "dest-retry");
    mkdirSync(dest);
    probe.failAt = middleOfBig(repo);
    const report = await restoreSnapshot(repo, record, { destinations: { agent: dest } });
    expect(report.failed).toEqual([]);
    // The stream broke part-way and went on from the first byte not yet received.
    expect(probe.streamFailures).toBe(1);
    for (const [rel, data] of source) expect(readFileSync(path.join(dest, rel)).equals(data), rel).toBe(true);
    expect(tempLeft(dest)).toEqual([]);
  });

  it("abort while a ranged read hangs (and ignores the signal): the restore stops with the signal's reason and leaves no temp file", async () => {
    const target = new ProbeTarget(sb.repo);
    const repo = await open(new RemoteLike(target));
    const dest = path.join(sb.root, "dest-abort");
    mkdirSync(dest);
    const ac = new AbortController();
    const plan = await planRestore(repo, record, { destinations: { agent: dest }, signal: ac.signal });
    target.reads = 0;
    target.hangFrom = 2;
    target.onHang = () => ac.abort(new Error("lock lost (test)"));
    await expect(applyRestore(repo, plan)).rejects.toThrow("lock lost (test)");
    expect(tempLeft(dest)).toEqual([]);
    expect(listFiles(dest).filter((f) => f.endsWith("big.jsonl"))).toEqual([]);
  });
});

describe("restore from a remote target (shared reads across files)", () => {
  it("is byte-identical, and a failed shared read fails only the files cut from it, cleanly", async () => {
    const probe = new ProbeTarget(sb.repo);
    const repo = await open(new RemoteLike(probe));
    const dest = path.join(sb.root, "dest-remote");
    mkdirSync(dest);
    const report = await restoreSnapshot(repo, record, { destinations: { agent: dest } });
    expect(report.failed).toEqual([]);
    for (const [rel, data] of source) expect(readFileSync(path.join(dest, rel)).equals(data), rel).toBe(true);
    const sharedReads = probe.reads;

    const dest2 = path.join(sb.root, "dest-remote-fail");
    mkdirSync(dest2);
    const repo2 = await open(new RemoteLike(probe));
    probe.failAt = middleOfBig(repo2);
    const failed = await restoreSnapshot(repo2, record, { destinations: { agent: dest2 } });
    expect(failed.failed.map((f) => f.path)).toContain("sessions/--p--/big.jsonl");
    for (const f of failed.failed) expect(f).toMatchObject({ kind: "io", error: expect.stringMatching(/cannot be read: connection reset by the test$/) });
    for (const f of failed.files) expect(readFileSync(path.join(dest2, f.path)).equals(source.get(f.path)!), f.path).toBe(true);
    for (const f of failed.failed) expect(listFiles(dest2).map((x) => path.relative(dest2, x))).not.toContain(f.path);
    expect(tempLeft(dest2)).toEqual([]);
    // Fewer requests than frames: consecutive frames of several files come in one read.
    const frames = new Set([...nodes.values()].flatMap((n) => (n.content ?? []).map((id) => `${repo.index.get(id)!.pack}:${repo.index.get(id)!.offset}`)));
    expect(sharedReads).toBeLessThan(frames.size);
  });
});

describe("the built CLI (worker threads, reused buffers)", () => {
  /** A sandbox whose repository holds one snapshot of the source files, taken by the CLI. */
  async function cliSandbox(label: string): Promise<Sandbox> {
    const cliSb = makeSandbox(label);
    for (const [rel, data] of source) writeFileExact(path.join(cliSb.agentDir, rel), data, 0o600);
    await initRepo(cliSb);
    await snapshot(cliSb);
    return cliSb;
  }

  it("restores the same files byte-identical", async () => {
    const cliSb = await cliSandbox("pipeline-cli");
    try {
      const dest = cliSb.dir("dest");
      const r = await restoreJson(cliSb, ["latest", "--target", dest]);
      expect(r.failed).toEqual([]);
      for (const [rel, data] of source) expect(readFileSync(path.join(dest, rel)).equals(data), rel).toBe(true);
      expect(tempLeft(dest)).toEqual([]);
    } finally {
      cliSb.cleanup();
    }
  });

  it("a blob that does not match its id, through the built CLI whose decoding threads write the files themselves: that file is refused and absent, exit 3 (damage), the others exact", async () => {
    const cliSb = await cliSandbox("pipeline-cli-damage");
    try {
      const repo = await Repository.open(new LocalTarget(cliSb.repo), (await readKeyFile(path.join(cliSb.configHome, "pi-guard", "key")))!);
      await repo.loadIndex();
      const [snap] = await repo.listSnapshots();
      const reader = new BlobReader(repo, new SealPool(0));
      let ids: string[] = [];
      for await (const n of readTree(reader, snap.snapshot)) if (n.path === "sessions/--p--/big.jsonl") ids = n.content!;
      damageBlobInRawFrame(repo, cliSb.repo, ids.slice(ids.length / 3), 7, 0x40);

      const dest = cliSb.dir("dest");
      // One worker, started for jobs of 256 KiB and more: the big file's jobs are opened and written there.
      const r = await cli(cliSb, ["restore", "latest", "--target", dest, "--json"], { env: { PI_GUARD_WORKERS: "1" } });
      expect(r.code, r.stderr).toBe(3);
      const report = r.json<RestoreJson>();
      expect(report.failed).toEqual([expect.objectContaining({ path: "sessions/--p--/big.jsonl", kind: "damaged", error: expect.stringMatching(/does not match its id/) })]);
      const others = [...source.keys()].filter((k) => !k.endsWith("big.jsonl")).sort();
      expect(report.files.map((f) => f.path).sort()).toEqual(others);
      expect(listFiles(dest).map((f) => path.relative(dest, f)).sort()).toEqual(others);
      for (const rel of others) expect(readFileSync(path.join(dest, rel)).equals(source.get(rel)!), rel).toBe(true);
      expect(tempLeft(dest)).toEqual([]);
    } finally {
      cliSb.cleanup();
    }
  });
});
