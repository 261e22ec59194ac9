// Issue 17, item 6: a sessions dir moved to a bigger disk and linked back (`sessions -> /big/...`)
// was recorded as a link only: the snapshot exited 0 with no session in it. The folder behind the
// link is now a source root ("sessions", as a moved sessionDir is), the link stays in the agent
// root, the output says so, and a dangling link, a loop, or a link to a folder that holds the
// agent dir is a named loss (exit 3), never "nothing to back up". Sessions are pi's own.

import { appendFileSync, lstatSync, mkdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, unlinkSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, initRepo, ok, restoreJson } from "../helpers/cli.js";
import { makePiSession } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox, sessionFiles, writePiConfigFiles } from "../helpers/tmp.js";
import { readLog, startWatch, waitFor } from "../watch/watch-helpers.js";

describe("a symlinked sessions dir", () => {
  let sb: Sandbox;
  let big: string;
  let files: string[];
  const contents = new Map<string, Buffer>();

  beforeAll(async () => {
    sb = makeSandbox("sessions-link");
    writePiConfigFiles(sb.agentDir);
    big = path.join(sb.dir("bigdisk"), "pi-sessions");
    mkdirSync(big);
    symlinkSync(big, sb.sessionsDir);
    // pi writes through the link, as it does for a user who moved the folder.
    await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("proj-a"), turns: [{ user: "hello", assistant: ["hi there"] }, { user: "more", assistant: ["sure"] }] });
    await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("proj-b"), turns: [{ user: "second session", assistant: ["ok"] }] });
    files = sessionFiles(big);
    expect(files).toHaveLength(2);
    for (const f of files) contents.set(path.relative(big, f), readFileSync(f));
    await initRepo(sb);
  });
  afterAll(() => sb?.cleanup());

  it("backs up the folder behind the link as root sessions, keeps the link in the agent root, and says so", async () => {
    const r = await ok(sb, ["snapshot", "--json"]);
    const j = r.json();
    expect(j.skipped).toEqual([]);
    expect(j.notes.join("\n")).toContain(big);
    expect(j.notes.join("\n")).toMatch(/symlink/);
    const list = (await ok(sb, ["snapshots", "--json"])).json();
    expect(list.at(-1).roots).toContainEqual({ name: "sessions", path: sb.sessionsDir });
    const target = sb.dir("restored-target");
    await restoreJson(sb, ["latest", "--target", target]);
    for (const [rel, bytes] of contents) expect(readFileSync(path.join(target, ".sessions", rel)).equals(bytes)).toBe(true);
    expect(lstatSync(path.join(target, "sessions")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(target, "sessions"))).toBe(big);
    const human = await ok(sb, ["snapshot"]);
    expect(human.stdout).toMatch(/note: .*sessions.* symlink/);
  });

  it("a restore in place brings the sessions back through the link", async () => {
    for (const f of files) rmSync(path.dirname(f), { recursive: true, force: true });
    expect(sessionFiles(big)).toEqual([]);
    const r = await restoreJson(sb, ["latest"]);
    expect(r.failed).toEqual([]);
    expect(lstatSync(sb.sessionsDir).isSymbolicLink()).toBe(true);
    for (const [rel, bytes] of contents) expect(readFileSync(path.join(big, rel)).equals(bytes)).toBe(true);
    expect((await ok(sb, ["verify", "--json"])).json().identical).toBe(true);
  });

  it("the watcher sees pi's appends through the link, and snapshots them", async () => {
    const w = startWatch(sb, ["--quiet"]);
    try {
      const snapshots = () => readLog(sb).filter((e) => e.event === "snapshot").length;
      await waitFor("the watcher's first snapshot", () => snapshots() >= 1, 60_000);
      // Let the start settle (chokidar reports the link itself once), then append as pi does:
      // one appendFileSync of one entry, to a session in a project folder behind the link.
      await new Promise((r) => setTimeout(r, 2000));
      const before = snapshots();
      const file = path.join(sb.sessionsDir, path.relative(big, files[0]));
      const last = JSON.parse(readFileSync(file, "utf8").trim().split("\n").at(-1)!);
      appendFileSync(file, JSON.stringify({ ...last, id: "feedbeef", parentId: last.id, timestamp: new Date().toISOString() }) + "\n");
      await waitFor("a snapshot after the append", () => snapshots() > before, 20_000);
    } finally {
      w.child.kill("SIGTERM");
    }
    expect(await w.exited).toBe(0);
    const v = await ok(sb, ["verify", "--json"]);
    expect(v.json().identical).toBe(true);
  });

  it("a dangling link is a loss: the sessions root is named as skipped, exit 3", async () => {
    const moved = `${big}-gone`;
    renameSync(big, moved);
    try {
      const r = await cli(sb, ["snapshot", "--json"]);
      expect(r.code, r.stderr).toBe(3);
      const j = r.json();
      expect(j.skipped).toContainEqual(expect.objectContaining({ root: "sessions", path: "" }));
      expect(j.skipped.find((k: { root: string }) => k.root === "sessions").error).toMatch(/missing/);
      expect(j.tags).toContain("incomplete");
      expect(r.stderr).toMatch(/skipped sessions:/);
      // And the loss guard counts the sessions behind the link as the sessions they are.
      expect(j.suspectLoss).toMatchObject({ reason: "sessions" });
      expect(j.tags).toContain("suspect-loss");
    } finally {
      renameSync(moved, big);
    }
  });

  it("a symlink loop is named, not walked", async () => {
    const other = path.join(sb.agentDir, "sessions-b");
    unlinkSync(sb.sessionsDir);
    symlinkSync(other, sb.sessionsDir);
    symlinkSync(sb.sessionsDir, other);
    try {
      const r = await cli(sb, ["snapshot", "--json"]);
      expect(r.code, r.stderr).toBe(3);
      expect(r.json().skipped).toContainEqual(expect.objectContaining({ root: "sessions", path: "", error: expect.stringMatching(/ELOOP/) }));
    } finally {
      unlinkSync(other);
      unlinkSync(sb.sessionsDir);
      symlinkSync(big, sb.sessionsDir);
    }
  });

  it("a link to a folder that holds the agent dir is not walked (it would back up the agent dir twice, or the disk): exit 3", async () => {
    unlinkSync(sb.sessionsDir);
    symlinkSync(sb.home, sb.sessionsDir);
    try {
      const r = await cli(sb, ["snapshot", "--json"]);
      expect(r.code, r.stderr).toBe(3);
      const j = r.json();
      expect(j.skipped).toContainEqual(expect.objectContaining({ root: "sessions", path: "", error: expect.stringContaining(`holds ${sb.agentDir}`) }));
      // Nothing of the home folder came in through the link.
      expect(j.files).toBeLessThan(10);
    } finally {
      unlinkSync(sb.sessionsDir);
      symlinkSync(big, sb.sessionsDir);
    }
  });
});
