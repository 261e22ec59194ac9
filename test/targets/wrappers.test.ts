// RetryTarget and LimitTarget around a MemoryTarget that fails or stalls on command. The real
// network failures (a killed S3 server) are in s3-e2e.test.ts; here the policy itself is pinned.

import { describe, expect, it } from "vitest";
import { LimitTarget } from "../../src/targets/limit.js";
import { MemoryTarget } from "../../src/targets/memory.js";
import { isTransient, RetryTarget } from "../../src/targets/retry.js";
import { ObjectNotFound, TargetError, type ObjectInfo, type OpOptions, type PutBody } from "../../src/targets/target.js";

/** Fails the next `failures` operations with `error`, then works. */
class FlakyTarget extends MemoryTarget {
  calls = 0;
  constructor(
    public failures: number,
    private readonly error: () => unknown,
  ) {
    super();
  }
  private maybeFail(): void {
    this.calls++;
    if (this.failures > 0) {
      this.failures--;
      throw this.error();
    }
  }
  override async get(key: string, opts?: OpOptions): Promise<Buffer> {
    this.maybeFail();
    return super.get(key, opts);
  }
  override async put(key: string, data: PutBody): Promise<void> {
    this.maybeFail();
    return super.put(key, data);
  }
  /** Fails after yielding `failAfter` objects, once. */
  failListAfter = -1;
  override async *list(prefix: string, opts?: OpOptions): AsyncIterable<ObjectInfo> {
    let n = 0;
    for await (const o of super.list(prefix, opts)) {
      if (n++ === this.failListAfter) {
        this.failListAfter = -1;
        throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
      }
      yield o;
    }
  }
}

const econnreset = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });

describe("RetryTarget", () => {
  it("retries network errors, 5xx and throttling until the operation succeeds", async () => {
    for (const error of [econnreset, () => new TargetError("S3 failed put: SlowDown (HTTP 503)", "io", true)]) {
      const inner = new FlakyTarget(3, error);
      const retries: number[] = [];
      const t = new RetryTarget(inner, { baseDelayMs: 1, onRetry: (r) => retries.push(r.attempt) });
      await t.put("data/00/01", Buffer.from("x"));
      expect(inner.calls).toBe(4);
      expect(retries).toEqual([1, 2, 3]);
      expect((await t.get("data/00/01")).toString()).toBe("x");
    }
  });

  it("never retries permanent errors: bad credentials, access denied, a missing object", async () => {
    for (const error of [() => new TargetError("S3 does not know the access key (InvalidAccessKeyId)", "io", false), () => new ObjectNotFound("k"), () => Object.assign(new Error("no space"), { code: "ENOSPC" })]) {
      const thrown = error();
      const inner = new FlakyTarget(1, () => thrown);
      const t = new RetryTarget(inner, { baseDelayMs: 1 });
      await expect(t.get("k")).rejects.toBe(thrown);
      expect(inner.calls).toBe(1);
    }
  });

  it("a put of a stream that breaks part-way is sent again from the stream's first byte; the object is whole", async () => {
    const data = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 253));
    let opened = 0;
    const body = {
      size: data.length,
      async *open() {
        opened++;
        for (let at = 0; at < data.length; at += 10_000) yield data.subarray(at, at + 10_000);
      },
    };
    // The connection drops after the storage has read a third of the bytes, once.
    class BreaksMidUpload extends MemoryTarget {
      breaks = 1;
      override async put(key: string, put: PutBody): Promise<void> {
        if (this.breaks-- > 0 && !Buffer.isBuffer(put)) {
          let seen = 0;
          for await (const c of put.open()) if ((seen += c.length) >= 100_000) throw econnreset();
        }
        return super.put(key, put);
      }
    }
    const inner = new BreaksMidUpload();
    await new RetryTarget(inner, { baseDelayMs: 1 }).put("data/ab/ab01", body);
    expect(opened).toBe(2);
    expect((await inner.get("data/ab/ab01")).equals(data)).toBe(true);
  });

  it("gives up after the configured attempts with the last error", async () => {
    const inner = new FlakyTarget(100, econnreset);
    const t = new RetryTarget(inner, { attempts: 3, baseDelayMs: 1 });
    await expect(t.put("a", Buffer.from("x"))).rejects.toThrow("ECONNRESET");
    expect(inner.calls).toBe(3);
  });

  it("retries for as long as the budget (maxMs) allows, then fails with the last error and how long it kept failing", async () => {
    const inner = new FlakyTarget(Infinity, econnreset);
    const waits: { attempt: number; delayMs: number; elapsedMs: number; budgetMs: number }[] = [];
    const t = new RetryTarget(inner, { maxMs: 60, baseDelayMs: 5, maxDelayMs: 20, onRetry: ({ attempt, delayMs, elapsedMs, budgetMs }) => waits.push({ attempt, delayMs, elapsedMs, budgetMs }) });
    const err = await t.put("a", Buffer.from("x")).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TargetError);
    expect((err as TargetError).transient).toBe(true);
    expect((err as Error).message).toMatch(new RegExp(`^read ECONNRESET, still failing after ${inner.calls} tries over \\d+(\\.\\d)? s: the retry budget is 0\\.1 s \\(PI_GUARD_RETRY_MAX, or retry\\.maxMs in the config file\\)$`));
    expect(inner.calls).toBeGreaterThan(2);
    // One report per wait, numbered by the try that failed; no wait runs past the budget.
    expect(waits.map((w) => w.attempt)).toEqual(Array.from({ length: inner.calls - 1 }, (_, i) => i + 1));
    for (const w of waits) {
      expect(w.budgetMs).toBe(60);
      expect(w.delayMs).toBeLessThanOrEqual(w.budgetMs - w.elapsedMs);
    }
  });

  it("a budget of 0 never retries: the first error as it is", async () => {
    const thrown = econnreset();
    const inner = new FlakyTarget(1, () => thrown);
    await expect(new RetryTarget(inner, { maxMs: 0 }).get("k")).rejects.toBe(thrown);
    expect(inner.calls).toBe(1);
  });

  it("an abort during the back-off stops the retries at once", async () => {
    const inner = new FlakyTarget(100, econnreset);
    const t = new RetryTarget(inner, { attempts: 10, baseDelayMs: 60_000, maxDelayMs: 60_000 });
    const ac = new AbortController();
    const put = t.put("a", Buffer.from("x"), { signal: ac.signal });
    setTimeout(() => ac.abort(new Error("user pressed ^C")), 20);
    await expect(put).rejects.toThrow("user pressed ^C");
    expect(inner.calls).toBe(1);
  });

  it("back-off grows exponentially, is capped, and is jittered within [cap/2, cap]", () => {
    const low = new RetryTarget(new MemoryTarget(), { baseDelayMs: 100, maxDelayMs: 1000, random: () => 0 });
    const high = new RetryTarget(new MemoryTarget(), { baseDelayMs: 100, maxDelayMs: 1000, random: () => 1 });
    expect([0, 1, 2, 3, 4, 5].map((r) => low.delayFor(r))).toEqual([50, 100, 200, 400, 500, 500]);
    expect([0, 1, 2, 3, 4, 5].map((r) => high.delayFor(r))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it("a listing that breaks part-way resumes without repeating or losing keys", async () => {
    const inner = new FlakyTarget(0, econnreset);
    for (const k of ["data/a", "data/b", "data/c", "data/d"]) await inner.put(k, Buffer.from(k));
    inner.failListAfter = 2;
    const t = new RetryTarget(inner, { baseDelayMs: 1 });
    const keys: string[] = [];
    for await (const o of t.list("data")) keys.push(o.key);
    expect(keys).toEqual(["data/a", "data/b", "data/c", "data/d"]);
  });

  it("classifies errors", () => {
    expect(isTransient(econnreset())).toBe(true);
    expect(isTransient(Object.assign(new Error("x"), { code: "ECONNREFUSED" }))).toBe(true);
    expect(isTransient(new TargetError("x", "io", true))).toBe(true);
    expect(isTransient(new TargetError("x", "io", false))).toBe(false);
    expect(isTransient(new ObjectNotFound("k"))).toBe(false);
    expect(isTransient(Object.assign(new Error("x"), { code: "EACCES" }))).toBe(false);
    expect(isTransient(new DOMException("aborted", "AbortError"))).toBe(false);
  });
});

/** A stream that breaks (a reset connection) after `breakAfter` bytes, `times` times. */
class BreakingStreams extends MemoryTarget {
  opened: { offset: number; length: number }[] = [];
  constructor(
    public breaks: number,
    private readonly breakAfter: number,
  ) {
    super();
  }
  override async *readRange(key: string, offset: number, length: number, opts?: OpOptions): AsyncIterable<Uint8Array> {
    this.opened.push({ offset, length });
    let sent = 0;
    for await (const chunk of super.readRange(key, offset, length, opts)) {
      if (this.breaks > 0 && sent + chunk.length > this.breakAfter) {
        this.breaks--;
        yield chunk.subarray(0, this.breakAfter - sent);
        throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
      }
      sent += chunk.length;
      yield chunk;
    }
  }
}

describe("range streams through the wrappers", () => {
  it("RetryTarget: a stream that breaks part-way goes on from the first byte not yet handed out; every byte comes once", async () => {
    const inner = new BreakingStreams(3, 100_000);
    const data = Buffer.from(Array.from({ length: 500_000 }, (_, i) => (i * 131) % 251));
    await inner.put("data/aa/aa01", data);
    const retries: number[] = [];
    const t = new RetryTarget(inner, { baseDelayMs: 1, maxDelayMs: 2, attempts: 2, onRetry: ({ attempt }) => retries.push(attempt) });
    const chunks: Buffer[] = [];
    for await (const c of t.readRange("data/aa/aa01", 1000, 450_000)) chunks.push(Buffer.from(c));
    expect(Buffer.concat(chunks).equals(data.subarray(1000, 451_000))).toBe(true);
    // Three breaks with only two tries each: progress between breaks counts the tries again.
    expect(inner.opened).toEqual([
      { offset: 1000, length: 450_000 },
      { offset: 101_000, length: 350_000 },
      { offset: 201_000, length: 250_000 },
      { offset: 301_000, length: 150_000 },
    ]);
    expect(retries).toEqual([1, 1, 1]);
  });

  it("RetryTarget: a stream that keeps breaking without progress gives up with the error; a permanent error is not retried", async () => {
    const inner = new BreakingStreams(10, 0);
    await inner.put("data/aa/aa02", Buffer.alloc(1000, 7));
    const t = new RetryTarget(inner, { baseDelayMs: 1, maxDelayMs: 2, attempts: 3 });
    const drain = async (key: string) => {
      for await (const _ of t.readRange(key, 0, 1000)) void _;
    };
    await expect(drain("data/aa/aa02")).rejects.toThrow("socket hang up");
    expect(inner.opened.length).toBe(3);
    await expect(drain("data/aa/missing")).rejects.toBeInstanceOf(ObjectNotFound);
    expect(inner.opened.length).toBe(4);
  });

  it("LimitTarget: a stream holds its slot until it ends or the caller breaks out", async () => {
    const t = new LimitTarget(new MemoryTarget(), 1);
    await t.put("data/aa/aa03", Buffer.alloc(300_000, 1));
    const it1 = t.readRange("data/aa/aa03", 0, 300_000)[Symbol.asyncIterator]();
    await it1.next();
    expect(t.inFlight).toBe(1);
    let got = false;
    const waiting = t.get("data/aa/aa03").then(() => (got = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(got).toBe(false);
    await it1.return!();
    await waiting;
    expect(t.inFlight).toBe(0);
    // Read to its end, a stream gives the slot back too.
    for await (const _ of t.readRange("data/aa/aa03", 0, 300_000)) void _;
    expect(t.inFlight).toBe(0);
  });
});

describe("LimitTarget", () => {
  it("never runs more than `limit` operations at once, and runs them all", async () => {
    let running = 0;
    let peak = 0;
    class SlowTarget extends MemoryTarget {
      override async put(key: string, data: Buffer): Promise<void> {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        return super.put(key, data);
      }
    }
    const inner = new SlowTarget();
    const t = new LimitTarget(inner, 3);
    await Promise.all(Array.from({ length: 20 }, (_, i) => t.put(`k/${String(i).padStart(2, "0")}`, Buffer.from([i]))));
    expect(peak).toBe(3);
    const keys: string[] = [];
    for await (const o of t.list("k")) keys.push(o.key);
    expect(keys.length).toBe(20);
    expect(t.inFlight).toBe(0);
  });

  it("an operation waiting for a slot can be aborted, and gives the slot to nobody", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    class GatedTarget extends MemoryTarget {
      override async put(key: string, data: Buffer): Promise<void> {
        await gate;
        return super.put(key, data);
      }
    }
    const t = new LimitTarget(new GatedTarget(), 1);
    const first = t.put("a", Buffer.from("1"));
    const ac = new AbortController();
    const second = t.put("b", Buffer.from("2"), { signal: ac.signal });
    ac.abort(new Error("no longer wanted"));
    await expect(second).rejects.toThrow("no longer wanted");
    release();
    await first;
    expect(await t.head("b")).toBeUndefined();
    expect(t.inFlight).toBe(0);
  });
});
