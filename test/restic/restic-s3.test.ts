// restic:s3:http://127.0.0.1:PORT/bucket against the tests' real S3 server (s3rver).
//
// restic 0.14 (minio-go) signs uploads over plain http with a streaming signature
// (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, an aws-chunked body). s3rver 3.7.1 stores that body as it
// came, chunk headers included ("9b;chunk-signature=…"), so restic cannot read back even its own
// config file. Anonymous requests carry no signature and no chunking, and s3rver accepts them:
// the round trip runs without AWS credentials. With credentials, pi-guard's init must notice.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok, type RestoreJson } from "../helpers/cli.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

let sb: Sandbox;
let server: S3Server;

beforeAll(async () => {
  sb = makeSandbox("restic-s3");
  server = await startS3Server(sb.dir("s3"), "restic-bucket");
  writePiConfigFiles(sb.agentDir);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sb?.cleanup();
});

const envFor = (prefix: string, extra: Record<string, string> = {}) => ({
  ...sb.env,
  PI_GUARD_REPO: `restic:s3:${server.endpoint}/restic-bucket/${prefix}`,
  PI_GUARD_PASSWORD: "s3 secret",
  ...extra,
});

describe("restic engine on S3", () => {
  it("init, snapshot, plain restic check and a restore by session, through the local S3 server", async () => {
    const env = envFor("anon");
    await ok(env, ["init"]);
    const made = await makePiSession({ agentDir: sb.agentDir, cwd: path.join(sb.root, "proj"), turns: [{ user: "to the bucket", assistant: [fauxText("stored")] }] });
    const snap = (await ok(env, ["snapshot", "--json"])).json<{ snapshotId: string }>();
    const check = (await ok(env, ["check", "--read-data", "--json"])).json<{ ok: boolean }>();
    expect(check.ok).toBe(true);
    const plain = execFileSync("restic", ["check", "--read-data"], {
      env: { PATH: process.env.PATH!, HOME: sb.home, RESTIC_REPOSITORY: `s3:${server.endpoint}/restic-bucket/anon`, RESTIC_PASSWORD: "s3 secret" },
      encoding: "utf8",
    });
    expect(plain).toMatch(/no errors were found/);
    const out = sb.dir("out");
    const r = (await ok(env, ["restore", "latest", "--session", made.sessionId, "--target", out, "--json"])).json<RestoreJson>();
    expect(r.snapshotId).toBe(snap.snapshotId);
    const rel = path.relative(sb.agentDir, made.file);
    expect(readFileSync(path.join(out, rel))).toEqual(readFileSync(made.file));
  });

  it("with AWS credentials, s3rver keeps restic's aws-chunked bodies: init fails in one line instead of reporting success", async () => {
    const env = envFor("signed", { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER" });
    const r = await cli(env, ["init"]);
    expect(expectOneLineError(r, 1)).toMatch(/^pi-guard: restic snapshots failed: .*invalid character/);
  });
});
