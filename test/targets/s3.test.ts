// The S3 target against a real S3 server (s3rver) on 127.0.0.1, through the same wrappers
// (retry, concurrency limit) that openTarget puts around it for users.

import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openTarget } from "../../src/targets/open.js";
import { S3Target } from "../../src/targets/s3.js";
import { fileBody, ObjectExists, TargetError } from "../../src/targets/target.js";
import { TEMP_INFIX } from "../../src/targets/local.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { targetConformance } from "./conformance.js";
import { tempRoot } from "../helpers/tmp.js";

let server: S3Server;
let dir: string;
let n = 0;

beforeAll(async () => {
  dir = tempRoot("s3-target");
  server = await startS3Server(path.join(dir, "s3"), "conformance");
});
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const env = () => ({ ...server.env, PATH: process.env.PATH });

targetConformance("s3 (s3rver)", {
  // Every test gets its own prefix: a repository is the objects under one prefix.
  make: async () => openTarget({ repo: `s3://conformance/t${++n}/repo` }, env()),
  plantTemp: (target, key) => target.put(`${key}${TEMP_INFIX}abc123`, Buffer.from("half")),
  timeoutMs: 30_000,
});

describe("s3 target specifics", () => {
  it("a target at the bucket root and one under a prefix see only their own objects", async () => {
    const root = openTarget({ repo: "s3://conformance" }, env());
    const sub = openTarget({ repo: `s3://conformance/iso${++n}` }, env());
    await sub.put("config", Buffer.from("sub"));
    expect(await root.head("config")).toBeUndefined();
    expect((await root.head(`iso${n}/config`))?.size).toBe(3);
    expect(sub.location).toBe(`s3://conformance/iso${n}`);
    expect(sub.localPath).toBeUndefined();
  });

  it("s3rver ignores If-None-Match on PUT, so ifAbsent is the head-then-put fallback there", async () => {
    const t = new S3Target({ bucket: "conformance", prefix: `cond${++n}`, env: env() });
    await t.put("config", Buffer.from("one"), { ifAbsent: true });
    await expect(t.put("config", Buffer.from("two"), { ifAbsent: true })).rejects.toBeInstanceOf(ObjectExists);
    // The server accepted the header without a 501, so the target believes it conditional; the
    // head before the put is what refused the second write here.
    expect(t.conditionalPuts).toBe(true);
  });

  it("the test server outlives a DELETE and a PUT racing in one folder (two hosts' lock files)", async () => {
    // s3rver removes a folder's directory when a DELETE empties it; a PUT racing into it used to
    // kill the server (test/helpers/s3rver-child.mjs), and every later test saw ECONNREFUSED.
    const t = new S3Target({ bucket: "conformance", prefix: `race${++n}`, env: env() });
    for (let i = 0; i < 200; i++) {
      await t.put("locks/a", Buffer.from("a"));
      await Promise.all([t.delete("locks/a"), t.put(`locks/b${i}`, Buffer.from("b"))]);
      await t.delete(`locks/b${i}`);
    }
    expect(server.child.exitCode).toBeNull();
    await t.put("locks/c", Buffer.from("c"));
    expect((await t.head("locks/c"))?.size).toBe(1);
  });
});

/**
 * A TCP proxy in front of s3rver that cuts the connection after `cutAfter` bytes of the next
 * answer it is armed for, as a dropped connection does mid-download. Records each request's Range.
 */
async function cuttingProxy(port: number): Promise<{ endpoint: string; ranges: string[]; arm(cutAfter: number): void; close(): Promise<void> }> {
  const ranges: string[] = [];
  let armed: number | undefined;
  const server = net.createServer((client) => {
    const upstream = net.connect(port, "127.0.0.1");
    let cut: number | undefined;
    let sent = 0;
    client.on("data", (d: Buffer) => {
      const range = /\r\nrange: *bytes=([0-9-]+)/i.exec(d.toString("latin1"));
      if (range) {
        ranges.push(range[1]);
        cut = armed;
        armed = undefined;
      }
      upstream.write(d);
    });
    upstream.on("data", (d: Buffer) => {
      if (cut !== undefined && sent + d.length > cut) {
        client.write(d.subarray(0, cut - sent));
        client.destroy();
        upstream.destroy();
        return;
      }
      sent += d.length;
      client.write(d);
    });
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port: proxyPort } = server.address() as net.AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${proxyPort}`,
    ranges,
    arm: (cutAfter) => (armed = cutAfter),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe("range streams from S3", () => {
  it("a connection dropped mid-download: the stream goes on from the first byte not received, and the bytes are exact", async () => {
    const proxy = await cuttingProxy(server.port);
    try {
      const target = openTarget({ repo: `s3://conformance/cut${++n}` }, { ...env(), AWS_ENDPOINT_URL: proxy.endpoint });
      const data = randomBytes(4 * 1024 * 1024);
      await target.put("data/cc/cc01", data);
      proxy.arm(1024 * 1024); // about 1 MiB into the answer, headers included
      const chunks: Buffer[] = [];
      for await (const c of target.readRange("data/cc/cc01", 100, data.length - 200)) chunks.push(Buffer.from(c));
      expect(Buffer.concat(chunks).equals(data.subarray(100, data.length - 100))).toBe(true);
      expect(proxy.ranges).toHaveLength(2);
      expect(proxy.ranges[0]).toBe(`100-${data.length - 101}`);
      // The second request starts where the first stopped: past the start, before the cut point.
      const resumed = Number(proxy.ranges[1].split("-")[0]);
      expect(resumed).toBeGreaterThan(100);
      expect(resumed).toBeLessThanOrEqual(100 + 1024 * 1024);
      expect(proxy.ranges[1].split("-")[1]).toBe(String(data.length - 101));
    } finally {
      await proxy.close();
    }
  });

  it("without the retry wrapper, the dropped connection is one transient storage error", async () => {
    const proxy = await cuttingProxy(server.port);
    try {
      const t = new S3Target({ bucket: "conformance", prefix: `cut${++n}`, env: { ...env(), AWS_ENDPOINT_URL: proxy.endpoint } });
      await t.put("data/cc/cc02", randomBytes(2 * 1024 * 1024));
      proxy.arm(256 * 1024);
      const drain = async () => {
        for await (const _ of t.readRange("data/cc/cc02", 0, 2 * 1024 * 1024)) void _;
      };
      const err = await drain().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(TargetError);
      expect((err as TargetError).transient).toBe(true);
      expect((err as Error).message.split("\n")).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });
});

describe("puts to S3", () => {
  const file = (data: Buffer) => {
    const f = path.join(dir, `body-${++n}`);
    writeFileSync(f, data);
    return f;
  };

  it("above the multipart threshold a file goes up in parts; at or below it, in one PUT; both read back exact", { timeout: 60_000 }, async () => {
    const t = new S3Target({ bucket: "conformance", prefix: `mp${++n}`, env: env(), multipartThreshold: 6 * 1024 * 1024 });
    const before = server.uploads();
    const small = randomBytes(6 * 1024 * 1024);
    await t.put("data/aa/aa01", fileBody(file(small), small.length));
    expect(Buffer.compare(await t.get("data/aa/aa01"), small)).toBe(0);
    const big = randomBytes(12 * 1024 * 1024 + 3);
    await t.put("data/aa/aa02", fileBody(file(big), big.length));
    expect(Buffer.compare(await t.get("data/aa/aa02"), big)).toBe(0);
    // The server says so on its stdout, which may come a little after the answers.
    // The server says so on its stdout, which may come a little after the answers.
    await vi.waitFor(() => {
      const now = server.uploads();
      expect([now.parts - before.parts, now.singlePuts - before.singlePuts]).toEqual([3, 1]);
    }, { timeout: 10_000 });
  });

  it("a file whose read fails in the middle of its one PUT: the read's error, at once, and the request is aborted", { timeout: 60_000 }, async () => {
    const t = new S3Target({ bucket: "conformance", prefix: `fail${++n}`, env: env() });
    const data = randomBytes(8 * 1024 * 1024);
    const f = file(data);
    const failing = {
      size: data.length,
      movableFile: f,
      async *open() {
        yield data.subarray(0, 3 * 1024 * 1024);
        throw new Error("the disk under the pack went away");
      },
    };
    await expect(t.put("data/bb/bb01", failing)).rejects.toThrow("the disk under the pack went away");
    // The same target goes on working: the next put of the same key succeeds.
    await t.put("data/bb/bb01", fileBody(f, data.length));
    expect(Buffer.compare(await t.get("data/bb/bb01"), data)).toBe(0);
  });

  it("a file that is not its stated size is refused before anything is sent", async () => {
    const t = new S3Target({ bucket: "conformance", prefix: `size${++n}`, env: env() });
    const f = file(randomBytes(5000));
    await expect(t.put("data/cc/cc01", fileBody(f, 4000))).rejects.toThrow(/run past their stated 4000/);
    await expect(t.put("data/cc/cc02", fileBody(f, 6000))).rejects.toThrow(/ended after 5000 of their stated 6000/);
    expect(await t.head("data/cc/cc01")).toBeUndefined();
    expect(await t.head("data/cc/cc02")).toBeUndefined();
  });
});
