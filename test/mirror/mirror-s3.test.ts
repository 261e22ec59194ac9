// A local primary with a mirror in a real S3 server (s3rver on 127.0.0.1): each snapshot is
// shipped; a fresh machine with only the key restores from the bucket alone, byte-identical and
// under the same snapshot id; with the server down a snapshot is still saved locally, says so in
// one clear line and exits 1; after a restart the next snapshot catches the mirror up; `check --all`
// reports per target; a pack deleted from the bucket is healed by `repair` from the local copy.
// About 25 s: with the server stopped, two commands wait out the S3 retries (back-off up to 4 s).
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, ok } from "../helpers/cli.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { copyFixtures, fingerprint, makeSandbox, treeState, type Sandbox } from "../helpers/tmp.js";
import { writeConfig } from "./mirror-helpers.js";

const BUCKET = "pi-mirror";
const MIRROR = `s3://${BUCKET}/laptop`;

let sb: Sandbox;
let server: S3Server;

beforeAll(async () => {
  sb = makeSandbox("mirror-s3");
  server = await startS3Server(sb.dir("s3rver"), BUCKET);
  copyFixtures(sb.agentDir);
  writeConfig(sb, { mirrors: [MIRROR] });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sb?.cleanup();
});

const ids = async (repo: string) => (await ok(sb, ["snapshots", "--json", "--repo", repo], { env: server.env })).json<{ id: string }[]>().map((s) => s.id);

describe("a mirror in S3", () => {
  it("snapshot ships to the bucket; a new machine with only the key restores from it byte-identical", { timeout: 60_000 }, async () => {
    await ok(sb, ["init"], { env: server.env });
    const snap = (await ok(sb, ["snapshot", "--json"], { env: server.env })).json();
    expect(snap.mirrors[0]).toMatchObject({ mirror: MIRROR, ok: true, created: true });
    expect(await ids(MIRROR)).toEqual([snap.snapshotId]);

    const other = makeSandbox("mirror-s3-new");
    try {
      const key = path.join(other.configHome, "pi-guard", "key");
      mkdirSync(path.dirname(key), { recursive: true });
      copyFileSync(path.join(sb.configHome, "pi-guard", "key"), key);
      const dest = other.dir("restored");
      const r = (await ok(other, ["restore", "latest", "--json", "--target", dest], { env: { ...server.env, PI_GUARD_REPO: MIRROR } })).json();
      expect(r.snapshotId).toBe(snap.snapshotId);
      expect(fingerprint(treeState(dest))).toEqual(fingerprint(treeState(sb.agentDir)));
    } finally {
      other.cleanup();
    }
  });

  it("with the server down the snapshot is saved locally and the failure is named; the next snapshot catches up", { timeout: 120_000 }, async () => {
    await server.stop();
    writeFileSync(path.join(sb.agentDir, "while-down.bin"), randomBytes(100_000));
    // No retry budget: the mirror stays down until the restart below (a short outage would be waited out).
    const downEnv = { ...server.env, PI_GUARD_RETRY_MAX: "0" };
    const down = await cli(sb, ["snapshot", "--json"], { env: downEnv });
    expect(down.code).toBe(1);
    const saved = down.json();
    expect(saved.mirrors[0]).toMatchObject({ mirror: MIRROR, ok: false, transient: true });
    expect(down.stderr).toMatch(new RegExp(`snapshot ${saved.snapshotId.slice(0, 8)} saved in ${sb.repo}; mirror ${MIRROR} failed: cannot reach S3 at 127\\.0\\.0\\.1:\\d+: ECONNREFUSED[^;]*; it will be retried by the next snapshot or \`pi-guard copy\``));
    expect((await ids(sb.repo)).at(-1)).toBe(saved.snapshotId);
    const checkDown = await cli(sb, ["check", "--all", "--json"], { env: downEnv });
    expect(checkDown.code).toBe(1);
    expect(checkDown.json().map((t: { target: string; ok: boolean }) => [t.target, t.ok])).toEqual([[sb.repo, true], [MIRROR, false]]);

    server = await startS3Server(server.dir, BUCKET, server.port);
    writeFileSync(path.join(sb.agentDir, "after.bin"), randomBytes(100_000));
    const next = (await ok(sb, ["snapshot", "--json"], { env: server.env })).json();
    expect(next.mirrors[0].ok).toBe(true);
    expect((await ids(MIRROR)).at(-1)).toBe(next.snapshotId);
    const all = (await ok(sb, ["check", "--all", "--read-data", "--json"], { env: server.env })).json();
    expect(all.map((t: { target: string; ok: boolean }) => [t.target, t.ok])).toEqual([[sb.repo, true], [MIRROR, true]]);
    // The snapshot made while the bucket was down: `copy` sends it too.
    const copy = (await ok(sb, ["copy", "--json"], { env: server.env })).json();
    expect(copy[0].copy.copied).toEqual([saved.snapshotId]);
    expect(await ids(MIRROR)).toEqual(await ids(sb.repo));
    const a = sb.dir("down-from-primary");
    const b = sb.dir("down-from-mirror");
    await ok(sb, ["restore", saved.snapshotId, "--target", a], { env: server.env });
    await ok(sb, ["restore", saved.snapshotId, "--target", b, "--repo", MIRROR], { env: server.env });
    expect(fingerprint(treeState(b))).toEqual(fingerprint(treeState(a)));
  });

  it("a pack deleted from the bucket by another client: check names it, repair heals it from the local copy", { timeout: 60_000 }, async () => {
    const awsEnv = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: sb.home, AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_DEFAULT_REGION: "us-east-1" };
    const aws = (...args: string[]) => promisify(execFile)("aws", ["--endpoint-url", server.endpoint, "s3", ...args], { env: awsEnv });
    const listing = (await aws("ls", "--recursive", `s3://${BUCKET}/laptop/data/`)).stdout;
    const keys = listing.split("\n").map((l) => l.trim().split(/\s+/)).filter((f) => f.length === 4).sort((a, b) => Number(b[2]) - Number(a[2]));
    const victim = keys[0][3];
    await aws("rm", `s3://${BUCKET}/${victim}`);
    const check = await cli(sb, ["check", "--json", "--repo", MIRROR], { env: server.env });
    expect(check.code).toBe(3);
    expect(JSON.stringify(check.json().problems)).toContain(`pack ${path.basename(victim).slice(0, 12)} is in the index but missing`);
    const r = (await ok(sb, ["repair", "--from", sb.repo, "--to", MIRROR, "--json"], { env: server.env })).json();
    expect(r.packs.missing).toEqual([path.basename(victim)]);
    expect(r.unhealed).toEqual({ blobs: [], snapshots: [] });
    expect((await ok(sb, ["check", "--read-data", "--json", "--repo", MIRROR], { env: server.env })).json().ok).toBe(true);
    const a = sb.dir("healed-from-primary");
    const b = sb.dir("healed-from-mirror");
    await ok(sb, ["restore", "latest", "--target", a], { env: server.env });
    await ok(sb, ["restore", "latest", "--target", b, "--repo", MIRROR], { env: server.env });
    expect(fingerprint(treeState(b))).toEqual(fingerprint(treeState(a)));
  });
});
