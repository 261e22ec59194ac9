// The suspect-loss guard outside the watcher: after the accident (`rm -rf sessions auth.json` in an
// agent dir holding real pi sessions), `pi-guard snapshot` and `run-scheduled --job snapshot` still
// take the snapshot (it is what the disk holds) but tag it suspect-loss, so it is never "latest"
// nor a parent, and fail loudly; `status` is unhealthy with no watcher running; `restore latest`
// brings back the last whole state; `--accept-loss` is how a deliberate deletion is accepted.

import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, initRepo, ok, type RestoreJson, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { accident, piAgentDir } from "../helpers/accident.js";
import { fingerprint, makeSandbox, type Sandbox, treeState } from "../helpers/tmp.js";

type Listed = { id: string; tags: string[]; parent: string | null };
type LossJson = SnapshotJson & { tags: string[]; suspectLoss: { reason: string; filesBefore: number; filesNow: number; lost: number; sample: string[] } | null; lossAccepted: boolean };

const listed = async (sb: Sandbox) => (await ok(sb, ["snapshots", "--json"])).json<Listed[]>();

describe("the suspect-loss guard on a plain and a scheduled snapshot", () => {
  let sb: Sandbox;
  let whole: SnapshotJson;
  let before: Record<string, string>;
  let sessionIds: string[];

  beforeAll(async () => {
    sb = makeSandbox("loss-guard");
    ({ sessionIds } = await piAgentDir(sb));
    await initRepo(sb);
    before = fingerprint(treeState(sb.agentDir));
    // The first snapshot ever has no parent: nothing to lose, exit 0.
    whole = await snapshot(sb);
    accident(sb);
  }, 60_000);
  afterAll(() => sb?.cleanup());

  it("a CLI snapshot after the accident is taken, tagged suspect-loss, and exits 1 with one loud line naming the loss and both ways out", async () => {
    const r = await cli(sb, ["snapshot", "--json"]);
    const line = expectOneLineError(r, 1);
    expect(line).toMatch(/SUSPECTED LOSS/);
    expect(line).toContain("every session file");
    expect(line).toContain(`5 of 7 files of snapshot ${whole.snapshotId.slice(0, 8)}`);
    expect(line).toContain("auth.json");
    expect(line).toContain("`pi-guard restore latest`");
    expect(line).toContain("`pi-guard snapshot --accept-loss`");
    const j = r.json<LossJson>();
    expect(j.tags).toEqual(["suspect-loss"]);
    expect(j.parent).toBe(whole.snapshotId);
    expect(j.files).toBe(2);
    expect(j.suspectLoss).toMatchObject({ reason: "sessions", filesBefore: 7, filesNow: 2, lost: 5 });
    expect(j.lossAccepted).toBe(false);
    const all = await listed(sb);
    expect(all.map((s) => s.id)).toEqual([whole.snapshotId, j.snapshotId]);
    expect(all[1].tags).toEqual(["suspect-loss"]);
  });

  it("status with no watcher running is unhealthy (exit 1) and names the suspected loss", async () => {
    const r = await cli(sb, ["status", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const j = r.json<{ healthy: boolean; problems: string[]; lastGoodSnapshot: { id: string }; newestSnapshot: { suspectLoss: boolean } }>();
    expect(j.healthy).toBe(false);
    expect(j.lastGoodSnapshot.id).toBe(whole.snapshotId);
    expect(j.newestSnapshot.suspectLoss).toBe(true);
    expect(j.problems.join("\n")).toMatch(/suspected loss/);
    const human = await cli(sb, ["status"]);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/UNHEALTHY/);
  });

  it("restore latest restores the last whole state, byte for byte", async () => {
    const out = sb.dir("restored");
    const r = await restoreJsonOf(sb, ["latest", "--target", out]);
    expect(r.snapshotId).toBe(whole.snapshotId);
    expect(fingerprint(treeState(out))).toEqual(before);
  });

  it("run-scheduled --job snapshot fails (exit 1): its snapshot is tagged too, judged against the last whole one, not the earlier loss", async () => {
    const r = await cli(sb, ["run-scheduled", "--job", "snapshot", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const ran = r.json<{ ran: { job: string; ok: boolean; summary: string }[] }>().ran;
    expect(ran).toHaveLength(1);
    expect(ran[0]).toMatchObject({ job: "snapshot", ok: false });
    expect(ran[0].summary).toMatch(/SUSPECTED LOSS: every session file/);
    expect(ran[0].summary).toContain("--accept-loss");
    const all = await listed(sb);
    expect(all).toHaveLength(3);
    expect(all[2].tags).toEqual(["suspect-loss"]);
    expect(all[2].parent).toBe(whole.snapshotId);
    expect((await cli(sb, ["status"])).code).toBe(1);
  });

  it("restoring one session in place does not launder the loss: the undo snapshot is tagged, and the next snapshot is still a suspected loss", async () => {
    const one = await restoreJsonOf(sb, ["latest", "--session", sessionIds[0]]);
    expect(one.snapshotId).toBe(whole.snapshotId);
    expect(one.create).toBe(1);
    const after = await cli(sb, ["snapshot", "--json"]);
    expect(after.code, after.stderr).toBe(1);
    const j = after.json<LossJson>();
    expect(j.tags).toEqual(["suspect-loss"]);
    expect(j.parent).toBe(whole.snapshotId);
    expect(j.suspectLoss).toMatchObject({ reason: "files", filesBefore: 7, lost: 4 });
  });

  it("once everything is restored in place, the next snapshot is whole again and status is healthy", async () => {
    // A file the restore replaces (not only creates) makes it take an undo snapshot first.
    writeFileSync(path.join(sb.agentDir, "settings.json"), JSON.stringify({ changed: "after the accident" }));
    const r = await restoreJsonOf(sb, ["latest"]);
    expect(r.snapshotId).toBe(whole.snapshotId);
    expect(r.replace).toBe(1);
    // The undo snapshot recorded the damaged state: it is tagged so, and is never a parent.
    expect(r.undoSnapshot).toMatch(/^[0-9a-f]{64}$/);
    const undo = (await listed(sb)).find((s) => s.id === r.undoSnapshot)!;
    expect(undo.tags.sort()).toEqual(["pre-restore", "suspect-loss"]);
    expect(fingerprint(treeState(sb.agentDir))).toEqual(before);
    const next = await snapshot(sb);
    expect(next.parent).toBe(whole.snapshotId);
    expect((await ok(sb, ["status"])).stdout).toMatch(/healthy/);
  });

  it("--tag suspect-loss cannot be given by hand", async () => {
    expect(expectOneLineError(await cli(sb, ["snapshot", "--tag", "suspect-loss"]), 2)).toContain("--tag suspect-loss is reserved");
  });
});

describe("accepting a deliberate deletion", () => {
  let sb: Sandbox;
  let whole: SnapshotJson;

  beforeAll(async () => {
    sb = makeSandbox("loss-accept");
    await piAgentDir(sb);
    await initRepo(sb);
    whole = await snapshot(sb);
    accident(sb);
  }, 60_000);
  afterAll(() => sb?.cleanup());

  it("snapshot --accept-loss takes the smaller state as the new whole one: untagged, exit 0, latest and the next parent", async () => {
    const accepted = (await ok(sb, ["snapshot", "--accept-loss", "--json"])).json<LossJson>();
    expect(accepted.tags).toEqual([]);
    expect(accepted.parent).toBe(whole.snapshotId);
    expect(accepted.suspectLoss).toMatchObject({ reason: "sessions", lost: 5 });
    expect(accepted.lossAccepted).toBe(true);
    expect((await ok(sb, ["status"])).stdout).toMatch(/healthy/);
    const next = await snapshot(sb);
    expect(next.parent).toBe(accepted.snapshotId);
    expect((await ok(sb, ["snapshots", "--json"])).json<Listed[]>().at(-1)!.tags).toEqual([]);
    const out = sb.dir("restored");
    expect((await restoreJsonOf(sb, ["latest", "--target", out])).snapshotId).toBe(next.snapshotId);
    expect(readFileSync(path.join(out, "settings.json"))).toEqual(readFileSync(path.join(sb.agentDir, "settings.json")));
  });

  it("an agent dir that is gone altogether is not 'nothing to back up' once a snapshot held it, even with --allow-empty; --accept-loss accepts it", async () => {
    rmSync(sb.agentDir, { recursive: true, force: true });
    const line = expectOneLineError(await cli(sb, ["snapshot", "--allow-empty"]), 1);
    expect(line).toContain(`${sb.agentDir} does not exist`);
    expect(line).toMatch(/`pi-guard restore latest` brings it back/);
    expect(line).toContain("--accept-loss");
    const accepted = await ok(sb, ["snapshot", "--allow-empty", "--accept-loss", "--json"]);
    expect(accepted.json()).toEqual({ snapshotId: null, reason: "agent dir missing", agentDir: sb.agentDir, via: "direct" });
  });
});

async function restoreJsonOf(sb: Sandbox, args: string[]): Promise<RestoreJson> {
  return (await ok(sb, ["restore", "--json", ...args])).json<RestoreJson>();
}
