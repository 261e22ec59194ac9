import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { Chunker, DATA_CHUNKER, gearTable } from "../../src/repo/chunker.js";
import { BlobType, decodeIndex, decodePackHeader, encodeIndex, encodePackHeader } from "../../src/repo/format.js";
import { decrypt, encrypt } from "../../src/repo/crypto.js";
import { RepoError } from "../../src/repo/errors.js";
import { selectSnapshot } from "../../src/restore/select.js";
import type { SnapshotRecord } from "../../src/repo/repository.js";
import { VERSION } from "../../src/version.js";
import { MemoryIndex } from "../../src/repo/memory-index.js";

const jsonl = (n: number) =>
  Buffer.from(Array.from({ length: n }, (_, i) => JSON.stringify({ type: "message", id: i.toString(16).padStart(8, "0"), text: `${i} ${"lorem ipsum ".repeat(i % 40)}` })).join("\n") + "\n");

describe("chunker", () => {
  const chunker = new Chunker(DATA_CHUNKER, gearTable(Buffer.from("seed")));
  const cuts = (buf: Buffer) => [...chunker.split(buf)];

  it("keeps chunks within min and max, and covers the input exactly", () => {
    const data = jsonl(20000);
    const all = cuts(data);
    expect(all[0][0]).toBe(0);
    expect(all.at(-1)![1]).toBe(data.length);
    for (let i = 0; i < all.length; i++) {
      if (i > 0) expect(all[i][0]).toBe(all[i - 1][1]);
      const len = all[i][1] - all[i][0];
      expect(len).toBeLessThanOrEqual(DATA_CHUNKER.max);
      if (i < all.length - 1) expect(len).toBeGreaterThan(DATA_CHUNKER.min);
    }
  });

  it("re-chunking a grown file from its old last chunk equals a full re-chunk", () => {
    const before = jsonl(8000);
    const after = Buffer.concat([before, jsonl(50)]);
    const old = cuts(before);
    const lastStart = old.at(-1)![0];
    const resumed = cuts(after.subarray(lastStart)).map(([a, b]) => [a + lastStart, b + lastStart]);
    const full = cuts(after);
    expect([...old.slice(0, -1), ...resumed]).toEqual(full);
  });

  it("a different seed cuts elsewhere (the gear table is per repository)", () => {
    const other = new Chunker(DATA_CHUNKER, gearTable(Buffer.from("other")));
    const data = jsonl(8000);
    expect([...other.split(data)]).not.toEqual(cuts(data));
  });
});

describe("binary formats", () => {
  const id = () => randomBytes(32).toString("hex");
  it("pack headers and index files round-trip", () => {
    const frames = [
      { length: 100, blobs: [{ type: BlobType.Data, id: id(), rawLength: 40 }, { type: BlobType.Tree, id: id(), rawLength: 60 }] },
      { length: 77, blobs: [{ type: BlobType.Data, id: id(), rawLength: 90 }] },
    ];
    const blobs = decodePackHeader(encodePackHeader(frames), "test");
    expect(blobs.map((b) => [b.offset, b.length, b.inFrame, b.rawLength])).toEqual([[0, 100, 0, 40], [0, 100, 40, 60], [100, 77, 0, 90]]);
    const index = { supersedes: [id()], packs: [{ id: id(), size: 1234, blobs }] };
    expect(decodeIndex(encodeIndex(index), "test")).toEqual(index);
  });

  it("truncated or foreign bytes are rejected as corrupt, never misread", () => {
    const index = encodeIndex({ supersedes: [], packs: [{ id: id(), size: 1, blobs: [{ type: BlobType.Data, id: id(), offset: 0, length: 1, inFrame: 0, rawLength: 1 }] }] });
    expect(() => decodeIndex(index.subarray(0, index.length - 3), "x")).toThrow(RepoError);
    expect(() => decodeIndex(randomBytes(64), "x")).toThrow(RepoError);
    expect(() => decodePackHeader(randomBytes(64), "x")).toThrow(RepoError);
  });

  it("sealed objects fail authentication after any flipped byte", () => {
    const key = randomBytes(32);
    const sealed = encrypt(key, Buffer.from("auth.json contents"));
    expect(decrypt(key, sealed, "x").toString()).toBe("auth.json contents");
    for (const at of [0, 12, sealed.length - 1]) {
      const bad = Buffer.from(sealed);
      bad[at] ^= 1;
      expect(() => decrypt(key, bad, "x")).toThrow(RepoError);
    }
  });
});

describe("choosing a snapshot", () => {
  const rec = (id: string, time: string): SnapshotRecord => ({ id, snapshot: { time } as SnapshotRecord["snapshot"] });
  const snaps = [rec("aaaa1111", "2026-11-30T10:00:00Z"), rec("aaab2222", "2026-11-30T12:00:00Z"), rec("bbbb3333", "2026-11-30T14:00:00Z")];
  const now = new Date("2026-11-30T15:00:00Z");

  it("takes latest, id prefixes, ISO times and phrases", () => {
    expect(selectSnapshot(snaps, "latest", now).id).toBe("bbbb3333");
    expect(selectSnapshot(snaps, "aaab", now).id).toBe("aaab2222");
    expect(selectSnapshot(snaps, "2026-11-30T13:59:59Z", now).id).toBe("aaab2222");
    expect(selectSnapshot(snaps, "2h ago", now).id).toBe("aaab2222");
    expect(selectSnapshot(snaps, "30 minutes ago", now).id).toBe("bbbb3333");
  });

  it("explains what it cannot use", () => {
    expect(() => selectSnapshot(snaps, "aaa", now)).toThrow(/ambiguous|cannot read/);
    expect(() => selectSnapshot(snaps, "aaaa", now)).not.toThrow();
    expect(() => selectSnapshot(snaps, "aa", now)).toThrow(/cannot read/);
    expect(() => selectSnapshot(snaps, "cccc", now)).toThrow(/no snapshot has an id/);
    expect(() => selectSnapshot(snaps, "2026-11-29T00:00:00Z", now)).toThrow(/first snapshot is from/);
    expect(() => selectSnapshot(snaps, "the day the music died", now)).toThrow(/cannot read/);
    expect(() => selectSnapshot([], "latest", now)).toThrow(/no snapshots/);
  });
});

it("the version constant matches package.json", () => {
  expect(VERSION).toBe(JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version);
});

describe("memory index", () => {
  it("finds every blob after growing, ignores a second copy, and knows what it lacks", () => {
    const index = new MemoryIndex();
    const ids: string[] = [];
    for (let p = 0; p < 30; p++) {
      const blobs = Array.from({ length: 1000 }, (_, i) => {
        const id = randomBytes(32).toString("hex");
        ids.push(id);
        return { type: BlobType.Data, id, offset: i * 10, length: 10, inFrame: i, rawLength: 7 + i };
      });
      index.addPack({ id: randomBytes(32).toString("hex"), size: 10_000 + p, blobs });
    }
    expect(index.size).toBe(30_000);
    for (const [k, id] of ids.entries()) {
      const loc = index.get(id)!;
      expect(loc.rawLength).toBe(7 + (k % 1000));
      expect(loc.offset).toBe((k % 1000) * 10);
    }
    const again = index.get(ids[5])!;
    index.addPack({ id: "ff".repeat(32), size: 1, blobs: [{ type: BlobType.Tree, id: ids[5], offset: 0, length: 1, inFrame: 0, rawLength: 1 }] });
    expect(index.size).toBe(30_000);
    expect(index.get(ids[5])).toEqual(again);
    expect(index.has(randomBytes(32).toString("hex"))).toBe(false);
    expect(index.packs.size).toBe(31);
    expect([...index.entries()].map(([id]) => id)).toEqual(ids);
  });

  it("reads an id's hex in either case, and a malformed id (a hostile tree's) as unknown, never as another blob", () => {
    const index = new MemoryIndex();
    // An id with the byte 0x10 at an even position: "0g" there must not read as "10".
    let id = "";
    while (!/^(?:..)*?10/.test(id)) id = randomBytes(32).toString("hex");
    const at = id.match(/^(?:..)*?10/)![0].length - 2;
    index.addPack({ id: "ee".repeat(32), size: 1, blobs: [{ type: BlobType.Data, id, offset: 0, length: 1, inFrame: 0, rawLength: 5 }] });
    expect(index.rawLengthOf(id)).toBe(5);
    expect(index.rawLengthOf(id.toUpperCase())).toBe(5);
    for (const bad of [`${id.slice(0, at)}0g${id.slice(at + 2)}`, `${id.slice(0, 62)}zz`, id.slice(0, 62), `${id}00`, "", "xyz"]) {
      expect(index.rawLengthOf(bad)).toBe(0);
      expect(index.has(bad)).toBe(false);
    }
  });
});

describe("latest and imports", () => {
  const rec = (id: string, time: string, extra: Partial<SnapshotRecord["snapshot"]> = {}): SnapshotRecord => ({
    id,
    snapshot: { time, tags: [], ...extra } as SnapshotRecord["snapshot"],
  });
  const now = new Date("2026-11-30T15:00:00Z");

  it("latest never means an import, even one dated in the future; its id still does", () => {
    const own = rec("aaaa1111", "2026-11-30T10:00:00Z");
    const future = rec("ffff9999", "2031-01-01T00:00:00Z", { tags: ["import"], imported: "2026-11-30T14:00:00Z" });
    const oldImport = rec("eeee8888", "2026-11-30T11:00:00Z", { tags: ["import"] });
    expect(selectSnapshot([own, oldImport, future], "latest", now).id).toBe("aaaa1111");
    expect(selectSnapshot([own, oldImport, future], "ffff", now).id).toBe("ffff9999");
    expect(() => selectSnapshot([oldImport, future], "latest", now)).toThrow(/all snapshots here are imports: name one by id \(eeee8888, ffff9999\)/);
  });
});
