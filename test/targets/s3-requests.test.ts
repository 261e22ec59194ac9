// What an initial snapshot asks of S3, request by request: the built CLI against a real s3rver
// behind the counting proxy of bench:s3 (every request seen server side, by kind and path). For a
// fixed tree the count is fixed: each pack below the multipart threshold is one PUT (no multipart
// start, parts and completion), no pack is checked with a HEAD afterwards (the PUT carries the
// pack's SHA-256, which S3 checks), one index file, one snapshot object, and no listing twice.

import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCountingProxy, type CountingProxy } from "../../bench/s3-proxy.js";
import { ok } from "../helpers/cli.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { copyFixtures, makeSandbox, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";

const BUCKET = "counted";
const PREFIX = "pi";

let sb: Sandbox;
let server: S3Server;
let proxy: CountingProxy;
let requests: string[] = [];
let env: Record<string, string>;

beforeAll(async () => {
  sb = makeSandbox("s3-requests");
  server = await startS3Server(sb.dir("s3rver"), BUCKET);
  proxy = await startCountingProxy(server.port, { onRequest: (line) => requests.push(line) });
  env = { ...server.env, AWS_ENDPOINT_URL: proxy.endpoint, PI_GUARD_REPO: `s3://${BUCKET}/${PREFIX}` };
  writePiConfigFiles(sb.agentDir);
  copyFixtures(sb.agentDir);
  // Incompressible, so the data fills one 16 MiB pack and starts a second; the file list is a third.
  writeFileSync(path.join(sb.agentDir, "big.bin"), randomBytes(20 * 1024 * 1024));
  await ok(sb, ["init"], { env });
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await server?.stop();
  sb?.cleanup();
});

/** "PUT /bucket/pi/data/ab/ab01…?x-id=PutObject" → "PUT data"; a listing → "LIST index". */
function shape(line: string): string {
  const [kind, target] = line.split(" ");
  const url = new URL(target, "http://x");
  if (kind === "LIST") return `LIST ${(url.searchParams.get("prefix") ?? "").slice(PREFIX.length + 1).replace(/\/$/, "")}`;
  const rest = url.pathname.split("/").slice(3);
  return `${kind} ${rest[0]}${url.search.includes("uploadId") || url.search.includes("uploads") ? " (multipart)" : ""}`;
}

function tally(lines: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const l of lines.map(shape)) out[l] = (out[l] ?? 0) + 1;
  return out;
}

describe("requests of an initial snapshot to S3", () => {
  it("one PUT per pack, no HEAD of a pack, one index and one snapshot object, each listing once", { timeout: 120_000 }, async () => {
    requests = [];
    const snap = (await ok(sb, ["snapshot", "--json"], { env })).json<{ snapshotId: string }>();
    const seen = tally(requests);
    expect(seen, requests.join("\n")).toEqual({
      "GET config": 1,
      "LIST keys": 1,
      "GET keys": 1,
      "PUT locks": 1,
      "LIST locks": 1,
      "LIST index": 1,
      "LIST snapshots": 1,
      // Two data packs and one tree pack, each in one request.
      "PUT data": 3,
      // The lock is confirmed before the index and again before the snapshot object.
      "HEAD locks": 2,
      "PUT index": 1,
      "PUT snapshots": 1,
      "DELETE locks": 1,
    });
    const packPuts = requests.filter((l) => shape(l) === "PUT data").map((l) => new URL(l.split(" ")[1], "http://x").pathname);
    expect(new Set(packPuts).size).toBe(packPuts.length);
    expect(requests.map(shape).indexOf("PUT snapshots")).toBe(requests.length - 2);
    // What was counted is a whole, readable repository.
    requests = [];
    const check = (await ok(sb, ["check", "--read-data", "--json"], { env })).json<{ ok: boolean; packsRead: number }>();
    expect(check).toMatchObject({ ok: true, packsRead: 3 });
    expect(snap.snapshotId).toMatch(/^[0-9a-f]{64}$/);
  });
});
