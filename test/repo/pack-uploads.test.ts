// The snapshot writer stores several packs at once (PackUploads, bounded by the target's limit and
// MAX_PACK_UPLOADS), and a pack upload that fails while others are on the wire fails the snapshot
// without leaving a pack, a staging file or a snapshot behind.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MAX_PACK_UPLOADS, PackUploads } from "../../src/repo/pack-uploads.js";
import { Repository } from "../../src/repo/repository.js";
import { createSnapshot } from "../../src/snapshot/snapshotter.js";
import { LimitTarget } from "../../src/targets/limit.js";
import { MemoryTarget } from "../../src/targets/memory.js";
import { listNames, TargetError, type PutBody, type PutOptions } from "../../src/targets/target.js";
import { TargetWrapper } from "../../src/targets/wrap.js";
import { tempRoot } from "../helpers/tmp.js";

// Seal on this thread: vitest cannot start the .ts worker script.
process.env.PI_GUARD_WORKERS = "0";

/** Holds each pack put until `hold` are in flight (or a second passed), and fails the `failAt`th. */
class PackGate extends TargetWrapper {
  inFlight = 0;
  maxInFlight = 0;
  started = 0;
  private waiting: (() => void)[] = [];

  constructor(
    inner: MemoryTarget,
    private readonly hold: number,
    private readonly failAt?: number,
  ) {
    super(inner);
  }

  override async put(key: string, data: PutBody, opts?: PutOptions): Promise<void> {
    if (!key.startsWith("data/")) return super.put(key, data, opts);
    const n = ++this.started;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.inFlight >= this.hold) for (const w of this.waiting.splice(0)) w();
      else await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        setTimeout(resolve, 1000).unref();
      });
      if (n === this.failAt) throw new TargetError(`cannot reach S3 at 127.0.0.1:1: ECONNRESET during put ${key}`, "io", true);
      await super.put(key, data, opts);
    } finally {
      this.inFlight--;
    }
  }
}

const cred = () => ({ kind: "keyfile" as const, secret: randomBytes(32), path: "test-key" });
const scratch = tempRoot("pack-uploads");
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** An agent dir of `files` random files of 1 MiB: each 1 MiB pack holds about one. */
function agentDir(files: number): string {
  const dir = mkdtempSync(path.join(scratch, "agent-"));
  for (let i = 0; i < files; i++) writeFileSync(path.join(dir, `f${i}.bin`), randomBytes(1024 * 1024));
  return dir;
}

async function repoOn(gate: PackGate): Promise<Repository> {
  return Repository.init(new LimitTarget(gate, 8), cred(), { packSize: 1024 * 1024 });
}

describe("pack uploads", () => {
  it("several packs are stored at once, never more than MAX_PACK_UPLOADS; the snapshot reads back", { timeout: 60_000 }, async () => {
    const memory = new MemoryTarget();
    const gate = new PackGate(memory, MAX_PACK_UPLOADS);
    const repo = await repoOn(gate);
    const dir = agentDir(10);
    const result = await createSnapshot(repo, { roots: [{ name: "agent", path: dir }], filter: { include: [], exclude: [] }, host: "test-host" });
    expect(result.id).toMatch(/^[0-9a-f]{64}$/);
    expect(gate.maxInFlight).toBeGreaterThanOrEqual(2);
    expect(gate.maxInFlight).toBeLessThanOrEqual(MAX_PACK_UPLOADS);
    // Every pack the index names is stored.
    await repo.loadIndex(true);
    const packs = new Set((await listNames(memory, "data")).map((n) => n.split("/").pop()));
    expect(packs.size).toBeGreaterThanOrEqual(10);
    expect(existsSync(repo.stagingDir) ? readdirSync(repo.stagingDir) : []).toEqual([]);
  });

  it("a pack upload that fails while others are in flight: the snapshot fails with its error, no pack, staging file or snapshot is left", { timeout: 60_000 }, async () => {
    const memory = new MemoryTarget();
    const gate = new PackGate(memory, 3, 2);
    const repo = await repoOn(gate);
    const dir = agentDir(10);
    await expect(createSnapshot(repo, { roots: [{ name: "agent", path: dir }], filter: { include: [], exclude: [] }, host: "test-host" })).rejects.toThrow(/ECONNRESET during put data\//);
    expect(gate.maxInFlight).toBeGreaterThanOrEqual(2);
    // No upload is still running once the snapshot has failed.
    expect(gate.inFlight).toBe(0);
    expect(await listNames(memory, "data")).toEqual([]);
    expect(await listNames(memory, "index")).toEqual([]);
    expect(await listNames(memory, "snapshots")).toEqual([]);
    expect(existsSync(repo.stagingDir) ? readdirSync(repo.stagingDir) : []).toEqual([]);
  });
});

describe("PackUploads", () => {
  it("after a failure no new upload starts, and drain rejects with the first failure", async () => {
    const uploads = new PackUploads(2);
    let second = false;
    await uploads.start(() => Promise.reject(new Error("first")));
    await uploads.settle();
    await expect(
      uploads.start(async () => {
        second = true;
      }),
    ).rejects.toThrow("first");
    expect(second).toBe(false);
    await expect(uploads.drain()).rejects.toThrow("first");
    expect(() => new PackUploads(0)).toThrow(RangeError);
  });
});
