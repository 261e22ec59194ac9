// CountingTarget: the requests that reach the storage, by billing class, counted exactly.
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CountingTarget } from "../../src/targets/counting.js";
import { MemoryTarget } from "../../src/targets/memory.js";
import { fileBody, ObjectNotFound } from "../../src/targets/target.js";
import { targetConformance } from "./conformance.js";
import { tempRoot } from "../helpers/tmp.js";

targetConformance("counting(memory)", { make: async () => new CountingTarget(new MemoryTarget(), { partSize: 5 * 1024 * 1024, threshold: 64 * 1024 * 1024 }) });

describe("CountingTarget", () => {
  const scratch = tempRoot("counting");
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("counts puts, deletes and the parts of a multipart upload (a stream above the threshold) as PUTs, gets/ranges/range streams/heads as GETs, listings by page; failures count too", async () => {
    const t = new CountingTarget(new MemoryTarget(), { partSize: 1000, threshold: 2000 });
    await t.put("index/a", Buffer.from("a"));
    await t.put("index/b", Buffer.from("b"));
    await t.get("index/a");
    await t.getRange("index/a", 0, 1);
    for await (const _ of t.readRange("index/a", 0, 1)) void _; // a range stream is one GET
    await t.head("index/b");
    await t.head("index/none");
    await expect(t.get("index/none")).rejects.toBeInstanceOf(ObjectNotFound);
    await t.delete("index/b");
    const small = path.join(scratch, "small");
    writeFileSync(small, Buffer.alloc(1000));
    await t.put("data/00/small", fileBody(small, 1000));
    const single = path.join(scratch, "single"); // above a part, not above the threshold: one PUT
    writeFileSync(single, Buffer.alloc(2000));
    await t.put("data/00/single", fileBody(single, 2000));
    const big = path.join(scratch, "big");
    writeFileSync(big, Buffer.alloc(3500));
    await t.put("data/00/big", fileBody(big, 3500));
    expect(t.counts).toEqual({ puts: 2 + 1 + 1 + 1 + (4 + 2), gets: 6, lists: 0 });
    for (let i = 0; i < 2500; i++) await t.put(`snapshots/${String(i).padStart(4, "0")}`, Buffer.from("s"));
    const before = t.counts.lists;
    let n = 0;
    for await (const _ of t.list("snapshots")) n++;
    expect(n).toBe(2500);
    expect(t.counts.lists - before).toBe(3);
    for await (const _ of t.list("locks")) n++;
    expect(t.counts.lists - before).toBe(4);
  });
});
