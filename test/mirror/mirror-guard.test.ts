// Mirrors and the suspect-loss guard, through the built CLI, with a folder mirror and a mirror in a
// real S3 server (s3rver on 127.0.0.1): the scheduled snapshot job ships to the mirrors as the CLI
// snapshot does; after the accident (`rm -rf sessions auth.json` of real pi sessions) the
// suspect-loss snapshot reaches each mirror with its tag, so `restore latest` from a mirror alone
// still brings back the last whole state.

import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accident, piAgentDir } from "../helpers/accident.js";
import { cli, ok, type RestoreJson, type SnapshotJson } from "../helpers/cli.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { fingerprint, makeSandbox, type Sandbox, treeState, writeFileExact } from "../helpers/tmp.js";
import { writeConfig } from "./mirror-helpers.js";

const BUCKET = "pi-guard-mirror";
const S3_MIRROR = `s3://${BUCKET}/laptop`;

let sb: Sandbox;
let server: S3Server;
let folderMirror: string;
let mirrors: string[];

type Listed = { id: string; tags: string[] };
const listed = async (repo: string) => (await ok(sb, ["snapshots", "--json", "--repo", repo], { env: server.env })).json<Listed[]>();

beforeAll(async () => {
  sb = makeSandbox("mirror-guard");
  server = await startS3Server(sb.dir("s3rver"), BUCKET);
  folderMirror = path.join(sb.root, "mirror");
  mirrors = [folderMirror, S3_MIRROR];
  await piAgentDir(sb);
  writeConfig(sb, { mirrors });
  await ok(sb, ["init"], { env: server.env });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sb?.cleanup();
});

describe("mirrors and the suspect-loss guard", () => {
  let whole: string;
  let before: Record<string, string>;

  it("the scheduled snapshot job ships to every mirror, as `pi-guard snapshot` does", { timeout: 60_000 }, async () => {
    const first = (await ok(sb, ["snapshot", "--json"], { env: server.env })).json<SnapshotJson & { mirrors: { ok: boolean }[] }>();
    expect(first.mirrors.map((m) => m.ok)).toEqual([true, true]);
    writeFileExact(path.join(sb.agentDir, "settings.json"), JSON.stringify({ theme: "light" }), 0o644);
    const r = await cli(sb, ["run-scheduled", "--job", "snapshot", "--json"], { env: server.env });
    expect(r.code, r.stderr).toBe(0);
    const job = r.json<{ ran: { ok: boolean; summary: string }[] }>().ran[0];
    expect(job.ok, job.summary).toBe(true);
    whole = (await listed(sb.repo)).at(-1)!.id;
    expect(whole).not.toBe(first.snapshotId);
    for (const m of mirrors) expect((await listed(m)).map((s) => s.id), m).toEqual([first.snapshotId, whole]);
    before = fingerprint(treeState(sb.agentDir));
  });

  it("after the accident the suspect-loss snapshot reaches each mirror tagged, and restore latest from a mirror alone skips it", { timeout: 60_000 }, async () => {
    accident(sb);
    const r = await cli(sb, ["snapshot", "--json"], { env: server.env });
    expect(r.code, r.stderr).toBe(1);
    const loss = r.json<SnapshotJson & { tags: string[]; mirrors: { ok: boolean }[] }>();
    expect(loss.tags).toEqual(["suspect-loss"]);
    expect(loss.mirrors.map((m) => m.ok)).toEqual([true, true]);
    for (const m of mirrors) {
      const there = await listed(m);
      expect(there.at(-1), m).toEqual(expect.objectContaining({ id: loss.snapshotId, tags: ["suspect-loss"] }));
      const out = sb.dir(`restored-${there.length}-${m === folderMirror ? "folder" : "s3"}`);
      const restored = (await ok(sb, ["restore", "latest", "--repo", m, "--target", out, "--json"], { env: server.env })).json<RestoreJson>();
      expect(restored.snapshotId, m).toBe(whole);
      expect(fingerprint(treeState(out)), m).toEqual(before);
    }
  });
});
