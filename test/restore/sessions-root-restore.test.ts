// Issue 17, item 6, the way back: a sessions dir that is a symlink to another disk, or moved by
// sessionDir in settings.json, is backed up as root "sessions". After the accident the link or
// settings.json is gone, so the config no longer names that root, yet `pi-guard restore latest`
// must bring everything back in ONE run: the agent dir with its link (or settings.json), and the
// sessions into the folder they name (re-created if it is gone too), byte for byte, exit 0. What
// this restore could not save first (a file it would replace behind the link) and what is not a pi
// session file waits for the second run, named; a hostile snapshot cannot use the rule to write
// anything else anywhere. Real pi sessions (pi's agent loop), the built CLI.

import { appendFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { piAgentDir, piAgentDirLinked } from "../helpers/accident.js";
import { cli, expectOneLineError, initRepo, ok, type RestoreJson, restoreJson, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { fingerprint, listFiles, makeSandbox, type Sandbox, sessionFiles, sha256File, treeState } from "../helpers/tmp.js";
import { craftSnapshot } from "./craft.js";

type Restored = RestoreJson & { undo: { id: string; command: string } | null };

describe("restore latest after `rm -rf ~/.pi/agent` with a symlinked sessions dir", () => {
  let sb: Sandbox;
  let big: string;
  let whole: SnapshotJson;
  let agentBefore: Record<string, string>;
  let bigBefore: Record<string, string>;

  const expectAllBack = async (r: RestoreJson) => {
    expect(r.snapshotId).toBe(whole.snapshotId);
    expect(r.failed).toEqual([]);
    expect(lstatSync(sb.sessionsDir).isSymbolicLink()).toBe(true);
    expect(readlinkSync(sb.sessionsDir)).toBe(big);
    expect(fingerprint(treeState(sb.agentDir))).toEqual(agentBefore);
    expect(fingerprint(treeState(big))).toEqual(bigBefore);
    expect((await ok(sb, ["verify", "--json"])).json().identical).toBe(true);
  };

  beforeAll(async () => {
    sb = makeSandbox("sessions-root-link");
    big = await piAgentDirLinked(sb);
    expect(sessionFiles(big)).toHaveLength(4);
    agentBefore = fingerprint(treeState(sb.agentDir));
    bigBefore = fingerprint(treeState(big));
    await initRepo(sb);
    whole = await snapshot(sb);
  }, 60_000);
  afterAll(() => sb?.cleanup());

  it("the folder behind the link survived: one run puts back the agent dir and its link, the sessions are found unchanged, exit 0", async () => {
    rmSync(sb.agentDir, { recursive: true, force: true });
    // --session leaves the link out: the sessions behind it are refused, saying what to run. (The
    // whole id: pi 1.x ids are UUIDv7, and these four share their first 8 digits.)
    const one = await cli(sb, ["restore", "latest", "--session", path.basename(sessionFiles(big)[0], ".jsonl").split("_")[1]]);
    expect(expectOneLineError(one, 1)).toMatch(/not restored: root "sessions" .*--paths and --session leave out the link .*; restore without them first/);
    const r = await restoreJson(sb, ["latest"]);
    await expectAllBack(r);
    expect(r.unchanged).toBe(4);
    expect(r.files.filter((f) => f.root === "sessions")).toEqual([]);
  });

  it("the folder behind the link is gone too: one run re-creates it and writes the sessions into it, byte for byte; --undo takes it all back", async () => {
    rmSync(sb.agentDir, { recursive: true, force: true });
    rmSync(big, { recursive: true, force: true });
    const r = (await ok(sb, ["restore", "latest", "--json"])).json<Restored>();
    await expectAllBack(r);
    expect(r.create).toBe(8);
    // The journal names root sessions by the link's path, which the config has again now.
    const undone = await cli(sb, ["restore", "--undo", r.undo!.id, "--json"]);
    expect(undone.code, undone.stderr).toBe(0);
    expect(sessionFiles(big)).toEqual([]);
    expect(existsSync(path.join(sb.agentDir, "auth.json"))).toBe(false);
    await expectAllBack(await restoreJson(sb, ["latest"]));
  });

  it("the link is there but the folder behind it is gone (only the other disk lost): one run re-creates the folder, exit 0", async () => {
    rmSync(big, { recursive: true, force: true });
    await expectAllBack(await restoreJson(sb, ["latest"]));
  });

  it("a session that changed behind the link is not replaced by the run that makes the link (nothing saved it first): named, exit 1; the next run replaces it after saving it", async () => {
    rmSync(sb.agentDir, { recursive: true, force: true });
    const changed = sessionFiles(big)[0];
    appendFileSync(changed, '{"type":"custom","id":"feedbeef","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}\n');
    const first = await cli(sb, ["restore", "latest", "--json"]);
    expect(first.code, first.stderr).toBe(1);
    const j = first.json<RestoreJson>();
    const rel = path.relative(big, changed);
    expect(j.failed).toEqual([expect.objectContaining({ root: "sessions", path: rel, error: expect.stringContaining(`pi-guard restore ${whole.snapshotId.slice(0, 8)}`) })]);
    expect(first.stderr).toContain(rel);
    expect(readlinkSync(sb.sessionsDir)).toBe(big);
    const second = (await ok(sb, ["restore", "latest", "--json"])).json<RestoreJson>();
    expect(second.replace).toBe(1);
    expect(second.undoSnapshot).toMatch(/^[0-9a-f]{64}$/);
    await expectAllBack(second);
  });

  it("after all that, the next snapshot is whole again: the config has the link, so root sessions, again", async () => {
    const next = (await ok(sb, ["snapshot", "--json"])).json<SnapshotJson & { tags: string[]; suspectLoss: unknown }>();
    expect(next).toMatchObject({ tags: [], suspectLoss: null, files: 7, filesNew: 0 });
  });
});

describe("restore latest after the accident deleted settings.json, whose sessionDir moved the sessions", () => {
  let sb: Sandbox;
  let moved: string;
  let whole: SnapshotJson;
  let agentBefore: Record<string, string>;
  let movedBefore: Record<string, string>;

  const expectAllBack = async (r: RestoreJson) => {
    expect(r.snapshotId).toBe(whole.snapshotId);
    expect(r.failed).toEqual([]);
    expect(fingerprint(treeState(sb.agentDir))).toEqual(agentBefore);
    expect(fingerprint(treeState(moved))).toEqual(movedBefore);
    expect((await ok(sb, ["verify", "--json"])).json().identical).toBe(true);
  };

  beforeAll(async () => {
    sb = makeSandbox("sessions-root-sessiondir");
    await piAgentDir(sb);
    moved = path.join(sb.dir("bigdisk"), "sessions");
    renameSync(sb.sessionsDir, moved);
    const settings = path.join(sb.agentDir, "settings.json");
    writeFileSync(settings, JSON.stringify({ ...JSON.parse(readFileSync(settings, "utf8")), sessionDir: moved }, null, 2));
    agentBefore = fingerprint(treeState(sb.agentDir));
    movedBefore = fingerprint(treeState(moved));
    await initRepo(sb);
    whole = await snapshot(sb);
  }, 60_000);
  afterAll(() => sb?.cleanup());

  it("settings.json and auth.json deleted: one run brings back both, and the sessions folder it names is found unchanged, exit 0", async () => {
    rmSync(path.join(sb.agentDir, "settings.json"));
    rmSync(path.join(sb.agentDir, "auth.json"));
    const r = await restoreJson(sb, ["latest"]);
    await expectAllBack(r);
    expect(r).toMatchObject({ create: 2, unchanged: 5 });
  });

  it("the whole agent dir and the moved folder gone: one run re-creates the folder and writes the sessions into it, exit 0", async () => {
    rmSync(sb.agentDir, { recursive: true, force: true });
    rmSync(moved, { recursive: true, force: true });
    const r = await restoreJson(sb, ["latest"]);
    await expectAllBack(r);
    expect(r.create).toBe(7);
  });
});

describe("the rule cannot be used by a hostile snapshot to write elsewhere", () => {
  let sb: Sandbox;
  let victim: string;
  const session = "2026-01-02T03-04-05-000Z_0b9c5c3e-0000-4000-8000-000000000001.jsonl";
  const roots = (agentDir: string) => [
    { name: "agent", path: agentDir },
    { name: "sessions", path: path.join(agentDir, "sessions") },
  ];
  const victimState = () => Object.fromEntries(listFiles(victim).map((f) => [path.relative(victim, f), sha256File(f)]));

  beforeAll(async () => {
    sb = makeSandbox("sessions-root-hostile");
    victim = sb.dir("victim");
    mkdirSync(path.join(victim, "cron.d"));
    writeFileSync(path.join(victim, "keep.txt"), "the user's own\n");
    writeFileSync(path.join(victim, "--p--.jsonl"), "the user's own jsonl\n");
    await initRepo(sb);
  });
  afterAll(() => sb?.cleanup());

  it("behind a link the snapshot makes, only new pi session files are written: no other name, no replacement, no link; each refusal named, exit 1", async () => {
    const id = await craftSnapshot(
      sb,
      [
        { type: "symlink", path: "sessions", target: victim },
        { type: "file", path: "settings.json", data: "{}\n" },
        { type: "file", root: "sessions", path: "evil.sh", data: "EVIL\n" },
        { type: "file", root: "sessions", path: "cron.d/evil", data: "EVIL\n" },
        { type: "file", root: "sessions", path: "keep.txt", data: "EVIL replacement\n" },
        { type: "file", root: "sessions", path: "--p--.jsonl", data: "EVIL replacement of a jsonl\n" },
        { type: "symlink", root: "sessions", path: "--p--/link.jsonl", target: "/etc/passwd" },
        { type: "file", root: "sessions", path: "a/b/--p--/deep.jsonl", data: "EVIL deep\n" },
        { type: "file", root: "sessions", path: `--p--/${session}`, data: '{"type":"session"}\n' },
      ],
      roots(sb.agentDir),
    );
    const before = victimState();
    rmSync(sb.agentDir, { recursive: true, force: true });
    const r = await cli(sb, ["restore", id, "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const j = r.json<RestoreJson>();
    expect(j.failed.map((f) => f.path).sort()).toEqual(["--p--.jsonl", "--p--/link.jsonl", "a/b/--p--/deep.jsonl", "cron.d/evil", "evil.sh", "keep.txt"]);
    expect(victimState()).toEqual({ ...before, [`--p--/${session}`]: sha256File(path.join(victim, "--p--", session)) });
    expect(readdirSync(path.join(victim, "cron.d"))).toEqual([]);
    expect(existsSync(path.join(victim, "a"))).toBe(false);
    expect(readFileSync(path.join(victim, "--p--", session), "utf8")).toBe('{"type":"session"}\n');
    expect(readlinkSync(sb.sessionsDir)).toBe(victim);
  });

  it("a link (or sessionDir) into the agent dir, to a folder that holds it, or whose parent is missing, a relative sessionDir, and a sessions root nothing names: refused as not configured, nothing written", async () => {
    const sessionDirIn = (dir: string) => ({ type: "file" as const, path: "settings.json", data: JSON.stringify({ sessionDir: dir }) });
    const cases: { target: string; roots?: { name: string; path: string }[]; settings?: string }[] = [
      { target: path.join(sb.agentDir, "inside") },
      { target: sb.home },
      { target: "/" },
      { target: path.join(sb.root, "no-such-disk", "pi-sessions") },
      { target: victim, roots: [{ name: "agent", path: sb.agentDir }, { name: "sessions", path: victim }] },
      // settings.json's sessionDir: one that holds the agent dir, a relative one, one the root does not have.
      { target: sb.home, settings: sb.home, roots: [{ name: "agent", path: sb.agentDir }, { name: "sessions", path: sb.home }] },
      { target: "victim", settings: "victim", roots: [{ name: "agent", path: sb.agentDir }, { name: "sessions", path: victim }] },
      { target: victim, settings: path.join(sb.root, "elsewhere"), roots: [{ name: "agent", path: sb.agentDir }, { name: "sessions", path: victim }] },
    ];
    for (const c of cases) {
      const id = await craftSnapshot(
        sb,
        [
          c.settings === undefined ? { type: "symlink", path: "sessions", target: c.target } : sessionDirIn(c.settings),
          { type: "file", root: "sessions", path: `--q--/${session}`, data: '{"type":"session"}\n' },
        ],
        c.roots ?? roots(sb.agentDir),
      );
      rmSync(sb.agentDir, { recursive: true, force: true });
      const r = await cli(sb, ["restore", id, "--json"]);
      expect(r.code, `${c.target}: ${r.stderr}`).toBe(1);
      expect(r.json<RestoreJson>().failed, c.target).toEqual([expect.objectContaining({ root: "sessions", path: "sessions/", error: expect.stringMatching(/not configured now/) })]);
      expect(listFiles(sb.root).filter((f) => f.includes("--q--")), c.target).toEqual([]);
    }
    expect(existsSync(path.join(sb.root, "no-such-disk"))).toBe(false);
  });
});
