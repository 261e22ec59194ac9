// readTreeReusing (the session catalog's walk of many snapshots) must yield exactly readTree's
// nodes while skipping the leaf tree blobs the previous walk read. Leaves are cut from a JSON-lines
// stream at every awkward place: inside a line, right after a newline, inside a multi-byte
// character, through a line spanning three blobs, around invalid UTF-8 bytes and empty lines, and
// one leaf named twice. readTree over the same blobs is the oracle.

import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { readTree, readTreeReusing, treeSource, type LeafCache } from "../../src/snapshot/tree.js";
import type { TreeNode } from "../../src/repo/format.js";

const node = (path: string, content: string[]): TreeNode => ({ root: "agent", path, type: "file", mode: 0o644, mtimeMs: 1, size: content.length, content });
const line = (n: TreeNode) => Buffer.from(JSON.stringify(n) + "\n");

/** Blobs by id, and the ids every read asked for (in order). */
function store() {
  const blobs = new Map<string, Buffer>();
  const asked: string[] = [];
  const put = (b: Buffer) => {
    const id = createHash("sha256").update(b).digest("hex");
    blobs.set(id, b);
    return id;
  };
  const source = treeSource(async (ids) => {
    asked.push(...ids);
    return ids.map((id) => blobs.get(id)!);
  }, 2);
  return { put, asked, source };
}

/** The stream cut at the given offsets into leaves, stored; their ids in order. */
const cut = (put: (b: Buffer) => string, stream: Buffer, at: number[]) => [0, ...at].map((s, i, all) => put(stream.subarray(s, i + 1 < all.length ? all[i + 1] : stream.length)));

async function walk(it: AsyncIterable<TreeNode>): Promise<TreeNode[]> {
  const out: TreeNode[] = [];
  for await (const n of it) out.push(n);
  return out;
}

describe("readTreeReusing", () => {
  it("yields readTree's nodes wherever the leaves are cut, and reads only the leaves the last walk did not", async () => {
    const { put, asked, source } = store();
    const a = line(node("sessions/a.jsonl", ["11", "12"]));
    // "é" is two bytes in UTF-8 and "🦜" four: a cut inside either leaves half a character in each blob.
    const b = line(node("sessions/bé🦜.jsonl", ["21"]));
    const long = line(node(`sessions/${"x".repeat(300)}.jsonl`, ["31", "32", "33"]));
    // Invalid UTF-8 inside a JSON string: both readers must turn it into the same U+FFFD.
    const bad = Buffer.concat([Buffer.from('{"root":"agent","path":"sessions/bad'), Buffer.from([0xe2, 0x82]), Buffer.from('.jsonl","type":"file","mode":420,"mtimeMs":1,"content":[]}\n')]);
    const c = line(node("sessions/c.jsonl", ["41"]));
    const stream = Buffer.concat([a, Buffer.from("\n"), b, long, bad, c]);
    const inB = a.length + 1 + Buffer.from('{"root":"agent","path":"sessions/b').length;
    const inLong = a.length + 1 + b.length + 40;
    const inBad = a.length + 1 + b.length + long.length + Buffer.from('{"root":"agent","path":"sessions/bad').length + 1;
    const cuts = [5, a.length, inB + 1, inB + 3, inLong, inLong + 100, inBad, stream.length - 3];
    const first = cut(put, stream, cuts);
    const expected = await walk(readTree(source, { tree: first }));
    expect(expected.map((n) => n.path)).toEqual(["sessions/a.jsonl", "sessions/bé🦜.jsonl", `sessions/${"x".repeat(300)}.jsonl`, "sessions/bad\ufffd.jsonl", "sessions/c.jsonl"]);

    const cache: LeafCache = { leaves: new Map(), spans: new Map() };
    asked.length = 0;
    const firstWalk = await walk(readTreeReusing(source, { tree: first }, cache));
    expect(firstWalk).toEqual(expected);
    expect(asked).toEqual(first);

    // The next snapshot: one file changed, in the middle; its leaves around it are new, the rest the same ids.
    const changed = Buffer.concat([a, Buffer.from("\n"), b, line(node(`sessions/${"x".repeat(300)}.jsonl`, ["31", "32", "33", "34"])), bad, c]);
    const second = cut(put, changed, [...cuts.slice(0, 4), inLong, inLong + 104, inBad + 4, changed.length - 3]);
    // ...named twice over, as a tree holding the same lines twice names its leaves: each is read once.
    const tree = [...second, ...second];
    const oracle = await walk(readTree(source, { tree }));
    asked.length = 0;
    const secondWalk = await walk(readTreeReusing(source, { tree }, cache));
    expect(secondWalk).toEqual(oracle);
    // The first line runs across two unchanged leaves: it is taken from the last walk, not parsed again.
    expect(secondWalk[0]).toBe(firstWalk[0]);
    const fresh = [...new Set(second.filter((id) => !first.includes(id)))];
    expect(fresh.length).toBeGreaterThan(0);
    expect(fresh.length).toBeLessThan(second.length);
    expect(asked).toEqual(fresh);
  });

  it("parses a line across leaves again when any of its leaves changed, not only its last", async () => {
    const { put, source } = store();
    const [x, y] = [line(node("sessions/x.jsonl", ["1", "2"])), line(node("sessions/y.jsonl", ["1", "2"]))];
    const end = put(x.subarray(41));
    expect(y.subarray(41).equals(x.subarray(41))).toBe(true);
    const cache: LeafCache = { leaves: new Map(), spans: new Map() };
    expect((await walk(readTreeReusing(source, { tree: [put(x.subarray(0, 41)), end] }, cache))).map((n) => n.path)).toEqual(["sessions/x.jsonl"]);
    expect((await walk(readTreeReusing(source, { tree: [put(y.subarray(0, 41)), end] }, cache))).map((n) => n.path)).toEqual(["sessions/y.jsonl"]);
  });

  it("keeps only the last walk's leaves, and reads a leaf again once a walk without it came between", async () => {
    const { put, asked, source } = store();
    const one = put(Buffer.concat([line(node("one", ["1"])), line(node("two", ["2"]))]));
    const other = put(line(node("three", ["3"])));
    const cache: LeafCache = { leaves: new Map(), spans: new Map() };
    const before = await walk(readTreeReusing(source, { tree: [one] }, cache));
    asked.length = 0;
    const again = await walk(readTreeReusing(source, { tree: [one] }, cache));
    expect(asked).toEqual([]);
    expect(again).toEqual(before);
    // A line wholly inside a reused leaf is the same object as last time.
    expect(again[1]).toBe(before[1]);
    await walk(readTreeReusing(source, { tree: [other] }, cache));
    expect([...cache.leaves.keys()]).toEqual([other]);
    asked.length = 0;
    expect((await walk(readTreeReusing(source, { tree: [one] }, cache))).map((n) => n.path)).toEqual(["one", "two"]);
    expect(asked).toEqual([one]);
  });
});
