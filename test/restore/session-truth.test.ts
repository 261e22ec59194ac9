// `restore --session ID` restores a session or says why not; a run that changes nothing, or only
// creates files, takes no pre-restore snapshot.

import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, initRepo, ok, restoreJson, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

const IDS = ["aaaa0001-0000-4000-8000-000000000001", "aaaa0002-0000-4000-8000-000000000002", "bbbb0003-0000-4000-8000-000000000003"];
const rel = (id: string) => `sessions/--proj--/2026-01-02T03-04-05-000Z_${id}.jsonl`;

describe("restore --session tells the truth", () => {
  let sb: Sandbox;
  let s1: { snapshotId: string; time: string };
  const count = async () => (await ok(sb, ["snapshots", "--json"])).json<unknown[]>().length;

  beforeAll(async () => {
    sb = makeSandbox("session-truth");
    mkdirSync(path.join(sb.agentDir, "sessions/--proj--"), { recursive: true });
    for (const id of IDS) writeFileSync(path.join(sb.agentDir, rel(id)), `{"type":"session","version":3,"id":"${id}"}\n`);
    await initRepo(sb);
    s1 = await snapshot(sb);
    // The session is deleted before the snapshot that `latest` names.
    rmSync(path.join(sb.agentDir, rel(IDS[2])));
    await snapshot(sb);
  });

  afterAll(() => sb?.cleanup());

  it("an id that no snapshot holds is an error, and takes no snapshot", async () => {
    const before = await count();
    const line = expectOneLineError(await cli(sb, ["restore", "latest", "--session", "cccc"]), 1);
    expect(line).toMatch(/no snapshot holds a session whose id starts with "cccc"/);
    expect(await count()).toBe(before);
  });

  it("an ambiguous prefix is an error listing the matches, and restores nothing", async () => {
    rmSync(path.join(sb.agentDir, rel(IDS[0])));
    const before = await count();
    const line = expectOneLineError(await cli(sb, ["restore", "latest", "--session", "aaaa"]), 2);
    expect(line).toMatch(/session id "aaaa" is ambiguous: 2 sessions match/);
    expect(line).toContain(IDS[0]);
    expect(line).toContain(IDS[1]);
    expect(existsSync(path.join(sb.agentDir, rel(IDS[0])))).toBe(false);
    expect(await count()).toBe(before);
  });

  it("a session that latest lacks: the message names the last snapshot that holds it and a command that works", async () => {
    const line = expectOneLineError(await cli(sb, ["restore", "latest", "--session", "bbbb"]), 1);
    expect(line).toContain(`the last snapshot that does is ${s1.snapshotId.slice(0, 8)} (${s1.time})`);
    const command = /: pi-guard (restore \S+ --session \S+)$/.exec(line)?.[1];
    expect(command).toBe(`restore ${s1.snapshotId.slice(0, 8)} --session ${IDS[2]}`);
    const r = await restoreJson(sb, command!.split(" ").slice(1));
    expect(r.create).toBe(1);
    expect(readFileSync(path.join(sb.agentDir, rel(IDS[2])), "utf8")).toContain(IDS[2]);
  });

  it("a restore that changes nothing, or only creates, takes no pre-restore snapshot", async () => {
    const before = await count();
    const r = await restoreJson(sb, ["latest", "--session", IDS[1]]);
    expect(r.unchanged).toBe(1);
    expect(r.undoSnapshot).toBeNull();
    expect(await count()).toBe(before);
    // One that only creates a file has nothing to save either, but can still be undone.
    const created = await restoreJson(sb, ["latest", "--session", IDS[0]]);
    expect(created.create).toBe(1);
    expect(created.undoSnapshot).toBeNull();
    expect((created as unknown as { undo: unknown }).undo).not.toBeNull();
    expect(await count()).toBe(before);
    // One that replaces a file takes one first (and prints how to undo it).
    writeFileSync(path.join(sb.agentDir, rel(IDS[1])), "changed since\n");
    const replaced = await restoreJson(sb, ["latest", "--session", IDS[1]]);
    expect(replaced.replace).toBe(1);
    expect(replaced.undoSnapshot).toMatch(/^[0-9a-f]{64}$/);
    expect(await count()).toBe(before + 1);
  });
});
