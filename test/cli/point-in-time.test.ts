// Restore "as of a given time": an ISO time between two snapshots, a human phrase ("N seconds
// ago"), an id prefix, and a time before the first snapshot (a clear error, nothing written).

import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, initRepo, restoreJson, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox, sha256File, writeFileExact } from "../helpers/tmp.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const GAP_MS = 3_000;

describe("point-in-time restore", () => {
  let sb: Sandbox;
  let session: PiSessionResult;
  let s1: SnapshotJson;
  let s2: SnapshotJson;
  let bytes1: string;
  let bytes2: string;
  let settings1: string;

  beforeAll(async () => {
    sb = makeSandbox("pit");
    const cwd = sb.dir("project");
    session = await makePiSession({ agentDir: sb.agentDir, cwd, turns: [{ user: "first question", assistant: ["first answer"] }] });
    writeFileExact(path.join(sb.agentDir, "settings.json"), '{"theme":"dark"}\n', 0o644);
    await initRepo(sb);
    s1 = await snapshot(sb);
    bytes1 = sha256File(session.file);
    settings1 = sha256File(path.join(sb.agentDir, "settings.json"));

    await sleep(GAP_MS);
    // A new pi session appears and the user changes a setting (a rewrite).
    await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("project2"), turns: [{ user: "second", assistant: ["second answer"] }] });
    writeFileExact(path.join(sb.agentDir, "settings.json"), '{"theme":"light","defaultProvider":"openai"}\n', 0o644);
    s2 = await snapshot(sb);
    bytes2 = sha256File(path.join(sb.agentDir, "settings.json"));
  });

  afterAll(() => sb?.cleanup());

  const settingsIn = (dir: string) => sha256File(path.join(dir, "settings.json"));

  it("the two snapshots differ and are seconds apart", () => {
    expect(Date.parse(s2.time) - Date.parse(s1.time)).toBeGreaterThanOrEqual(GAP_MS);
    expect(bytes2).not.toBe(settings1);
  });

  it("an ISO time between the snapshots restores the earlier bytes", async () => {
    const mid = new Date((Date.parse(s1.time) + Date.parse(s2.time)) / 2).toISOString();
    const target = path.join(sb.root, "mid");
    const r = await restoreJson(sb, [mid, "--target", target]);
    expect(r.snapshotId).toBe(s1.snapshotId);
    expect(settingsIn(target)).toBe(settings1);
    expect(sha256File(path.join(target, path.relative(sb.agentDir, session.file)))).toBe(bytes1);
    // The session that only exists in the second snapshot is not there.
    expect(r.create).toBe(2);
  });

  it("the exact time of a snapshot selects that snapshot; latest selects the newest", async () => {
    expect((await restoreJson(sb, [s1.time, "--target", path.join(sb.root, "exact")])).snapshotId).toBe(s1.snapshotId);
    const latest = path.join(sb.root, "latest");
    expect((await restoreJson(sb, ["latest", "--target", latest])).snapshotId).toBe(s2.snapshotId);
    expect(settingsIn(latest)).toBe(bytes2);
  });

  it('a human phrase ("N seconds ago") between the snapshots restores the earlier bytes', async () => {
    const midMs = (Date.parse(s1.time) + Date.parse(s2.time)) / 2;
    const secondsAgo = Math.round((Date.now() - midMs) / 1000);
    const target = path.join(sb.root, "ago");
    const r = await restoreJson(sb, [`${secondsAgo} seconds ago`, "--target", target]);
    expect(r.snapshotId).toBe(s1.snapshotId);
    expect(settingsIn(target)).toBe(settings1);
    // And a phrase for "just now" picks the newest.
    expect((await restoreJson(sb, ["0 seconds ago", "--target", path.join(sb.root, "now")])).snapshotId).toBe(s2.snapshotId);
  });

  it("an id prefix selects that snapshot", async () => {
    const target = path.join(sb.root, "prefix");
    const r = await restoreJson(sb, [s1.snapshotId.slice(0, 8), "--target", target]);
    expect(r.snapshotId).toBe(s1.snapshotId);
    expect(readFileSync(path.join(target, "settings.json"), "utf8")).toBe('{"theme":"dark"}\n');
  });

  it("a time before the first snapshot is a clear one-line error and writes nothing", async () => {
    for (const when of ["1 hour ago", "2001-01-01T00:00:00Z", "yesterday"]) {
      const target = path.join(sb.root, `before-${when.replace(/\W+/g, "-")}`);
      const r = await cli(sb, ["restore", when, "--target", target]);
      const line = expectOneLineError(r, 1);
      expect(line).toMatch(/no snapshot at or before/);
      expect(line).toContain(s1.time);
      expect(existsSync(path.join(target, "settings.json"))).toBe(false);
    }
  });
});
