// Invariant 1 and the user's accident: sessions written by pi's own agent loop are backed up,
// deleted the way an npm reify deleted them, and restored byte for byte, modes included.

import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, initRepo, ok, restoreJson, snapshot } from "../helpers/cli.js";
import { fauxText, fauxThinking, fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { fingerprint, makeSandbox, type Sandbox, sessionFiles, treeState, writePiConfigFiles } from "../helpers/tmp.js";

describe("round trip of real pi sessions through the CLI", () => {
  let sb: Sandbox;
  let main: PiSessionResult;
  let other: PiSessionResult;
  let snap1: string;
  let original: ReturnType<typeof treeState>;

  beforeAll(async () => {
    sb = makeSandbox("roundtrip");
    const project = sb.dir("project");
    writeFileSync(path.join(project, "notes.txt"), "line one\nline two\n");
    writePiConfigFiles(sb.agentDir);
    main = await makePiSession({
      agentDir: sb.agentDir,
      cwd: project,
      thinkingLevel: "medium",
      turns: [
        { user: "What is in notes.txt?", assistant: [[fauxThinking("Read it."), fauxToolCall("read", { path: "notes.txt" })], "Two lines."], label: "read" },
        { user: "Write a file", assistant: [[fauxText("Writing."), fauxToolCall("write", { path: "out.txt", content: "hello\n" })], "Done."] },
        { user: "Count files", assistant: [[fauxToolCall("bash", { command: "ls | wc -l" })], "Two files."], name: "round trip" },
        { user: "Another way", assistant: ["Alternative."], branchFromTurn: 0 },
      ],
      fork: { atTurn: 1, turns: [{ user: "Continue in the fork", assistant: ["Forked reply."] }] },
    });
    other = await makePiSession({
      agentDir: sb.agentDir,
      cwd: sb.dir("other-project"),
      turns: [{ user: "hi", assistant: ["hello"] }],
    });
    await initRepo(sb);
    snap1 = (await snapshot(sb)).snapshotId;
    original = treeState(sb.agentDir);
  });

  afterAll(() => sb?.cleanup());

  it("has three real pi sessions to work with", () => {
    expect(sessionFiles(sb.sessionsDir)).toEqual([main.file, main.fork!.file, other.file].sort());
    expect(original.get("auth.json")?.mode).toBe(0o600);
  });

  it("restores sessions/, auth.json and models.json in place after they were deleted, byte-identical with modes", async () => {
    rmSync(sb.sessionsDir, { recursive: true });
    rmSync(path.join(sb.agentDir, "auth.json"));
    rmSync(path.join(sb.agentDir, "models.json"));

    const r = await restoreJson(sb, ["latest"]);
    expect(r.snapshotId).toBe(snap1);
    expect(r.failed).toEqual([]);
    expect(r.create).toBe(5); // three sessions, auth.json, models.json
    // It only created files: nothing to save first, and its undo deletes what it created.
    expect(r.undoSnapshot).toBeNull();
    expect((r as unknown as { undo: { command: string } }).undo.command).toMatch(/^pi-guard restore --undo \d{8}-\d{6}-[0-9a-f]{6}$/);

    expect(fingerprint(treeState(sb.agentDir))).toEqual(fingerprint(original));
    expect(statSync(path.join(sb.agentDir, "auth.json")).mode & 0o777).toBe(0o600);
    for (const file of sessionFiles(sb.sessionsDir)) {
      const v = validateWithPi(readFileSync(file, "utf8"), { expectMessages: true });
      expect(file).toContain(v.header.id);
    }
    const fork = validateWithPi(readFileSync(main.fork!.file, "utf8"));
    expect(fork.header.parentSession).toBe(main.file);
    expect(leftovers(sb.agentDir)).toEqual([]);
  });

  // From here on "latest" would be the pre-restore snapshot the in-place restore just took, so
  // the tests name the first snapshot by id.
  it("restores into --target DIR without touching the agent dir", async () => {
    const before = fingerprint(treeState(sb.agentDir));
    const target = path.join(sb.root, "restored-full");
    const r = await restoreJson(sb, [snap1, "--target", target]);
    expect(r.undoSnapshot).toBeNull();
    expect(fingerprint(treeState(target))).toEqual(fingerprint(original));
    expect(fingerprint(treeState(sb.agentDir))).toEqual(before);
  });

  it("--path GLOB restores only matching files", async () => {
    const target = path.join(sb.root, "restored-path");
    await restoreJson(sb, [snap1, "--target", target, "--path", "sessions/**"]);
    const sessionsOnly = (rel: string) => rel.startsWith("sessions/");
    expect(fingerprint(treeState(target))).toEqual(fingerprint(original, sessionsOnly));

    const target2 = path.join(sb.root, "restored-auth");
    await restoreJson(sb, [snap1, "--target", target2, "--path", "auth.json", "--path", "*.json"]);
    expect(Object.keys(fingerprint(treeState(target2))).sort()).toEqual(["auth.json", "models.json", "settings.json"]);
    expect(statSync(path.join(target2, "auth.json")).mode & 0o777).toBe(0o600);
  });

  it("--session ID restores only that session", async () => {
    const target = path.join(sb.root, "restored-session");
    const r = await restoreJson(sb, [snap1, "--target", target, "--session", main.sessionId]);
    const rel = path.relative(sb.agentDir, main.file);
    expect(r.files.map((f) => f.path)).toEqual([rel]);
    expect(Object.keys(fingerprint(treeState(target)))).toEqual([rel]);
    expect(treeState(target).get(rel)).toEqual(original.get(rel));
  });

  it("--dry-run reports what it would do and changes nothing", async () => {
    appendFileSync(main.file, JSON.stringify({ type: "label", id: "deadbeef", parentId: null, timestamp: new Date().toISOString(), label: "x" }) + "\n");
    rmSync(path.join(sb.agentDir, "auth.json"));
    const before = fingerprint(treeState(sb.agentDir));
    const snapsBefore = (await ok(sb, ["snapshots", "--json"])).json<unknown[]>().length;

    const r = await restoreJson(sb, [snap1, "--dry-run", "--delete"]);
    expect(r.dryRun).toBe(true);
    expect(r.undoSnapshot).toBeNull();
    const byPath = Object.fromEntries(r.files.map((f) => [f.path, f.action]));
    expect(byPath).toEqual({ "auth.json": "create", [path.relative(sb.agentDir, main.file)]: "replace" });

    expect(fingerprint(treeState(sb.agentDir))).toEqual(before);
    expect((await ok(sb, ["snapshots", "--json"])).json<unknown[]>().length).toBe(snapsBefore);
  });

  it("an in-place restore keeps files the snapshot lacks, and can be undone from undoSnapshot", async () => {
    // State now: main session has an extra line, auth.json is gone. Add a session made after the snapshot.
    const later = await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("later-project"), turns: [{ user: "new work", assistant: ["new answer"] }] });
    const preRestore = treeState(sb.agentDir);

    const r = await restoreJson(sb, [snap1]);
    expect(r.undoSnapshot).toMatch(/^[0-9a-f]{64}$/);
    const after = treeState(sb.agentDir);
    expect(after.get(path.relative(sb.agentDir, later.file))).toEqual(preRestore.get(path.relative(sb.agentDir, later.file)));
    expect(fingerprint(after, (rel) => original.has(rel))).toEqual(fingerprint(original));
    expect(after.size).toBe(original.size + 1);

    // Undo: the bytes from before the restore come back (the appended line included).
    await restoreJson(sb, [r.undoSnapshot!]);
    const undone = treeState(sb.agentDir);
    expect(fingerprint(undone, (rel) => preRestore.has(rel))).toEqual(fingerprint(preRestore));
    expect(readFileSync(main.file, "utf8")).toContain('"label":"x"');
  });

  it("--delete also removes files the snapshot lacks, and that too can be undone", async () => {
    const preRestore = treeState(sb.agentDir);
    const r = await restoreJson(sb, [snap1, "--delete"]);
    expect(r.delete).toBeGreaterThanOrEqual(1);
    expect(fingerprint(treeState(sb.agentDir))).toEqual(fingerprint(original));

    await restoreJson(sb, [r.undoSnapshot!]);
    expect(fingerprint(treeState(sb.agentDir), (rel) => preRestore.has(rel))).toEqual(fingerprint(preRestore));
    expect(treeState(sb.agentDir).size).toBe(preRestore.size);
  });

  it("leaves no temp files anywhere in the agent dir or the target dirs", () => {
    expect(leftovers(sb.root)).toEqual([]);
  });

  it("check --read-data passes after all of it", async () => {
    const r = await cli(sb, ["check", "--read-data", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json().ok).toBe(true);
  });
});

/** Temp files a restore may have left behind (its own `.name.pi-guard-xxxx` files or probes). */
function leftovers(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const a = path.join(d, e.name);
      if (e.isDirectory()) {
        if (e.name !== "backups") walk(a);
      } else if (/pi-guard-|\.tmp/.test(e.name)) out.push(a);
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}
