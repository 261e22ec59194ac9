// `pi-guard status` on a restic repository (issue 17: "there is no status for restic users"), with
// the real restic binary: the last good snapshot and its age, --max-age, a suspected loss found by
// its tag (tagged by plain restic here, as any tool could), the watcher's state file, --json, and
// exit 1 when unhealthy.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { watcherFiles } from "../../src/watch/state.js";
import { cli, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

const PASSWORD = "correct horse battery staple";
let sb: Sandbox;
let resticRepo: string;
let env: Record<string, string>;

const restic = (args: string[]) => execFileSync("restic", args, { env: { PATH: process.env.PATH!, HOME: sb.home, RESTIC_REPOSITORY: resticRepo, RESTIC_PASSWORD: PASSWORD }, encoding: "utf8" });

beforeAll(async () => {
  sb = makeSandbox("status-restic");
  resticRepo = path.join(sb.root, "restic-repo");
  env = { ...sb.env, PI_GUARD_REPO: `restic:${resticRepo}`, PI_GUARD_PASSWORD: PASSWORD, XDG_STATE_HOME: path.join(sb.root, "state") };
  writePiConfigFiles(sb.agentDir);
  mkdirSync(path.join(sb.sessionsDir, "--proj--"), { recursive: true });
  writeFileSync(path.join(sb.sessionsDir, "--proj--", "s.jsonl"), '{"type":"session","version":3,"id":"s"}\n');
  await ok(env, ["init"]);
}, 60_000);
afterAll(() => sb?.cleanup());

describe("pi-guard status on a restic repository", () => {
  it("no snapshot yet, then the last good one with its age; --max-age decides on age", async () => {
    const none = await cli(env, ["status", "--json"]);
    expect(none.code).toBe(1);
    expect(none.json()).toMatchObject({ engine: "restic", healthy: false, problems: ["no snapshot yet: run pi-guard snapshot"] });
    const snap = (await ok(env, ["snapshot", "--json"])).json();
    const r = await cli(env, ["status", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json()).toMatchObject({ engine: "restic", healthy: true, lastGoodSnapshot: { id: snap.snapshotId }, repository: { location: `restic:${resticRepo}`, snapshots: 1, objects: null }, watcher: { state: "none" } });
    const text = await cli(env, ["status"]);
    expect(text.stdout).toMatch(new RegExp(`last good snapshot\\s+${snap.snapshotId.slice(0, 8)}`));
    expect(text.stdout).toMatch(/repository\s+restic:.* \(restic\)/);
    expect(text.stdout).toMatch(/status\s+healthy/);
    await new Promise((r) => setTimeout(r, 5));
    const old = await cli(env, ["status", "--max-age", "1ms"]);
    expect(old.code).toBe(1);
    expect(old.stderr).toMatch(/older than the max age of 1 ms/);
    expect((await cli(env, ["status", "--max-age", "1h"])).code).toBe(0);
  });

  it("a newest snapshot tagged suspect-loss is unhealthy and not the last good one; a good one after it clears it", async () => {
    const loss = (await ok(env, ["snapshot", "--json"])).json();
    restic(["tag", "--add", "suspect-loss", loss.snapshotId]);
    const r = await cli(env, ["status", "--json"]);
    expect(r.code).toBe(1);
    const j = r.json();
    // restic gives a tagged snapshot a new id: found by its tag, whatever its id.
    expect(j.newestSnapshot).toMatchObject({ suspectLoss: true, tags: ["suspect-loss"] });
    expect(j.lastGoodSnapshot.id).not.toBe(j.newestSnapshot.id);
    expect(j.problemKinds.map((p: { kind: string }) => p.kind)).toEqual(["suspect-loss"]);
    expect((await cli(env, ["status"])).stdout).toMatch(/newest snapshot .* SUSPECTED LOSS/);
    await ok(env, ["snapshot", "-q"]);
    expect((await cli(env, ["status"])).code).toBe(0);
  });

  it("status --alert works on restic too, and the alert command never sees the repository's password", async () => {
    const seen = path.join(sb.root, "alert-env.txt");
    mkdirSync(path.join(sb.configHome, "pi-guard"), { recursive: true });
    writeFileSync(path.join(sb.configHome, "pi-guard", "config.json"), JSON.stringify({ alerts: { command: ["sh", "-c", `env > '${seen}'`] } }));
    await new Promise((r) => setTimeout(r, 5));
    const r = await cli(env, ["status", "--alert", "--max-age", "1ms", "--json"]);
    expect(r.code).toBe(1);
    expect(r.json().alert).toMatchObject({ outcome: { event: "unhealthy", run: { ok: true } } });
    const text = readFileSync(seen, "utf8");
    expect(text).toMatch(/^PI_GUARD_ALERT=unhealthy$/m);
    expect(text).toMatch(/^PI_GUARD_PROBLEM_KINDS=snapshot-too-old$/m);
    expect(text).not.toContain(PASSWORD);
    writeFileSync(path.join(sb.configHome, "pi-guard", "config.json"), "{}");
  });

  it("a watcher's state file is read too: a suspected loss it reports fails status", async () => {
    const file = watcherFiles(path.join(sb.root, "state", "pi-guard"), sb.agentDir).state;
    mkdirSync(path.dirname(file), { recursive: true });
    const now = new Date().toISOString();
    writeFileSync(
      file,
      JSON.stringify({ version: 1, pid: process.pid, host: os.hostname(), agentDir: sb.agentDir, repo: env.PI_GUARD_REPO, startedAt: now, updatedAt: now, cpu: { userMs: 1, systemMs: 1 }, rssBytes: 1, snapshots: { made: 1, failed: 0 }, nextJobs: [], suspectLoss: { since: now, snapshot: "ab".repeat(32), filesBefore: 9, filesNow: 1 } }),
    );
    const r = await cli(env, ["status", "--json"]);
    expect(r.code).toBe(1);
    expect(r.json().watcher).toMatchObject({ state: "running", pid: process.pid });
    expect(r.json().problems).toEqual([expect.stringMatching(/^the watcher reports a suspected loss since .*: 1 of 9 files left/)]);
  });
});
