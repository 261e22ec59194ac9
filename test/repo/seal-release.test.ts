// A worker's sealed frames are memory made on another thread: V8 counts it as external and, once
// the frames outlived a few young collections (written to their pack file), freed it only at a full
// collection, after up to 64 MB of them had piled up (the peak of a 1 GiB S3 snapshot). `release`
// frees a job's reply as soon as the caller is done with it; an inline job's parts are left alone.

import { randomBytes } from "node:crypto";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { SealPool as SealPoolType } from "../../src/repo/seal-pool.js";
import { PROJECT_ROOT } from "../helpers/root.js";

// The built module (npm run build): its worker is plain JavaScript, which vitest's threads load
// where the .ts one fails ("Unknown file extension").
const { SealPool } = (await import(path.join(PROJECT_ROOT, "dist/src/repo/seal-pool.js"))) as { SealPool: typeof SealPoolType };
type SealPool = SealPoolType;

const pools: SealPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

/** A seal job big enough to go to a worker (batches under 256 KiB run inline while none is started). */
async function seal(pool: SealPool): Promise<Buffer[]> {
  pools.push(pool);
  const data = randomBytes(512 * 1024);
  const buffer = data.buffer.slice(data.byteOffset, data.byteOffset + data.length) as ArrayBuffer;
  return pool.run({ op: "seal", key: randomBytes(32), buffer, frames: [0, 256 * 1024, 256 * 1024, 512 * 1024] });
}

describe("SealPool.release", () => {
  it("frees a worker's reply at once: its parts are detached", async () => {
    const parts = await seal(new SealPool(1));
    expect(parts).toHaveLength(2);
    expect(parts[0].buffer.byteLength).toBeGreaterThan(512 * 1024);
    new SealPool(1).release(parts); // another pool's reply is not its own to free
    expect(parts[0].buffer.byteLength).toBeGreaterThan(512 * 1024);
    pools.at(0)!.release(parts);
    expect(parts[0].buffer.byteLength).toBe(0);
    expect(parts.map((p) => p.length)).toEqual([0, 0]);
    pools.at(0)!.release(parts); // twice is harmless
  });

  it("leaves an inline job's parts alone", async () => {
    const pool = new SealPool(0);
    const parts = await seal(pool);
    const copy = parts.map((p) => Buffer.from(p));
    pool.release(parts);
    expect(parts).toEqual(copy);
    expect(parts[0].length).toBeGreaterThan(256 * 1024);
  });
});

describe("SealPool 'when-behind'", () => {
  it("seals on the calling thread only when the worker has two batches queued behind the one it works on", async () => {
    const pool = new SealPool(1, "when-behind");
    pools.push(pool);
    const key = randomBytes(32);
    // Posted in one go: no reply can arrive in between, so the worker's queue only grows.
    const jobs = Array.from({ length: 4 }, () => {
      const data = randomBytes(512 * 1024);
      const buffer = data.buffer.slice(data.byteOffset, data.byteOffset + data.length) as ArrayBuffer;
      return pool.run({ op: "seal", key, buffer, frames: [0, data.length] });
    });
    const parts = await Promise.all(jobs);
    const copies = parts.map((p) => p.map((b) => Buffer.from(b)));
    parts.forEach((p) => pool.release(p));
    // release detaches a worker's reply and leaves an inline job's parts alone.
    expect(parts.map((p) => p[0].length === 0)).toEqual([true, true, true, false]);
    expect(parts[3]).toEqual(copies[3]);
  });
});
