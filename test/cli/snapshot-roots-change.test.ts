// Issue 17, items 5 and 6, when the accident changes the roots: a sessions dir linked to a bigger
// disk (`<agent dir>/sessions -> /big/...`) or moved by `sessionDir` in settings.json is a root of
// its own, "sessions", and the npm reify deletes the link or settings.json with everything else it
// does not know. The config then has fewer roots and no snapshot has exactly those: the snapshot
// must still be judged, against the newest whole snapshot of this host with the same agent dir,
// every file of the root that is gone counting as lost, so that the empty state never becomes
// "latest". A deliberate move of the sessions dir (into a link, or by sessionDir) is no loss.
// Real pi sessions (pi's agent loop), the built CLI, real restic.

import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accident, piAgentDir, piAgentDirLinked } from "../helpers/accident.js";
import { cli, expectOneLineError, initRepo, ok, type RestoreJson, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, sessionFiles, writePiConfigFiles } from "../helpers/tmp.js";

type Listed = { id: string; tags: string[]; parent: string | null; roots: { name: string; path: string }[] };
type LossJson = SnapshotJson & { tags: string[]; suspectLoss: { reason: string; filesBefore: number; filesNow: number; lost: number; sample: string[] } | null; lossAccepted: boolean };

const listed = async (sb: Sandbox | Record<string, string>) => (await ok(sb, ["snapshots", "--json"])).json<Listed[]>();

/** The snapshot `restore latest` picks (a dry run into a fresh folder: it takes every root). */
const latestPick = async (sb: Sandbox, env: Record<string, string> = sb.env) =>
  (await ok(env, ["restore", "latest", "--dry-run", "--target", sb.dir(`pick-${Date.now()}`), "--json"])).json<RestoreJson>().snapshotId;

/** An agent dir whose sessions dir is a symlink to a folder on a "bigger disk": pi's sessions are written through it. */
async function linkedSessions(sb: Sandbox): Promise<string> {
  const big = await piAgentDirLinked(sb);
  expect(sessionFiles(big)).toHaveLength(4);
  return big;
}

/** settings.json with `sessionDir`, as a user who moved the folder writes it. */
function setSessionDir(sb: Sandbox, dir: string): void {
  const file = path.join(sb.agentDir, "settings.json");
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), sessionDir: dir }, null, 2));
}

describe("the accident removes a sessions symlink: the guard judges against the last whole snapshot", () => {
  let sb: Sandbox;
  let big: string;
  let whole: SnapshotJson;

  beforeAll(async () => {
    sb = makeSandbox("roots-link");
    big = await linkedSessions(sb);
    await initRepo(sb);
    whole = await snapshot(sb);
    expect((await listed(sb)).at(-1)!.roots.map((r) => r.name)).toContain("sessions");
    // The reify removes the link (not the folder on the other disk) and auth.json.
    accident(sb);
    expect(existsSync(sb.sessionsDir)).toBe(false);
    expect(sessionFiles(big)).toHaveLength(4);
  }, 60_000);
  afterAll(() => sb?.cleanup());

  it("an agent dir gone altogether is not 'nothing to back up' with --allow-empty: the snapshot with the link held it (checked first: no snapshot since the accident)", async () => {
    const moved = `${sb.agentDir}.away`;
    renameSync(sb.agentDir, moved);
    try {
      const line = expectOneLineError(await cli(sb, ["snapshot", "--allow-empty"]), 1);
      expect(line).toContain(`${sb.agentDir} does not exist, but snapshot ${whole.snapshotId.slice(0, 8)}`);
    } finally {
      renameSync(moved, sb.agentDir);
    }
  });

  it("pi-guard snapshot is tagged suspect-loss and exits 1 with one line naming the last whole snapshot", async () => {
    const r = await cli(sb, ["snapshot", "--json"]);
    const line = expectOneLineError(r, 1);
    expect(line).toMatch(/SUSPECTED LOSS: every session file is gone/);
    expect(line).toContain(`5 of 7 files of snapshot ${whole.snapshotId.slice(0, 8)}`);
    expect(line).toContain("`pi-guard restore latest`");
    expect(line).toContain("`pi-guard snapshot --accept-loss`");
    const j = r.json<LossJson>();
    expect(j.tags).toEqual(["suspect-loss"]);
    expect(j.suspectLoss).toMatchObject({ reason: "sessions", filesBefore: 7, filesNow: 2, lost: 5 });
    expect(j.suspectLoss!.sample.join(" ")).toMatch(/sessions:--/);
    expect((await listed(sb)).at(-1)!.tags).toEqual(["suspect-loss"]);
  });

  it("restore latest still picks the whole snapshot, and status is unhealthy", async () => {
    expect(await latestPick(sb)).toBe(whole.snapshotId);
    const status = await cli(sb, ["status", "--json"]);
    expect(status.code, status.stderr).toBe(1);
    const j = status.json<{ healthy: boolean; lastGoodSnapshot: { id: string }; newestSnapshot: { suspectLoss: boolean } }>();
    expect(j).toMatchObject({ healthy: false, lastGoodSnapshot: { id: whole.snapshotId }, newestSnapshot: { suspectLoss: true } });
  });

  it("run-scheduled --job snapshot fails the same way", async () => {
    const r = await cli(sb, ["run-scheduled", "--job", "snapshot", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const ran = r.json<{ ran: { job: string; ok: boolean; summary: string }[] }>().ran;
    expect(ran[0]).toMatchObject({ job: "snapshot", ok: false });
    expect(ran[0].summary).toContain(`SUSPECTED LOSS: every session file is gone (5 of 7 files of snapshot ${whole.snapshotId.slice(0, 8)}`);
    expect((await listed(sb)).at(-1)!.tags).toEqual(["suspect-loss"]);
  });

  it("--accept-loss takes the smaller state as the new whole one: exit 0, untagged, latest", async () => {
    const accepted = (await ok(sb, ["snapshot", "--accept-loss", "--json"])).json<LossJson>();
    expect(accepted).toMatchObject({ tags: [], lossAccepted: true, suspectLoss: { reason: "sessions", lost: 5 } });
    expect(await latestPick(sb)).toBe(accepted.snapshotId);
    const next = (await ok(sb, ["snapshot", "--json"])).json<LossJson>();
    expect(next).toMatchObject({ tags: [], suspectLoss: null, parent: accepted.snapshotId });
  });
});

describe("the accident removes settings.json, whose sessionDir made the moved sessions dir a root", () => {
  let sb: Sandbox;
  let moved: string;
  let whole: SnapshotJson;

  beforeAll(async () => {
    sb = makeSandbox("roots-sessiondir");
    await piAgentDir(sb);
    // The folder moved to a bigger disk before pi-guard came: no snapshot ever had only the agent dir.
    moved = path.join(sb.dir("bigdisk"), "sessions");
    renameSync(sb.sessionsDir, moved);
    setSessionDir(sb, moved);
    await initRepo(sb);
    whole = await snapshot(sb);
    expect((await listed(sb)).at(-1)!.roots).toContainEqual({ name: "sessions", path: moved });
    // The reify deletes settings.json and auth.json; the moved folder is outside its reach.
    rmSync(path.join(sb.agentDir, "settings.json"));
    rmSync(path.join(sb.agentDir, "auth.json"));
    expect(sessionFiles(moved)).toHaveLength(4);
  }, 60_000);
  afterAll(() => sb?.cleanup());

  it("pi-guard snapshot is tagged suspect-loss (every file of the root no longer configured counts as lost) and exits 1", async () => {
    const r = await cli(sb, ["snapshot", "--json"]);
    const line = expectOneLineError(r, 1);
    expect(line).toContain(`SUSPECTED LOSS: every session file is gone (6 of 7 files of snapshot ${whole.snapshotId.slice(0, 8)}`);
    const j = r.json<LossJson>();
    expect(j.tags).toEqual(["suspect-loss"]);
    expect(j.suspectLoss).toMatchObject({ reason: "sessions", filesBefore: 7, filesNow: 1, lost: 6 });
    expect(await latestPick(sb)).toBe(whole.snapshotId);
    expect((await cli(sb, ["status"])).code).toBe(1);
  });
});

describe("an older snapshot with the same roots is not the baseline when a newer whole one exists", () => {
  let sb: Sandbox;

  beforeAll(() => {
    sb = makeSandbox("roots-stale");
  });
  afterAll(() => sb?.cleanup());

  it("first a plain agent dir (no sessions yet), then a sessions link: after the accident the snapshot is judged against the linked one", async () => {
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);
    // The same roots the accident leaves: only 3 files, none a session.
    const early = await snapshot(sb);
    await linkedSessions(sb);
    const linked = (await ok(sb, ["snapshot", "--json"])).json<LossJson>();
    expect(linked).toMatchObject({ tags: [], suspectLoss: null });
    accident(sb);
    const r = await cli(sb, ["snapshot", "--json"]);
    const line = expectOneLineError(r, 1);
    expect(line).toContain(`5 of 7 files of snapshot ${linked.snapshotId.slice(0, 8)}`);
    const j = r.json<LossJson>();
    expect(j.tags).toEqual(["suspect-loss"]);
    // Its files are compared with the older snapshot of the same roots: the dedup parent.
    expect(j.parent).toBe(early.snapshotId);
  });
});

describe("a deliberate move of the sessions dir is no loss", () => {
  const sandboxes: Sandbox[] = [];
  afterAll(() => sandboxes.forEach((sb) => sb.cleanup()));
  const setup = async (label: string) => {
    const sb = makeSandbox(label);
    sandboxes.push(sb);
    await piAgentDir(sb);
    await initRepo(sb);
    await snapshot(sb);
    return sb;
  };
  const untagged = async (sb: Sandbox, files: number) => {
    const r = await cli(sb, ["snapshot", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json<LossJson>()).toMatchObject({ tags: [], suspectLoss: null, files });
  };

  it("sessions in the agent dir, then moved to another disk and linked back: exit 0, untagged; and back again", async () => {
    const sb = await setup("roots-move-link");
    const big = path.join(sb.dir("bigdisk"), "pi-sessions");
    renameSync(sb.sessionsDir, big);
    symlinkSync(big, sb.sessionsDir);
    await untagged(sb, 7);
    rmSync(sb.sessionsDir);
    renameSync(big, sb.sessionsDir);
    await untagged(sb, 7);
  });

  it("sessions in the agent dir, then moved by sessionDir in settings.json: exit 0, untagged", async () => {
    const sb = await setup("roots-move-sessiondir");
    const moved = path.join(sb.dir("bigdisk"), "sessions");
    renameSync(sb.sessionsDir, moved);
    setSessionDir(sb, moved);
    await untagged(sb, 7);
  });
});

describe("restic engine: the roots change in the accident", () => {
  const PASSWORD = "correct horse battery staple";
  const sandboxes: Sandbox[] = [];
  afterAll(() => sandboxes.forEach((sb) => sb.cleanup()));
  const setup = async (label: string) => {
    const sb = makeSandbox(label);
    sandboxes.push(sb);
    const repo = path.join(sb.root, "restic-repo");
    const env = { ...sb.env, PI_GUARD_REPO: `restic:${repo}`, PI_GUARD_PASSWORD: PASSWORD };
    await piAgentDir(sb);
    await ok(env, ["init"]);
    const tags = (id: string) =>
      (JSON.parse(execFileSync("restic", ["snapshots", "--json"], { env: { PATH: process.env.PATH!, HOME: sb.home, RESTIC_REPOSITORY: repo, RESTIC_PASSWORD: PASSWORD }, encoding: "utf8" })) as { id: string; tags: string[] }[]).find((x) => x.id === id)?.tags;
    return { sb, env, tags };
  };
  const moveBySessionDir = (sb: Sandbox) => {
    const moved = path.join(sb.dir("bigdisk"), "sessions");
    renameSync(sb.sessionsDir, moved);
    setSessionDir(sb, moved);
  };
  const theAccident = (sb: Sandbox) => {
    rmSync(path.join(sb.agentDir, "settings.json"));
    rmSync(path.join(sb.agentDir, "auth.json"));
  };

  it("sessionDir from the start, then settings.json deleted: the snapshot is tagged suspect-loss in restic and exits 1", async () => {
    const { sb, env, tags } = await setup("roots-restic");
    moveBySessionDir(sb);
    const whole = (await ok(env, ["snapshot", "--json"])).json<LossJson>();
    theAccident(sb);
    const r = await cli(env, ["snapshot", "--json"]);
    const line = expectOneLineError(r, 1);
    expect(line).toContain(`SUSPECTED LOSS: every session file is gone (6 of 7 files of snapshot ${whole.snapshotId.slice(0, 8)}`);
    const j = r.json<LossJson>();
    expect(j.tags).toEqual(["suspect-loss"]);
    expect(tags(j.snapshotId)).toContain("suspect-loss");
    expect(await latestPick(sb, env)).toBe(whole.snapshotId);
  });

  it("a deliberate move by sessionDir is no loss; the accident after it is judged against the newest whole snapshot", async () => {
    const { sb, env } = await setup("roots-restic-move");
    await ok(env, ["snapshot", "--json"]);
    moveBySessionDir(sb);
    const moved = await cli(env, ["snapshot", "--json"]);
    expect(moved.code, moved.stderr).toBe(0);
    const whole = moved.json<LossJson>();
    expect(whole).toMatchObject({ tags: [], suspectLoss: null });
    theAccident(sb);
    const line = expectOneLineError(await cli(env, ["snapshot", "--json"]), 1);
    expect(line).toContain(`6 of 7 files of snapshot ${whole.snapshotId.slice(0, 8)}`);
  });
});
