// Issue 20, memory: the metadata cache and the snapshot listings are read and written a bounded
// piece at a time (a cold first command at 100,000 snapshots held 290-390 MB): a cache batch holds
// at most BATCH_BYTES, a scan reads one batch at a time, and a listing object is decoded as a
// stream. These check that the pieces add up to exactly what the whole-buffer forms give.

import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { decode, decodePieces, encode } from "../../src/repo/compress.js";
import { BATCH_BYTES, MetaCache } from "../../src/repo/meta-cache.js";
import { checkedListingEntries, decodeListing, encodeListing } from "../../src/repo/snapshot-listing.js";
import { NameSlots } from "../../src/repo/name-slots.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
beforeEach(() => void (sb = makeSandbox("meta-stream")));
afterEach(() => sb.cleanup());

const id = (i: number) => i.toString(16).padStart(64, "0");
/** Snapshot-like JSON bodies, compressible as real ones are, of varied lengths. */
function bodies(n: number, size = 430): [string, Buffer][] {
  return Array.from({ length: n }, (_, i) => [id(i), Buffer.from(JSON.stringify({ time: new Date(i * 1000).toISOString(), pad: "x".repeat(size + (i % 97)), r: randomBytes(8).toString("hex") }))]);
}
/** Records as one string each: vitest compares 20,000 Buffers by deep equality very slowly. */
const flat = (records: Iterable<[string, Buffer]>) => [...records].map(([k, b]) => `${k}:${b.toString("latin1")}`);
const batchesIn = (file: string) => {
  const raw = readFileSync(file);
  let n = 0;
  for (let o = 0; o < raw.length; n++) o += 13 + raw.readUInt32LE(o + 9) + 32;
  return n;
};

describe("metadata cache batches", () => {
  it("a put of more than BATCH_BYTES is split into bounded batches; scan and entries read back every record, in order", async () => {
    const cache = new MetaCache(path.join(sb.root, "cache"), randomBytes(32), "repo", () => undefined);
    const items = bodies(Math.ceil((2.5 * BATCH_BYTES) / 500));
    await cache.put("snapshots", items);
    const file = path.join(sb.root, "cache", "snapshots.log");
    const raw = readFileSync(file);
    expect(batchesIn(file)).toBe(3);
    for (let o = 0; o < raw.length; o += 13 + raw.readUInt32LE(o + 9) + 32) expect(raw.readUInt32LE(o + 9)).toBeLessThanOrEqual(BATCH_BYTES);
    const scanned: [string, Buffer][] = [];
    const { untidy } = await cache.scan("snapshots", (name, body) => void scanned.push([name, Buffer.from(body)]));
    expect(untidy).toBe(false);
    expect(flat(scanned)).toEqual(flat(items));
    expect(flat(await cache.entries("snapshots"))).toEqual(flat(items));
  });

  it("a scan stops at a torn batch and says so; the batches before it still count", async () => {
    const warnings: string[] = [];
    const key = randomBytes(32);
    const cache = new MetaCache(path.join(sb.root, "cache"), key, "repo", (m) => warnings.push(m));
    const items = bodies(Math.ceil((1.5 * BATCH_BYTES) / 500));
    await cache.put("rows", items);
    const file = path.join(sb.root, "cache", "rows.log");
    const raw = readFileSync(file);

    writeFileSync(file, raw.subarray(0, raw.length - 100)); // the second batch torn
    const reader = new MetaCache(path.join(sb.root, "cache"), key, "repo", (m) => warnings.push(m));
    const scanned: string[] = [];
    const { untidy } = await reader.scan("rows", (name) => void scanned.push(name));
    expect(untidy).toBe(true);
    expect(warnings.length).toBe(1);
    expect(scanned).toEqual(items.slice(0, raw.readUInt32LE(5)).map(([n]) => n)); // the first batch's count
  });
});

describe("snapshot listings decoded as a stream", () => {
  it("gives exactly the entries decodeListing gives, across piece boundaries", () => {
    const entries = bodies(3000);
    const plain = encode(encodeListing(entries));
    const whole = decodeListing(decode(plain, "listing"), "listing");
    const streamed: [string, Buffer][] = [];
    for (const [k, body] of checkedListingEntries(() => decodePieces(plain, "listing"), "listing")) streamed.push([k, Buffer.from(body)]);
    expect(flat(streamed)).toEqual(flat(whole));
    expect(flat(streamed)).toEqual(flat(entries));
  });

  it("a malformed listing throws before giving any entry (trailing bytes, truncation, a wrong magic)", () => {
    const listing = encodeListing(bodies(500));
    for (const bad of [Buffer.concat([listing, Buffer.of(0)]), listing.subarray(0, listing.length - 1), Buffer.concat([Buffer.from("XXXX"), listing.subarray(4)])]) {
      const plain = encode(bad);
      expect(() => decodeListing(decode(plain, "l"), "l")).toThrow(/trailing|truncated|not a snapshot listing/);
      let given = 0;
      expect(() => {
        for (const entry of checkedListingEntries(() => decodePieces(plain, "l"), "l")) given += entry ? 1 : 0;
      }).toThrow(/trailing|truncated|not a snapshot listing/);
      expect(given).toBe(0);
    }
  });

  it("a truncated zstd frame is damage, not a short listing", () => {
    const plain = encode(encodeListing(bodies(500)));
    expect(() => [...decodePieces(plain.subarray(0, plain.length - 10), "l")]).toThrow(/does not decompress|truncated/);
  });
});

describe("NameSlots", () => {
  it("finds each name's position as a Map built from the list does, a name listed twice at its later place", () => {
    const names = Array.from({ length: 5000 }, (_, i) => id(i * 7919));
    names.push(names[10], "not-hex", "");
    const slots = new NameSlots(names);
    const map = new Map(names.map((n, i) => [n, i]));
    expect(slots.size).toBe(map.size);
    for (const n of map.keys()) expect(slots.get(n)).toBe(map.get(n));
    for (const n of [id(1), "x", id(7919 * 5000)]) expect(slots.has(n)).toBe(false);
  });
});
