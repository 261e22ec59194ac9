// The scheduled snapshot job runs the same snapshot policy as `pi-guard snapshot`
// (src/policy/snapshot.ts): with an S3 mirror configured (the real s3rver on 127.0.0.1), the
// snapshot that `run-scheduled --job snapshot` takes reaches the bucket, and the job says so.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok } from "../helpers/cli.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { copyFixtures, makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { writeConfig } from "../mirror/mirror-helpers.js";

const BUCKET = "pi-sched";
const MIRROR = `s3://${BUCKET}/laptop`;

let sb: Sandbox;
let server: S3Server;

beforeAll(async () => {
  sb = makeSandbox("sched-mirror");
  server = await startS3Server(sb.dir("s3rver"), BUCKET);
  copyFixtures(sb.agentDir);
  writeConfig(sb, { mirrors: [MIRROR] });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sb?.cleanup();
});

describe("the scheduled snapshot job", () => {
  it("run-scheduled --job snapshot ships the snapshot to the S3 mirror", { timeout: 90_000 }, async () => {
    await ok(sb, ["init"], { env: server.env });
    const ran = (await ok(sb, ["run-scheduled", "--job", "snapshot", "--json"], { env: server.env })).json<{ ran: { job: string; ok: boolean; summary: string }[] }>();
    expect(ran.ran).toHaveLength(1);
    expect(ran.ran[0]).toMatchObject({ job: "snapshot", ok: true });
    const primary = (await ok(sb, ["snapshots", "--json"], { env: server.env })).json<{ id: string }[]>().map((s) => s.id);
    expect(primary).toHaveLength(1);
    expect(ran.ran[0].summary).toContain(`snapshot ${primary[0].slice(0, 8)}`);
    const mirrored = (await ok(sb, ["snapshots", "--json", "--repo", MIRROR], { env: server.env })).json<{ id: string }[]>().map((s) => s.id);
    expect(mirrored).toEqual(primary);
    expect(ran.ran[0].summary).toContain(`shipped to ${MIRROR}`);
  });
});
