// On S3 a listing can name an object that a GET then answers with 404 (another host's prune, a
// lifecycle rule, a listing that lags behind a delete). `check --read-data` must report that pack
// as damage (exit 3, one line naming it), as `restore` does, not crash with a stack trace.

import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, ok } from "../helpers/cli.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { listFiles, makeSandbox, type Sandbox } from "../helpers/tmp.js";

const BUCKET = "pi-404";
const PREFIX = "team/laptop";

let sb: Sandbox;
let server: S3Server;
let env: Record<string, string>;
let victim: string;

beforeAll(async () => {
  sb = makeSandbox("s3-404");
  server = await startS3Server(sb.dir("s3rver"), BUCKET);
  env = { ...server.env, PI_GUARD_REPO: `s3://${BUCKET}/${PREFIX}` };
  await makePiSession({
    agentDir: sb.agentDir,
    cwd: sb.dir("project"),
    turns: [{ user: "Remember the heron", assistant: [fauxText("The heron is remembered.")] }],
  });
  await ok(sb, ["init"], { env });
  await ok(sb, ["snapshot"], { env });
  // The largest pack holds the session's bytes (the others hold tree blobs).
  const packs = listFiles(path.join(server.dir, BUCKET, PREFIX, "data")).filter((f) => f.endsWith("._S3rver_object"));
  const biggest = packs.sort((a, b) => statSync(b).size - statSync(a).size)[0];
  victim = path.basename(biggest, "._S3rver_object");
  // Same folder and port; the next listing of data/ still names the pack, which is then gone.
  await server.stop();
  server = await startS3Server(server.dir, BUCKET, server.port, { vanishAfterList: `${PREFIX}/data/${victim.slice(0, 2)}/${victim}` });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  sb?.cleanup();
});

describe("a pack that is listed but answers 404", () => {
  it("check --read-data exits 3 with one line naming the pack, like restore", { timeout: 120_000 }, async () => {
    const check = await cli(sb, ["check", "--read-data"], { env });
    const where = `stderr:\n${check.stderr}\nstdout:\n${check.stdout}`;
    expect(check.stderr, where).not.toMatch(/^\s+at /m);
    expect(check.stderr, where).not.toMatch(/internal error/i);
    expect(check.code, where).toBe(3);
    const naming = check.stderr.split("\n").filter((l) => l.includes(victim.slice(0, 12)));
    expect(naming, where).toHaveLength(1);
    expect(naming[0]).toMatch(/not found|missing/);
    // The pack really is gone now (the 404 was no fluke).
    expect(readdirSync(path.join(server.dir, BUCKET, PREFIX, "data", victim.slice(0, 2))).filter((n) => n.startsWith(victim))).toEqual([]);

    const restore = await cli(sb, ["restore", "latest", "--target", sb.dir("restored")], { env });
    expect(restore.code, restore.stderr).toBe(3);
    expect(restore.stderr).toContain(`pack ${victim.slice(0, 12)}`);
    expect(restore.stderr).not.toMatch(/^\s+at /m);

    const json = await cli(sb, ["check", "--read-data", "--json"], { env });
    expect(json.code, json.stderr).toBe(3);
    expect(json.json<{ ok: boolean }>().ok).toBe(false);
  });
});
