// The built CLI against a real S3 server (s3rver in a child process on 127.0.0.1): a real pi
// session backed up to a bucket, restored on a fresh "machine" that has only the key, a large
// pack sent as a multipart upload, the server killed with SIGKILL mid-upload and restarted, the
// one-line errors, and an independent client (the AWS CLI) proving nothing leaves in plaintext.

import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { cli, collect, expectOneLineError, ok, spawnCli } from "../helpers/cli.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { fingerprint, listFiles, makeSandbox, treeState, writeFileExact, type Sandbox } from "../helpers/tmp.js";

const BUCKET = "pi-backups";
const REPO = `s3://${BUCKET}/team/host-a`;
const API_KEY = "sk-ant-api03-QUOKKA-" + "Zq7".repeat(14);
const OAUTH_TOKEN = "oauth-refresh-PANGOLIN-5d1e9c0b7a3f";
const PHRASES = ["Zanzibar quokka ledger 7731", "the marmalade protocol of Lake Baikal", "ultraviolet pangolin retrospective"];

let sb: Sandbox;
let server: S3Server;
let env: Record<string, string>;

function sbEnv(s: S3Server): Record<string, string> {
  return { ...s.env, PI_GUARD_REPO: REPO };
}

beforeAll(async () => {
  sb = makeSandbox("s3e2e");
  server = await startS3Server(sb.dir("s3rver"), BUCKET);
  env = sbEnv(server);
  writeFileExact(path.join(sb.agentDir, "auth.json"), JSON.stringify({ anthropic: { type: "api_key", key: API_KEY }, github: { type: "oauth", refresh: OAUTH_TOKEN } }, null, 2), 0o600);
  await makePiSession({
    agentDir: sb.agentDir,
    cwd: sb.dir("project"),
    turns: [
      { user: `Remember this: ${PHRASES[0]}.`, assistant: [fauxText(`Noted: ${PHRASES[1]}.`)] },
      { user: "And then?", assistant: [fauxText(`Then comes ${PHRASES[2]}.`)] },
    ],
  });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sb?.cleanup();
});

describe("pi-guard against S3 (s3rver)", () => {
  it("init, snapshot, list and check --read-data; restore on a fresh machine with only the key is byte-identical", { timeout: 60_000 }, async () => {
    const init = await ok(sb, ["init"], { env });
    expect(init.stdout).toContain(REPO);
    expect(init.stderr).not.toMatch(/NodeVersionSupportWarning|Warning/);
    const snap = (await ok(sb, ["snapshot", "--json"], { env })).json<{ snapshotId: string; files: number }>();
    expect(snap.files).toBeGreaterThanOrEqual(2);
    const list = (await ok(sb, ["snapshots", "--json"], { env })).json<{ id: string }[]>();
    expect(list.map((s) => s.id)).toEqual([snap.snapshotId]);
    const check = (await ok(sb, ["check", "--read-data", "--json"], { env })).json<{ ok: boolean; packsRead: number }>();
    expect(check.ok).toBe(true);
    expect(check.packsRead).toBeGreaterThan(0);

    // A new machine: another HOME, nothing of the first one but the key file.
    const other = makeSandbox("s3e2e-new");
    try {
      const key = path.join(other.configHome, "pi-guard", "key");
      mkdirSync(path.dirname(key), { recursive: true });
      copyFileSync(path.join(sb.configHome, "pi-guard", "key"), key);
      const dest = other.dir("restored");
      await ok(other, ["restore", "latest", "--target", dest], { env: { ...env, PI_GUARD_REPO: REPO } });
      expect(fingerprint(treeState(dest))).toEqual(fingerprint(treeState(sb.agentDir)));
      expect(readFileSync(path.join(dest, "auth.json"), "utf8")).toContain(API_KEY);
    } finally {
      other.cleanup();
    }
  });

  it("each pack (below the multipart threshold) goes up in one PUT, no parts, and reads back whole", { timeout: 120_000 }, async () => {
    writeFileSync(path.join(sb.agentDir, "big-1.bin"), randomBytes(20 * 1024 * 1024));
    const before = server.uploads();
    await ok(sb, ["snapshot"], { env });
    // 20 MiB of random bytes fill at least one 16 MiB pack and start a second.
    await vi.waitFor(() => expect(server.uploads().singlePuts - before.singlePuts).toBeGreaterThanOrEqual(2), { timeout: 10_000 });
    expect(server.uploads().parts - before.parts).toBe(0);
    const check = (await ok(sb, ["check", "--read-data", "--json"], { env })).json<{ ok: boolean }>();
    expect(check.ok).toBe(true);
  });

  it("the server killed (SIGKILL) mid-upload: one-line failure, no snapshot; after a restart the next snapshot and check pass", { timeout: 180_000 }, async () => {
    const before = (await ok(sb, ["snapshots", "--json"], { env })).json<{ id: string }[]>().length;
    writeFileSync(path.join(sb.agentDir, "big-2.bin"), randomBytes(24 * 1024 * 1024));
    // No retry budget: the server stays down, and the run is to fail at once (s3-outage.test.ts waits outages out).
    const child = spawnCli(sb, ["snapshot"], { env: { ...env, PI_GUARD_RETRY_MAX: "0" } });
    const result = collect(child, 120_000);
    await server.nextPackUpload();
    await server.stop();
    const failed = await result;
    const line = expectOneLineError(failed, 1);
    expect(line).toMatch(/cannot reach S3 at 127\.0\.0\.1:\d+: ECONN(REFUSED|RESET)/);
    // The pack being uploaded was staged in the data dir; the failed run removed it.
    const staging = path.join(sb.dataHome, "pi-guard", "staging");
    expect(readdirSync(staging)).toHaveLength(1);
    expect(listFiles(staging).length, listFiles(staging).join(", ")).toBe(0);

    server = await startS3Server(server.dir, BUCKET, server.port);
    env = sbEnv(server);
    const after = (await ok(sb, ["snapshots", "--json"], { env })).json<{ id: string }[]>();
    expect(after.length).toBe(before);
    await ok(sb, ["snapshot"], { env });
    expect((await ok(sb, ["snapshots", "--json"], { env })).json<unknown[]>().length).toBe(before + 1);
    const check = (await ok(sb, ["check", "--read-data", "--json"], { env })).json<{ ok: boolean; problems: unknown[] }>();
    expect(check.ok, JSON.stringify(check.problems)).toBe(true);
  });

  it("an independent client (AWS CLI) downloads every object: no key value and no session text in plaintext", { timeout: 120_000 }, async () => {
    const dump = sb.dir("dump");
    await promisify(execFile)("aws", ["--endpoint-url", server.endpoint, "s3", "cp", "--recursive", "--only-show-errors", `s3://${BUCKET}`, dump], {
      env: { PATH: process.env.PATH, HOME: sb.home, AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_DEFAULT_REGION: "us-east-1" },
    });
    const files = listFiles(dump);
    expect(files.some((f) => f.includes(`${path.sep}data${path.sep}`))).toBe(true);
    expect(files.some((f) => f.endsWith(`${path.sep}config`))).toBe(true);
    const secrets = [API_KEY, OAUTH_TOKEN, ...PHRASES, "Remember this"];
    const needles = secrets.flatMap((s) => [s, Buffer.from(s).toString("base64").slice(0, 24), Buffer.from(s).toString("hex")]).map((s) => Buffer.from(s));
    let bytes = 0;
    for (const f of files) {
      const data = readFileSync(f);
      bytes += data.length;
      for (const n of needles) expect(data.includes(n), `${n.toString()} found in ${path.relative(dump, f)}`).toBe(false);
    }
    // Everything the snapshots hold went up: more than the 44 MiB of random files.
    expect(bytes).toBeGreaterThan(44 * 1024 * 1024);
    rmSync(dump, { recursive: true, force: true });
  });

  it("wrong credentials, a missing bucket, a server that is down and an unknown scheme: one clear line each", { timeout: 120_000 }, async () => {
    const wrongKey = await cli(sb, ["snapshots"], { env: { ...env, AWS_ACCESS_KEY_ID: "NOT-A-KEY" } });
    expect(expectOneLineError(wrongKey, 1)).toMatch(/does not know the access key \(InvalidAccessKeyId\): check AWS_ACCESS_KEY_ID/);
    expect(wrongKey.stderr).not.toContain("NOT-A-KEY");

    for (const args of [["snapshots"], ["init"], ["snapshot"]]) {
      const missing = await cli(sb, args, { env: { ...env, PI_GUARD_REPO: "s3://no-such-bucket/x" } });
      expect(expectOneLineError(missing, 1), args.join(" ")).toMatch(/S3 bucket "no-such-bucket" does not exist at 127\.0\.0\.1:\d+/);
    }

    // doctor names the storage problem instead of claiming there is no repository.
    const doctor = await cli(sb, ["doctor", "--json"], { env: { ...env, PI_GUARD_REPO: "s3://no-such-bucket/x" } });
    const repoCheck = doctor.json<{ checks: { name: string; status: string; message: string }[] }>().checks.find((c) => c.name === "repository");
    expect(repoCheck).toMatchObject({ status: "error", message: expect.stringContaining('S3 bucket "no-such-bucket" does not exist') });

    const down = await cli(sb, ["snapshots"], { env: { ...env, AWS_ENDPOINT_URL: "http://127.0.0.1:9", PI_GUARD_RETRY_MAX: "0" } });
    expect(expectOneLineError(down, 1)).toMatch(/cannot reach S3 at 127\.0\.0\.1:9: ECONNREFUSED/);

    // restic: is known now (test/restic/); other schemes stay usage errors.
    for (const repo of ["gs://bucket/x", "sftp:host:/x"]) {
      const unknown = await cli(sb, ["snapshots"], { env: { ...env, PI_GUARD_REPO: repo } });
      expect(expectOneLineError(unknown, 2), repo).toContain("s3://bucket/prefix, restic:<restic repository> or a local path");
    }
  });
});
