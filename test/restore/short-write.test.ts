// A full disk or a file size limit makes a write return fewer bytes than asked. Restore must
// keep writing or fail: never rename a truncated file into place, never report success, and
// leave the previous file intact and no temp file behind.
//
// As root, on a 1 MiB tmpfs (a --target restore, and an in-place one with the agent dir on it);
// `ulimit -f` in a child shell always (and instead of tmpfs when mount is not allowed).

import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, cli, collect, initRepo, snapshot } from "../helpers/cli.js";
import { listFiles, makeSandbox, type Sandbox } from "../helpers/tmp.js";

// One batch of blobs (restore writes up to 2 MiB at a time): a single short write, no later
// write to fail, is exactly the case that used to be renamed into place.
const BIG = randomBytes(1536 * 1024);
const OLD = BIG.subarray(0, 200 * 1024);
const FILE = "sessions/--p--/2026-01-02T03-04-05-000Z_5b0e0000-0000-4000-8000-000000000001.jsonl";

function tryMount(dir: string): boolean {
  mkdirSync(dir, { recursive: true });
  return spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir]).status === 0;
}

describe("restore on a full disk or under a file size limit", () => {
  let sb: Sandbox;
  let snap: string;
  const mounts: string[] = [];
  const temps = (dir: string) => listFiles(dir).filter((f) => f.includes(".pi-guard-"));

  beforeAll(async () => {
    sb = makeSandbox("short");
    mkdirSync(path.join(sb.agentDir, path.dirname(FILE)), { recursive: true });
    writeFileSync(path.join(sb.agentDir, FILE), BIG);
    writeFileSync(path.join(sb.agentDir, "small.txt"), "small\n");
    await initRepo(sb);
    snap = (await snapshot(sb)).snapshotId;
  });

  afterAll(() => {
    for (const m of mounts.reverse()) spawnSync("umount", [m]);
    sb?.cleanup();
  });

  it("--target on a 1 MiB tmpfs: exit 1, the file is listed as failed and absent, no temp file", async (ctx) => {
    const target = path.join(sb.root, "tiny");
    if (!tryMount(target)) ctx.skip();
    mounts.push(target);
    const r = await cli(sb, ["restore", snap, "--target", target, "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const failed = r.json().failed as { path: string; error: string }[];
    expect(failed.map((f) => f.path)).toEqual([FILE]);
    expect(failed[0].error).toMatch(/no space left/);
    expect(existsSync(path.join(target, FILE))).toBe(false);
    expect(temps(target)).toEqual([]);
  });

  it("in place with the agent dir on a 1 MiB tmpfs: exit 1 and the older, smaller file is intact", async (ctx) => {
    rmSync(sb.agentDir, { recursive: true });
    if (!tryMount(sb.agentDir)) ctx.skip();
    mounts.push(sb.agentDir);
    mkdirSync(path.join(sb.agentDir, path.dirname(FILE)), { recursive: true });
    writeFileSync(path.join(sb.agentDir, FILE), OLD);
    const r = await cli(sb, ["restore", snap, "--json"]);
    expect(r.code, r.stderr).toBe(1);
    // small.txt may fail too: written while the big file's partial temp still fills the disk
    // (one CI run). Whatever failed, failed for want of space, and is named.
    const failed = r.json().failed as { path: string; error: string }[];
    expect(failed.map((f) => f.path)).toContain(FILE);
    for (const f of failed) expect(f.error, f.path).toMatch(/no space left/);
    expect(readFileSync(path.join(sb.agentDir, FILE)).equals(OLD)).toBe(true);
    expect(temps(sb.agentDir)).toEqual([]);
  });

  it("under ulimit -f 1024 (1 MiB): exit 1, the file is listed as failed and absent, no temp file", async () => {
    const target = path.join(sb.root, "limited");
    const child = spawn("bash", ["-c", 'ulimit -f 1024 && exec "$0" "$@"', process.execPath, BIN, "restore", snap, "--target", target, "--json"], {
      env: sb.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const r = await collect(child);
    expect(r.code, r.stderr).toBe(1);
    const failed = r.json().failed as { path: string; error: string }[];
    expect(failed.map((f) => f.path)).toEqual([FILE]);
    expect(failed[0].error).toMatch(/file too large/);
    expect(existsSync(path.join(target, FILE))).toBe(false);
    expect(readFileSync(path.join(target, "small.txt"), "utf8")).toBe("small\n");
    expect(temps(target)).toEqual([]);
  });
});
