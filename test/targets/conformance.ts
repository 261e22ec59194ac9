// One behaviour for every target: each target's test file calls targetConformance with a factory.
// Keys use the repository's real shapes (data/ab/<hex>, locks/<hex>, config).

import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileBody, ObjectExists, ObjectNotFound, type ObjectInfo, type PutStream, type Target } from "../../src/targets/target.js";
import { tempRoot } from "../helpers/tmp.js";

export interface ConformanceOptions {
  /** A fresh, empty target for each test (tests do not share objects). */
  make(): Promise<Target>;
  /** Objects a broken writer might leave that list must not show (written behind the target's back). */
  plantTemp?(target: Target, key: string): Promise<void>;
  /** Whether `ifAbsent` is atomic on this target, or head-then-put (reported, not asserted). */
  timeoutMs?: number;
}

async function collectList(t: Target, prefix: string): Promise<ObjectInfo[]> {
  const out: ObjectInfo[] = [];
  for await (const o of t.list(prefix)) out.push(o);
  return out;
}

/** `data` as a stream body that is not a file, in chunks of `chunk` bytes. */
function streamOf(data: Buffer, chunk = 64 * 1024): PutStream {
  return {
    size: data.length,
    async *open() {
      for (let at = 0; at < data.length; at += chunk) yield data.subarray(at, at + chunk);
    },
  };
}

export function targetConformance(name: string, opts: ConformanceOptions): void {
  const timeout = opts.timeoutMs ?? 20_000;
  describe(`target conformance: ${name}`, () => {
    let scratch: string;
    beforeAll(() => {
      scratch = tempRoot("conf");
    });
    afterAll(() => rmSync(scratch, { recursive: true, force: true }));
    const localFile = (data: Buffer) => {
      const f = path.join(scratch, `f-${randomBytes(4).toString("hex")}`);
      writeFileSync(f, data);
      return f;
    };
    /** A finished local file as a put body, as a staged pack is handed over. */
    const fileOf = (data: Buffer) => fileBody(localFile(data), data.length);

    it("put then get returns the same bytes; head gives the size", { timeout }, async () => {
      const t = await opts.make();
      const data = randomBytes(3000);
      await t.put("index/aa11", data);
      expect(Buffer.compare(await t.get("index/aa11"), data)).toBe(0);
      expect(await t.head("index/aa11")).toMatchObject({ key: "index/aa11", size: 3000 });
      await t.put("empty", Buffer.alloc(0));
      expect((await t.get("empty")).length).toBe(0);
      expect(await t.head("empty")).toMatchObject({ key: "empty", size: 0 });
    });

    it("a stored object does not change when the caller reuses its buffer", { timeout }, async () => {
      const t = await opts.make();
      const data = Buffer.from("original bytes");
      await t.put("snapshots/01", data);
      data.fill(0);
      expect((await t.get("snapshots/01")).toString()).toBe("original bytes");
    });

    it("ranged get: inside, at the end, past the end, and from past the end", { timeout }, async () => {
      const t = await opts.make();
      const data = randomBytes(1000);
      await t.put("data/ab/ab01", data);
      expect(Buffer.compare(await t.getRange("data/ab/ab01", 100, 50), data.subarray(100, 150))).toBe(0);
      expect(Buffer.compare(await t.getRange("data/ab/ab01", 996, 4), data.subarray(996))).toBe(0);
      expect(Buffer.compare(await t.getRange("data/ab/ab01", 990, 100), data.subarray(990))).toBe(0);
      expect((await t.getRange("data/ab/ab01", 1000, 10)).length).toBe(0);
      expect((await t.getRange("data/ab/ab01", 5000, 10)).length).toBe(0);
      expect((await t.getRange("data/ab/ab01", 10, 0)).length).toBe(0);
    });

    it("range streams: the same bytes as getRange, in order; an early break ends the request and the target goes on", { timeout: Math.max(timeout, 60_000) }, async () => {
      const t = await opts.make();
      // Big enough to arrive in many chunks from every target.
      const data = randomBytes(3 * 1024 * 1024 + 777);
      await t.put("data/ab/ab02", data);
      const read = async (offset: number, length: number) => {
        const chunks: Buffer[] = [];
        for await (const c of t.readRange("data/ab/ab02", offset, length)) chunks.push(Buffer.from(c));
        return { bytes: Buffer.concat(chunks), chunks: chunks.length };
      };
      const whole = await read(0, data.length);
      expect(whole.bytes.equals(data)).toBe(true);
      expect(whole.chunks).toBeGreaterThan(1);
      expect((await read(1_000_001, 2_000_000)).bytes.equals(data.subarray(1_000_001, 3_000_001))).toBe(true);
      expect((await read(data.length - 10, 100)).bytes.equals(data.subarray(data.length - 10))).toBe(true);
      expect((await read(data.length, 10)).bytes.length).toBe(0);
      expect((await read(data.length + 5000, 10)).bytes.length).toBe(0);
      expect((await read(10, 0)).bytes.length).toBe(0);
      // Stop after the first chunk, several times over: nothing stays open or blocked.
      for (let i = 0; i < 12; i++) {
        for await (const c of t.readRange("data/ab/ab02", 0, data.length)) {
          expect(c.length).toBeGreaterThan(0);
          break;
        }
      }
      expect(Buffer.compare(await t.getRange("data/ab/ab02", 5, 5), data.subarray(5, 10))).toBe(0);
      await expect(read(0, 10).then(() => t.readRange("data/00/00ff", 0, 10)[Symbol.asyncIterator]().next())).rejects.toBeInstanceOf(ObjectNotFound);
    });

    it("missing objects: head → undefined, get and getRange → ObjectNotFound naming the key", { timeout }, async () => {
      const t = await opts.make();
      expect(await t.head("config")).toBeUndefined();
      await expect(t.get("keys/00ff")).rejects.toBeInstanceOf(ObjectNotFound);
      await expect(t.get("keys/00ff")).rejects.toMatchObject({ key: "keys/00ff" });
      await expect(t.getRange("data/00/00ff", 0, 10)).rejects.toBeInstanceOf(ObjectNotFound);
    });

    it("list: only the prefix, sorted, nested folders, sizes, no temp objects", { timeout }, async () => {
      const t = await opts.make();
      const keys = ["data/cd/cd02", "data/ab/ab02", "data/ab/ab01", "index/ff", "data/00/0001", "snapshots/aa", "datax/zz"];
      for (const [i, k] of keys.entries()) await t.put(k, Buffer.alloc(i + 1, 7));
      if (opts.plantTemp) await opts.plantTemp(t, "data/ab/ab03");
      const data = await collectList(t, "data");
      expect(data.map((o) => o.key)).toEqual(["data/00/0001", "data/ab/ab01", "data/ab/ab02", "data/cd/cd02"]);
      expect(data.find((o) => o.key === "data/ab/ab01")?.size).toBe(3);
      expect((await collectList(t, "data/")).map((o) => o.key)).toEqual(data.map((o) => o.key));
      expect((await collectList(t, "data/ab")).map((o) => o.key)).toEqual(["data/ab/ab01", "data/ab/ab02"]);
      expect(await collectList(t, "locks")).toEqual([]);
      const all = (await collectList(t, "")).map((o) => o.key);
      expect(all).toEqual([...keys].sort());
    });

    it("delete removes an object, and deleting a missing one is not an error", { timeout }, async () => {
      const t = await opts.make();
      await t.put("locks/0a", Buffer.from("x"));
      await t.delete("locks/0a");
      expect(await t.head("locks/0a")).toBeUndefined();
      await expect(t.get("locks/0a")).rejects.toBeInstanceOf(ObjectNotFound);
      await t.delete("locks/0a");
      await t.delete("locks/never-was");
      expect(await collectList(t, "locks")).toEqual([]);
    });

    it("a put over an existing key replaces it whole (a lock refresh)", { timeout }, async () => {
      const t = await opts.make();
      await t.put("locks/0b", Buffer.from("first version of the lock, longer"));
      await t.put("locks/0b", Buffer.from("second"));
      expect((await t.get("locks/0b")).toString()).toBe("second");
      expect(await t.head("locks/0b")).toMatchObject({ key: "locks/0b", size: 6 });
      expect((await collectList(t, "locks")).length).toBe(1);
    });

    it("head and list give the storage's last-modified time; a rewrite (a lock refresh) moves it forward", { timeout }, async () => {
      const t = await opts.make();
      await t.put("locks/0c", Buffer.from("first"));
      const first = await t.head("locks/0c");
      expect(Number.isFinite(first?.modified)).toBe(true);
      // The tests' storage runs on this machine; a real one only needs to agree with itself.
      expect(Math.abs(first!.modified! - Date.now())).toBeLessThan(5 * 60_000);
      const listed = await collectList(t, "locks");
      expect(listed.map((o) => [o.key, o.modified])).toEqual([["locks/0c", first!.modified]]);
      // S3 keeps LastModified to the second: wait past a second boundary.
      await new Promise((r) => setTimeout(r, 1100));
      await t.put("locks/0c", Buffer.from("second"));
      const second = await t.head("locks/0c");
      expect(second!.modified!).toBeGreaterThan(first!.modified!);
      await t.put("locks/0d", Buffer.from("other"));
      expect((await t.head("locks/0d"))!.modified!).toBeGreaterThanOrEqual(second!.modified!);
    });

    it("ifAbsent: the first put wins, the second rejects with ObjectExists and changes nothing", { timeout }, async () => {
      const t = await opts.make();
      await t.put("config", Buffer.from("one"), { ifAbsent: true });
      await expect(t.put("config", Buffer.from("two"), { ifAbsent: true })).rejects.toBeInstanceOf(ObjectExists);
      expect((await t.get("config")).toString()).toBe("one");
      await expect(t.put("config", fileOf(Buffer.from("three")), { ifAbsent: true })).rejects.toBeInstanceOf(ObjectExists);
      await expect(t.put("config", streamOf(Buffer.from("four")), { ifAbsent: true })).rejects.toBeInstanceOf(ObjectExists);
      expect((await t.get("config")).toString()).toBe("one");
    });

    it("put of a file body stores its bytes; the file is moved or left for its owner, never changed", { timeout }, async () => {
      const t = await opts.make();
      const data = randomBytes(70_000);
      const body = fileOf(data);
      await t.put("data/ef/ef01", body);
      if (existsSync(body.movableFile!)) expect(Buffer.compare(readFileSync(body.movableFile!), data)).toBe(0);
      expect(Buffer.compare(await t.get("data/ef/ef01"), data)).toBe(0);
      expect(await t.head("data/ef/ef01")).toMatchObject({ key: "data/ef/ef01", size: 70_000 });
    });

    it("a large put from a file (12 MiB, above the 5 MiB multipart part size) arrives whole; ranges read across part boundaries", { timeout: Math.max(timeout, 60_000) }, async () => {
      const t = await opts.make();
      const data = randomBytes(12 * 1024 * 1024 + 12345);
      await t.put("data/99/9901", fileOf(data));
      expect(await t.head("data/99/9901")).toMatchObject({ key: "data/99/9901", size: data.length });
      const boundary = 5 * 1024 * 1024;
      expect(Buffer.compare(await t.getRange("data/99/9901", boundary - 100, 200), data.subarray(boundary - 100, boundary + 100))).toBe(0);
      expect(Buffer.compare(await t.get("data/99/9901"), data)).toBe(0);
    });

    it("put from a stream (no file), small and above the multipart part size, in odd chunks: the exact bytes", { timeout: Math.max(timeout, 60_000) }, async () => {
      const t = await opts.make();
      for (const [key, data] of [["data/55/5501", randomBytes(3_001)], ["data/55/5502", randomBytes(11 * 1024 * 1024 + 7)]] as const) {
        await t.put(key, streamOf(data, 65_537));
        expect(await t.head(key)).toMatchObject({ key, size: data.length });
        expect(Buffer.compare(await t.get(key), data)).toBe(0);
      }
    });

    it("a stream that ends early or runs long is refused and stores nothing; a stream that fails stores nothing", { timeout: Math.max(timeout, 60_000) }, async () => {
      const t = await opts.make();
      for (const n of [4_000, 11 * 1024 * 1024]) {
        const data = randomBytes(n);
        await expect(t.put("data/66/short", { ...streamOf(data.subarray(0, n - 1)), size: n })).rejects.toThrow(/ended after \d+ of their stated/);
        await expect(t.put("data/66/long", { ...streamOf(data), size: n - 1 })).rejects.toThrow(/run past their stated/);
        const failing = {
          size: n,
          async *open() {
            yield data.subarray(0, n >> 1);
            throw new Error("the disk under the pack went away");
          },
        };
        await expect(t.put("data/66/fails", failing)).rejects.toThrow("the disk under the pack went away");
      }
      // A file body whose file holds other than its stated size is refused too.
      const wrong = fileOf(randomBytes(1000));
      await expect(t.put("data/66/wrongfile", { ...wrong, size: 999 })).rejects.toThrow(/1000 bytes, not its stated 999|run past their stated/);
      expect(await collectList(t, "data")).toEqual([]);
    });

    it("an aborted signal stops every operation, and an aborted put leaves no object", { timeout }, async () => {
      const t = await opts.make();
      await t.put("index/01", Buffer.from("x"));
      const ac = new AbortController();
      ac.abort(new Error("stop now"));
      const signal = ac.signal;
      await expect(t.get("index/01", { signal })).rejects.toThrow("stop now");
      await expect(t.getRange("index/01", 0, 1, { signal })).rejects.toThrow("stop now");
      await expect(t.head("index/01", { signal })).rejects.toThrow("stop now");
      await expect(t.put("index/02", Buffer.from("y"), { signal })).rejects.toThrow("stop now");
      await expect(t.put("index/03", fileOf(Buffer.from("z")), { signal })).rejects.toThrow("stop now");
      await expect(t.put("index/04", streamOf(Buffer.from("w")), { signal })).rejects.toThrow("stop now");
      await expect(t.delete("index/01", { signal })).rejects.toThrow("stop now");
      await expect(collectList(t, "")).resolves.toBeDefined();
      await expect((async () => { for await (const _ of t.list("index", { signal })) void _; })()).rejects.toThrow("stop now");
      expect((await collectList(t, "index")).map((o) => o.key)).toEqual(["index/01"]);
    });

    it("a signal aborted during a large upload stops it; the object never appears", { timeout: Math.max(timeout, 60_000) }, async () => {
      const t = await opts.make();
      const ac = new AbortController();
      const put = t.put("data/77/7701", fileOf(randomBytes(12 * 1024 * 1024)), { signal: ac.signal });
      setTimeout(() => ac.abort(new Error("cancelled mid-upload")), 5);
      const outcome = await put.then(
        () => "finished",
        (err: Error) => err.message,
      );
      // A fast target may finish before the abort lands (or an S3 completion may race it); then
      // the object is whole. Never a part of it.
      const stored = await t.head("data/77/7701");
      if (outcome === "finished") expect(stored?.size).toBe(12 * 1024 * 1024);
      else {
        expect(outcome).toBe("cancelled mid-upload");
        if (stored) expect(stored.size).toBe(12 * 1024 * 1024);
      }
      expect((await collectList(t, "data")).map((o) => o.key).filter((k) => k !== "data/77/7701")).toEqual([]);
    });
  });
}
