// The S3 target against a real S3 server (s3rver) on 127.0.0.1, through the same wrappers
// (retry, concurrency limit) that openTarget puts around it for users.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTarget } from "../../src/targets/open.js";
import { S3Target } from "../../src/targets/s3.js";
import { ObjectExists } from "../../src/targets/target.js";
import { TEMP_INFIX } from "../../src/targets/local.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { targetConformance } from "./conformance.js";

let server: S3Server;
let dir: string;
let n = 0;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "pi-guard-s3-target-"));
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
});
