// Issue 17 item 15: a restore by time says what it discards, and its undo puts back only what it
// changed. The session is written by pi's real agent loop; two turns are appended after the
// snapshot, the user tags it, and a second session is started, all after the snapshot. The dry
// run counts, per session, the entries and messages (and bytes) of the live file after the part
// the snapshot shares with it, names sessions --delete would remove, and says that pi-guard's own
// tags roll back. The undo the restore prints leaves alone a session made after the restore,
// refuses (naming it) a file that changed since the restore, and with --force snapshots first.
import { appendFileSync, existsSync, readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, initRepo, ok, restoreJson } from "../helpers/cli.js";
import { fauxText, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

interface Discards {
  entries: number;
  messages: number;
  bytes: number;
  sessions: { root: string; path: string; action: string; sessionId: string | null; entries: number; messages: number; bytes: number }[];
  meta: { path: string; action: string }[];
}

/** What the live file holds past `offset`, counted line by line with JSON.parse (the test's own count; the header is no entry). */
function tailOf(file: string, offset: number): { entries: number; messages: number; bytes: number } {
  const tail = readFileSync(file).subarray(offset);
  const types = tail.toString("utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l).type as string);
  return { entries: types.filter((t) => t !== "session").length, messages: types.filter((t) => t === "message").length, bytes: tail.length };
}

describe("restore by time: what it discards, and an undo that puts back only what it changed", () => {
  let sb: Sandbox;
  let main: PiSessionResult;
  let newer: PiSessionResult;
  let snap: { snapshotId: string; time: string };
  let sizeAtSnapshot: number;
  let live: Buffer;
  const rel = (file: string) => path.relative(sb.agentDir, file);
  const tags = () => JSON.parse(readFileSync(path.join(sb.dataHome, "pi-guard", "meta", "tags.json"), "utf8")).sessions as Record<string, string[]>;

  beforeAll(async () => {
    sb = makeSandbox("discards");
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);
    main = await makePiSession({
      agentDir: sb.agentDir,
      cwd: sb.dir("project"),
      turns: [
        { user: "first question", assistant: [fauxText("first answer")] },
        { user: "second question", assistant: [fauxText("second answer")] },
        { user: "third question, after the snapshot", assistant: [fauxText("third answer ".repeat(40))] },
        { user: "fourth question, after the snapshot", assistant: [fauxText("fourth answer ".repeat(40))] },
      ],
      afterTurn: async (index, file) => {
        if (index !== 1) return;
        await ok(sb, ["sessions", "tag", path.basename(file!).split("_")[1].slice(0, 13), "early"]);
        snap = (await ok(sb, ["snapshot", "--json"])).json();
        sizeAtSnapshot = statSync(file!).size;
        await new Promise((r) => setTimeout(r, 20));
      },
    });
    await ok(sb, ["sessions", "tag", main.sessionId, "later"]);
    newer = await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("project2"), turns: [{ user: "a new session", assistant: [fauxText("new")] }] });
    live = readFileSync(main.file);
  }, 120_000);

  afterAll(() => sb?.cleanup());

  it("the dry run counts the entries, messages and bytes of the session written after the snapshot, and says the tags roll back", async () => {
    const r = (await ok(sb, ["restore", snap.time, "--dry-run", "--json"])).json<{ snapshotId: string; discards: Discards }>();
    expect(r.snapshotId).toBe(snap.snapshotId);
    const expected = tailOf(main.file, sizeAtSnapshot);
    expect(expected.messages).toBe(4);
    expect(r.discards.sessions).toEqual([{ root: "agent", path: rel(main.file), action: "replace", sessionId: main.sessionId, ...expected }]);
    expect(r.discards).toMatchObject({ entries: expected.entries, messages: 4, bytes: expected.bytes });
    expect(r.discards.meta).toEqual([{ path: "tags.json", action: "replace" }]);

    const text = (await ok(sb, ["restore", snap.time, "--dry-run"])).stdout;
    expect(text).toMatch(new RegExp(`replace\\s+${rel(main.file).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}.*drops 4 newer messages`));
    expect(text).toMatch(/tags/);
  });

  it("with --delete the dry run also names the session made after the snapshot, whole", async () => {
    const r = (await ok(sb, ["restore", snap.time, "--dry-run", "--delete", "--json"])).json<{ discards: Discards }>();
    const whole = tailOf(newer.file, 0);
    expect(r.discards.sessions).toContainEqual({ root: "agent", path: rel(newer.file), action: "delete", sessionId: newer.sessionId, ...whole });
    expect(r.discards.messages).toBe(4 + whole.messages);
  });

  it("the undo the restore prints puts back what it replaced and leaves a session made after the restore alone", async () => {
    const out = await ok(sb, ["restore", snap.time]);
    expect(readFileSync(main.file).length).toBe(sizeAtSnapshot);
    expect(tags()[main.sessionId]).toEqual(["early"]);
    const undo = /undo with: (pi-guard .*)$/m.exec(out.stdout)?.[1];
    expect(undo, out.stdout).toBeDefined();

    const after = await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("project3"), turns: [{ user: "made after the restore", assistant: [fauxText("kept")] }] });
    const afterBytes = readFileSync(after.file);
    // Run the printed command as the user would.
    await ok(sb, undo!.split(" ").slice(1));
    expect(readFileSync(main.file).equals(live)).toBe(true);
    expect(tags()[main.sessionId].sort()).toEqual(["early", "later"]);
    expect(readFileSync(after.file).equals(afterBytes)).toBe(true);
    expect(existsSync(newer.file)).toBe(true);
    // The restore's own report said what it discarded.
    expect(out.stdout).toMatch(/discarded\s+4 newer messages/);
  });

  it("undo refuses a file that changed since the restore, naming it; --force snapshots first, then undoes", async () => {
    const r = await restoreJson(sb, [snap.snapshotId]);
    const id = (r as unknown as { undo: { id: string } }).undo.id;
    // pi appends to the restored session after the restore.
    const line = JSON.stringify({ type: "message", id: "0badc0de", parentId: null, timestamp: new Date().toISOString(), message: { role: "user", content: "after the restore", timestamp: Date.now() } });
    appendFileSync(main.file, line + "\n");
    const changed = readFileSync(main.file);

    const refused = expectOneLineError(await cli(sb, ["restore", "--undo", id]), 1);
    expect(refused).toContain(rel(main.file));
    expect(refused).toMatch(/changed since the restore/);
    expect(readFileSync(main.file).equals(changed)).toBe(true);

    const forced = (await ok(sb, ["restore", "--undo", id, "--force", "--json"])).json<{ undoSnapshot: string | null }>();
    expect(forced.undoSnapshot).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(main.file).equals(live)).toBe(true);
    // What --force replaced is in the snapshot it took first.
    const saved = path.join(sb.root, "saved");
    await ok(sb, ["restore", forced.undoSnapshot!, "--target", saved, "--session", main.sessionId]);
    expect(readFileSync(path.join(saved, rel(main.file)), "utf8")).toContain("0badc0de");
    // Undone once is undone.
    expect(expectOneLineError(await cli(sb, ["restore", "--undo", id]), 1)).toMatch(/already undone/);
  });

  it("the undo of a restore --delete brings back the sessions it deleted, and still leaves later ones alone", async () => {
    const newerBytes = readFileSync(newer.file);
    const r = await restoreJson(sb, [snap.snapshotId, "--delete"]);
    expect(r.files).toContainEqual({ root: "agent", path: rel(newer.file), action: "delete", size: 0 });
    expect(existsSync(newer.file)).toBe(false);
    const later = await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("project4"), turns: [{ user: "after the --delete", assistant: [fauxText("stays")] }] });
    const laterBytes = readFileSync(later.file);
    const u = (await ok(sb, ["restore", "--undo", "latest", "--json"])).json<{ undone: string; files: { path: string; action: string }[] }>();
    expect(u.undone).toBe((r as unknown as { undo: { id: string } }).undo.id);
    expect(u.files).toContainEqual({ root: "agent", path: rel(newer.file), action: "create" });
    expect(readFileSync(newer.file).equals(newerBytes)).toBe(true);
    expect(readFileSync(main.file).equals(live)).toBe(true);
    expect(readFileSync(later.file).equals(laterBytes)).toBe(true);
  });

  it("a restore that only creates files takes no pre-restore snapshot, and its undo deletes only what it created", async () => {
    rmSync(main.file);
    const r = await restoreJson(sb, [snap.snapshotId, "--session", main.sessionId]);
    expect(r.create).toBe(1);
    expect(r.undoSnapshot).toBeNull();
    const id = (r as unknown as { undo: { id: string } }).undo.id;
    const others = [newer.file].map((f) => readFileSync(f));
    await ok(sb, ["restore", "--undo", id]);
    expect(existsSync(main.file)).toBe(false);
    expect([newer.file].map((f) => readFileSync(f))).toEqual(others);
  });

  it("--undo and --force are refused with the flags that do not go with them (exit 2)", async () => {
    expect(expectOneLineError(await cli(sb, ["restore", "--undo", "latest", "--target", sb.dir("x")]), 2)).toMatch(/--undo .* takes no --target/);
    expect(expectOneLineError(await cli(sb, ["restore", "latest", "--force"]), 2)).toMatch(/--force goes with --undo/);
    expect(expectOneLineError(await cli(sb, ["restore", "--undo", "no such"]), 2)).toMatch(/--undo takes the id a restore printed/);
  });
});
