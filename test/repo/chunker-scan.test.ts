// The chunker scans bytes in a work buffer with WebAssembly, and any other buffer with the JS
// loop. Cut points decide blob ids and dedup against every existing repository: the WebAssembly
// scan must cut exactly where the JS loop does, on real and random data, at every chunker size the
// format uses, wherever in the buffer the bytes lie. The pinned digests were computed with the
// chunker before the WebAssembly scan existed (main at 337ecd8).
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { Prng } from "../../bench/prng.js";
import { Chunker, DATA_CHUNKER, gearTable, LIST_CHUNKER, TREE_CHUNKER, type ChunkerParams } from "../../src/repo/chunker.js";

const gear = gearTable(Buffer.from("seed"));
const sessions = Buffer.concat(["before-compaction", "large-session"].map((n) => readFileSync(`test/fixtures/pi-mono-v1/${n}.jsonl`)));
const prng = new Prng("chunker-scan");
const seeded = Buffer.alloc(4 * 1024 * 1024);
for (let i = 0; i < seeded.length; i += 4) seeded.writeUInt32LE(prng.nextU32(), i);
// Long runs of one byte: the hash settles, and cuts come only from the size limits.
const runs = Buffer.concat([Buffer.alloc(300_000, 0x61), sessions.subarray(0, 100_000), Buffer.alloc(300_000, 0)]);

const sizes: [string, ChunkerParams][] = [["data", DATA_CHUNKER], ["tree", TREE_CHUNKER], ["list", LIST_CHUNKER]];

/** Cuts of `data` scanned where it lies (`skew` bytes into a work buffer, or a plain Buffer). */
function cuts(chunker: Chunker, data: Buffer, where: "js" | "wasm", skew = 0): [number, number][] {
  if (where === "js") return [...chunker.split(Buffer.from(data))];
  const work = chunker.workBuffer(data.length + skew).subarray(skew);
  data.copy(work);
  return [...chunker.split(work)];
}

const digest = (list: [number, number][]) => createHash("sha256").update(JSON.stringify(list)).digest("hex").slice(0, 16);

describe("the chunker's WebAssembly scan", () => {
  it("works in memory of its own (not a plain buffer scanned by JS)", () => {
    const work = new Chunker(DATA_CHUNKER, gear).workBuffer(1000);
    expect(work.byteOffset).toBe(1024);
    expect(work.buffer.byteLength % 65536).toBe(0);
  });

  for (const [name, params] of sizes) {
    it(`cuts where the JS loop cuts (${name} chunker)`, () => {
      const chunker = new Chunker(params, gear);
      for (const data of [sessions, seeded, runs, randomBytes(1024 * 1024), sessions.subarray(0, params.min - 1), sessions.subarray(0, params.max + 3)]) {
        const js = cuts(chunker, data, "js");
        expect(cuts(chunker, data, "wasm")).toEqual(js);
        expect(cuts(chunker, data, "wasm", 37)).toEqual(js);
      }
    });
  }

  it("cuts where the chunker cut before it (pinned)", () => {
    const found = sizes.map(([, params]) => {
      const chunker = new Chunker(params, gear);
      return [sessions, seeded, runs].map((data) => {
        const list = cuts(chunker, data, "wasm");
        return `${list.length}:${digest(list)}`;
      });
    });
    expect(found).toEqual(PINNED);
  });
});

/** [data, tree, list] x [sessions, seeded, runs]: count of chunks and a digest of their ranges. */
const PINNED = [
  ["73:507eb310d0910059", "112:158de6e08815b4fa", "7:035af675b4788e97"],
  ["1374:57c78b4ea10ff05e", "1815:ad0e644cb0a4c0aa", "117:37cf4122cbf7178c"],
  ["5703:332e92d5c7ee0848", "7183:4cf77f29a7c1bd84", "467:37b06da576ce2309"],
];
