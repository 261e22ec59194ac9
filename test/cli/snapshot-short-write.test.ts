// A snapshot that cannot write all its bytes fails: non-zero exit, no snapshot, no truncated
// pack, nothing left in the staging folder and no temp files, and the repository still checks.
// Short writes are real here: `ulimit -f` (Node ignores SIGXFSZ, so the write past the limit
// returns fewer bytes and the next one fails with EFBIG) and a 1 MiB tmpfs.

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, cli, initRepo, ok } from "../helpers/cli.js";
import { listFiles, makeSandbox, type Sandbox } from "../helpers/tmp.js";

/** About 4.4 MB of JSONL that zstd cannot shrink much: more than one pack frame, many chunks. */
function writeBigSession(agentDir: string): string {
  const dir = path.join(agentDir, "sessions", "--big--");
  mkdirSync(dir, { recursive: true });
  const lines: string[] = [];
  for (let i = 0; i < 15_000; i++) lines.push(JSON.stringify({ type: "message", id: i.toString(16).padStart(8, "0"), x: randomBytes(150).toString("base64") }));
  const file = path.join(dir, "2026-11-30T10-00-00-000Z_big.jsonl");
  writeFileSync(file, lines.join("\n") + "\n");
  return file;
}

function snapshotUnderUlimit(sb: Sandbox, repo: string, kib: number) {
  return spawnSync("bash", ["-c", `ulimit -f ${kib}; exec "${process.execPath}" "${BIN}" snapshot --json`], {
    env: { ...sb.env, PI_GUARD_REPO: repo },
    encoding: "utf8",
  });
}

/** Everything a failed writer might leave: staging files, temp files, packs. */
function leftovers(repo: string): string[] {
  return listFiles(repo)
    .map((f) => path.relative(repo, f))
    .filter((f) => f.startsWith("tmp/") || f.includes(".tmp-") || f.startsWith("data/"));
}

async function expectRepoIntactWithoutSnapshots(sb: Sandbox, repo: string): Promise<void> {
  const env = { PI_GUARD_REPO: repo };
  expect((await ok(sb, ["snapshots", "--json"], { env })).json()).toEqual([]);
  await ok(sb, ["check", "--read-data"], { env });
  expect(leftovers(repo)).toEqual([]);
}

describe("snapshot with short writes", () => {
  let sb: Sandbox;

  beforeAll(() => {
    sb = makeSandbox("shortwrite");
    writeBigSession(sb.agentDir);
  });
  afterAll(() => sb?.cleanup());

  it("a pack cut short inside its header under ulimit -f fails the snapshot and leaves nothing behind", async () => {
    await initRepo(sb);
    // The same repository twice (same key, so the same chunking and the same pack sizes): one to
    // learn the pack's size, one to fail in.
    const failing = path.join(sb.root, "failing-repo");
    cpSync(sb.repo, failing, { recursive: true });
    await ok(sb, ["snapshot", "--json"]);
    const packs = listFiles(path.join(sb.repo, "data")).map((f) => readFileSync(f));
    const biggest = packs.reduce((a, b) => (b.length > a.length ? b : a));
    const tail = biggest.readUInt32LE(biggest.length - 4) + 4;
    // The limit falls inside the pack's header: every frame fits, the header write is short and
    // no write follows it. Code that ignores bytesWritten then stores a truncated pack.
    const kib = Math.floor((biggest.length - 1) / 1024);
    expect(biggest.length - kib * 1024).toBeLessThanOrEqual(tail);

    const r = snapshotUnderUlimit(sb, failing, kib);
    expect(r.status, r.stdout + r.stderr).not.toBe(0);
    expect(r.stderr).toMatch(/EFBIG/);
    expect(r.stderr).not.toMatch(/^\s+at /m);
    await expectRepoIntactWithoutSnapshots(sb, failing);
  });

  it("a frame cut short under ulimit -f fails too", async () => {
    const repo = path.join(sb.root, "small-limit-repo");
    await ok(sb, ["init"], { env: { PI_GUARD_REPO: repo } });
    const r = snapshotUnderUlimit(sb, repo, 64);
    expect(r.status, r.stdout + r.stderr).not.toBe(0);
    await expectRepoIntactWithoutSnapshots(sb, repo);
  });

  const root = process.getuid?.() === 0;
  it.skipIf(!root)("a repository on a full 1 MiB tmpfs: the snapshot fails, leaves nothing, and the next one fits", async () => {
    const mnt = sb.dir("tmpfs");
    const m = spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt], { encoding: "utf8" });
    expect(m.status, m.stderr).toBe(0);
    try {
      const repo = path.join(mnt, "repo");
      const env = { PI_GUARD_REPO: repo };
      await ok(sb, ["init"], { env });
      const r = await cli(sb, ["snapshot", "--json"], { env });
      expect(r.code, r.stdout + r.stderr).not.toBe(0);
      expect(r.stderr).toMatch(/ENOSPC/);
      await expectRepoIntactWithoutSnapshots(sb, repo);
      // The failed run freed its space: a small agent dir backs up into the same tmpfs.
      const small = sb.dir("small-agent");
      mkdirSync(path.join(small, "sessions"), { recursive: true });
      writeFileSync(path.join(small, "auth.json"), "{}\n");
      const s = (await ok(sb, ["snapshot", "--json"], { env: { ...env, PI_CODING_AGENT_DIR: small } })).json();
      expect(s.files).toBe(1);
      await ok(sb, ["check", "--read-data"], { env });
    } finally {
      spawnSync("umount", [mnt]);
      rmSync(mnt, { recursive: true, force: true });
    }
  });
});

describe.skipIf(process.getuid?.() !== 0)("init on a full disk", () => {
  let sb: Sandbox;
  let mnt: string;

  beforeAll(() => {
    sb = makeSandbox("fullinit");
    mnt = sb.dir("tmpfs");
    const m = spawnSync("mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt], { encoding: "utf8" });
    if (m.status !== 0) throw new Error(`mount failed: ${m.stderr}`);
  });
  afterAll(() => {
    spawnSync("umount", [mnt]);
    sb?.cleanup();
  });

  it("leaves no cut-short key file behind, so that the next init can make a good one", async () => {
    const configHome = path.join(mnt, "config");
    mkdirSync(path.join(configHome, "pi-guard"), { recursive: true });
    // Fill the file system to the last byte.
    spawnSync("dd", ["if=/dev/zero", `of=${path.join(mnt, "filler")}`, "bs=4096"], { encoding: "utf8" });
    const env = { XDG_CONFIG_HOME: configHome };
    const r = await cli(sb, ["init"], { env });
    expect(r.code, r.stderr).not.toBe(0);
    expect(r.stderr).toMatch(/ENOSPC/);
    expect(listFiles(configHome)).toEqual([]);
    rmSync(path.join(mnt, "filler"));
    await ok(sb, ["init"], { env });
    await ok(sb, ["snapshots"], { env });
  });
});
