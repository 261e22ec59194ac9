// opencode end to end, with the real opencode 1.18.33 offline: a real session (with a bash tool
// call) is snapshotted by the built pi-guard CLI, the data dir is wiped as in the pi incident, the
// guard flags the next snapshot, `restore latest` brings the db back (the same rows, integrity_check
// ok, no stale -wal/-shm), and opencode itself continues the session and answers in it. A second
// case snapshots while opencode writes: the restored db is sound and opencode lists the session. A
// third deletes the sessions from the db in place, with no file vanishing: still a suspected loss.
import Database from "better-sqlite3";
import { existsSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { opencodeAdapter } from "../../src/agents/opencode/index.js";
import { loadConfig } from "../../src/config/config.js";
import { openRepository } from "../../src/engine.js";
import { BlobReader } from "../../src/repo/blob-reader.js";
import type { TreeNode } from "../../src/repo/format.js";
import { SealPool } from "../../src/repo/seal-pool.js";
import { copySqlite } from "../../src/snapshot/sqlite-copy.js";
import { readTree } from "../../src/snapshot/tree.js";
import { opencodeCli, opencodeDataDir, opencodeDb, runOpencode, startOpencodeModel } from "../helpers/agents/opencode.js";
import { expectMapped, readSession } from "../helpers/agents/read-session.js";
import { cli, initRepo, ok, snapshot } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox | undefined;
let server: FakeModelServer | undefined;
afterEach(async () => {
  await server?.close();
  sb?.cleanup();
  sb = server = undefined;
});

/** The session's rows, read from a consistent copy (never by opening the live db). */
async function rows(sb: Sandbox, file: string): Promise<{ integrity: unknown; sessions: unknown[]; messages: unknown[]; parts: unknown[] }> {
  const copy = await copySqlite(file, { stagingDir: sb.dir("test-staging") });
  const db = new Database(copy.path, { readonly: true });
  try {
    return {
      integrity: db.pragma("integrity_check", { simple: true }),
      sessions: db.prepare("SELECT id, title, directory FROM session ORDER BY id").all(),
      messages: db.prepare("SELECT id, session_id, data FROM message ORDER BY id").all(),
      parts: db.prepare("SELECT id, message_id, data FROM part ORDER BY id").all(),
    };
  } finally {
    db.close();
    await copy.dispose();
  }
}

/** Every file node of a snapshot, read back through the library. */
async function storedNodes(sb: Sandbox, id: string): Promise<TreeNode[]> {
  const repo = await openRepository(loadConfig({}, sb.env));
  await repo.loadIndex();
  const out: TreeNode[] = [];
  for await (const n of readTree(new BlobReader(repo, new SealPool(0)), await repo.loadSnapshot(id))) if (n.type === "file") out.push(n);
  return out;
}

/** root:path of every file in a snapshot. */
const storedFiles = async (sb: Sandbox, id: string): Promise<string[]> => (await storedNodes(sb, id)).map((n) => `${n.root}:${n.path}`);

const wipe = (dir: string) => {
  for (const name of readdirSync(dir)) rmSync(path.join(dir, name), { recursive: true, force: true });
};

describe("opencode end to end (real opencode 1.18.33, offline)", () => {
  it("a wiped opencode data dir is flagged, restored with the same rows and no stale side files, and opencode continues the session", async () => {
    sb = makeSandbox("oc-e2e");
    server = await startOpencodeModel([callTool("bash", { command: "echo tool-said-hello", description: "Print a greeting" }), say("The tool printed it.")]);
    const made = await runOpencode(sb, server, "please run echo");
    const before = await rows(sb, opencodeDb(sb));
    expect(before.sessions).toHaveLength(1);
    expect(JSON.stringify(before.parts)).toContain("tool-said-hello");

    await initRepo(sb);
    expect(loadConfig({}, sb.env).rootAgents).toMatchObject({ opencode: "opencode" });
    const first = await snapshot(sb);
    // The reader maps the real session into the common model, the same from the snapshot as live.
    const live = await readSession(opencodeAdapter, sb, made.sessionId);
    expect(live.header.id).toBe(made.sessionId);
    expectMapped(live, "bash");
    const stored = await readSession(opencodeAdapter, sb, made.sessionId, first.snapshotId);
    expect(stored.entries).toEqual(live.entries);
    expect(stored.header).toEqual(live.header);
    // Neither side file of the live db is in the snapshot: its consistent copy is, under the db's name.
    const inTree = await storedFiles(sb, first.snapshotId);
    expect(inTree.filter((p) => p.startsWith("opencode:opencode.db"))).toEqual(["opencode:opencode.db"]);

    wipe(opencodeDataDir(sb));
    const after = await cli(sb, ["snapshot", "--json"]);
    expect(after.code, after.stderr).toBe(1);
    expect(after.stderr).toMatch(/SUSPECTED LOSS/);
    expect(after.json<{ tags: string[] }>().tags).toContain("suspect-loss");

    const restored = (await ok(sb, ["restore", "latest", "--json"])).json<{ snapshotId: string; failed: unknown[] }>();
    expect(restored.snapshotId).toBe(first.snapshotId);
    expect(restored.failed).toEqual([]);
    expect(readdirSync(opencodeDataDir(sb)).filter((n) => n.startsWith("opencode.db"))).toEqual(["opencode.db"]);
    const back = await rows(sb, opencodeDb(sb));
    expect(back.integrity).toBe("ok");
    expect(back).toEqual(before);

    // opencode itself takes the restored session up again.
    server.setScript([say("Back again, same session.")]);
    const resumed = await runOpencode(sb, server, "are you still there?", { session: made.sessionId });
    expect(resumed.sessionId).toBe(made.sessionId);
    expect(resumed.text).toContain("Back again, same session.");
    const history = JSON.stringify((server.turnRequests.at(-1)!.json as { messages: unknown[] }).messages);
    expect(history).toContain("please run echo");
    expect(history).toContain("tool-said-hello");
  }, 300_000);

  it("snapshots taken while opencode writes restore to a sound db that opencode lists", async () => {
    sb = makeSandbox("oc-busy");
    server = await startOpencodeModel([say("warm up")]);
    await runOpencode(sb, server, "first session");
    await initRepo(sb);
    await snapshot(sb);
    // A slow reply, streamed word by word, with a tool call between: opencode writes parts throughout.
    const long = Array.from({ length: 60 }, (_, i) => `word${i}`).join(" ");
    server.setScript([
      callTool("bash", { command: "echo busy-writer", description: "Print" }, { chunkDelayMs: 30 }),
      say(long, { chunkDelayMs: 30 }),
    ]);
    const running = runOpencode(sb, server, "write a lot");
    const ids: string[] = [];
    const deadline = Date.now() + 120_000;
    let done = false;
    void running.finally(() => (done = true));
    while (!done && Date.now() < deadline) {
      if (existsSync(opencodeDb(sb))) ids.push((await snapshot(sb)).snapshotId);
      await new Promise((r) => setTimeout(r, 200));
    }
    const run = await running;
    expect(ids.length).toBeGreaterThan(0);
    const mid = ids.at(-1)!;

    wipe(opencodeDataDir(sb));
    const restored = (await ok(sb, ["restore", mid, "--json"])).json<{ failed: unknown[] }>();
    expect(restored.failed).toEqual([]);
    const back = await rows(sb, opencodeDb(sb));
    expect(back.integrity).toBe("ok");
    expect(back.sessions.length).toBeGreaterThanOrEqual(1);
    const list = await opencodeCli(sb, ["session", "list", "--format", "json"]);
    for (const s of back.sessions as { id: string }[]) expect(list.stdout).toContain(s.id);
    expect(run.text).toContain("word59");
  }, 300_000);

  it("a db that loses most of its sessions in place (a bad migration, anomalyco/opencode #13560): the snapshot records the session rows, flags the shrink as a suspected loss (rows), and restore latest brings them back", async () => {
    sb = makeSandbox("oc-rows");
    server = await startOpencodeModel([say("one")]);
    for (const word of ["one", "two", "three"]) {
      server.setScript([say(`answer ${word}`)]);
      await runOpencode(sb, server, `prompt ${word}`);
    }
    expect((await rows(sb, opencodeDb(sb))).sessions).toHaveLength(3);
    await initRepo(sb);
    const whole = await snapshot(sb);
    expect((await storedNodes(sb, whole.snapshotId)).find((n) => n.path === "opencode.db")?.rows).toEqual({ table: "session", count: 3 });

    // The migration's loss: the rows go, the file stays (opencode is not running).
    const db = new Database(opencodeDb(sb));
    db.prepare("DELETE FROM session").run();
    db.close();
    expect((await rows(sb, opencodeDb(sb))).sessions).toHaveLength(0);

    const flagged = await cli(sb, ["snapshot", "--json"]);
    expect(flagged.code, flagged.stderr).toBe(1);
    expect(flagged.stderr).toMatch(/SUSPECTED LOSS: a database lost most of its sessions \(opencode:opencode\.db: 0 of 3 rows of table session left/);
    const v = flagged.json<{ tags: string[]; suspectLoss: { reason: string; rows: unknown[]; against: string } }>();
    expect(v.tags).toEqual(["suspect-loss"]);
    expect(v.suspectLoss).toMatchObject({ reason: "rows", against: whole.snapshotId, rows: [{ file: "opencode:opencode.db", table: "session", before: 3, now: 0 }] });

    const restored = (await ok(sb, ["restore", "latest", "--json"])).json<{ snapshotId: string }>();
    expect(restored.snapshotId).toBe(whole.snapshotId);
    expect((await rows(sb, opencodeDb(sb))).sessions).toHaveLength(3);
    // Whole again: the next snapshot is no loss.
    const again = (await ok(sb, ["snapshot", "--json"])).json<{ tags: string[]; suspectLoss: unknown }>();
    expect(again).toMatchObject({ tags: [], suspectLoss: null });
  });
});
