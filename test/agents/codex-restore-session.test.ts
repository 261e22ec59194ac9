// `restore --session` for Codex CLI, with the real CLI offline. A rollout comes back with
// state_5.sqlite (its `threads` row lists it): into a wiped $CODEX_HOME both come back whole and
// codex resumes the session; where the live state_5.sqlite holds other sessions, replacing it
// would roll them back, so the thread's rows are merged into it instead (restore/sqlite-merge.ts),
// undoably; a --path naming the rollout alone is refused, and --target restores the unit whole.

import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { codexHome, codexThreadList, runCodex, startCodexModel } from "../helpers/agents/codex.js";
import { cli, expectOneLineError, initRepo, ok, type RestoreJson, snapshot } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { fingerprint, makeSandbox, type Sandbox, treeState } from "../helpers/tmp.js";

type Restored = RestoreJson & {
  checks: { agent: string; name: string; ok: boolean; message: string }[];
  rows: { live: string; tables: { table: string; added: number; replaced: number; deleted: number }[] }[];
  undo: { id: string } | null;
};

function withDb<T>(file: string, use: (db: Database) => T): T {
  const db = new Database(file);
  try {
    db.pragma("busy_timeout = 5000");
    return use(db);
  } finally {
    db.close();
  }
}

describe("restore --session with Codex CLI sessions (real codex, offline)", () => {
  let sb: Sandbox;
  let server: FakeModelServer;
  let a: { sessionId: string; rollout: string };
  afterAll(async () => {
    await server?.close();
    sb?.cleanup();
  });

  it("a wiped CODEX_HOME: --session --agent codex brings the rollout with state_5.sqlite, not the other session's rollout, and codex resumes it", async () => {
    sb = makeSandbox("codex-session");
    mkdirSync(sb.agentDir, { recursive: true });
    server = await startCodexModel([callTool("exec_command", { cmd: "echo e2e-tool-ran" }), say("The echo printed e2e-tool-ran.")]);
    a = await runCodex(sb, server, "run the echo please");
    const bytes = readFileSync(a.rollout);
    server.setScript([say("B here.")]);
    const b = await runCodex(sb, server, "hello B");
    await initRepo(sb);
    const s1 = await snapshot(sb);

    rmSync(codexHome(sb), { recursive: true, force: true });
    const r = (await ok(sb, ["restore", "latest", "--session", a.sessionId, "--agent", "codex", "--json"])).json<Restored>();
    expect(r.snapshotId).toBe(s1.snapshotId);
    expect(r.failed).toEqual([]);
    expect(r.files.map((f) => f.path).sort()).toEqual([path.relative(codexHome(sb), a.rollout), "state_5.sqlite"].sort());
    expect(r.files.every((f) => f.action === "create")).toBe(true);
    expect(readFileSync(a.rollout).equals(bytes)).toBe(true);
    expect(existsSync(b.rollout)).toBe(false);
    expect(r.checks.map((c) => [c.name, c.ok])).toEqual([
      ["codex: state_5.sqlite integrity", true],
      ["codex: threads", true],
    ]);

    server.setScript([say("Resumed after the restore: the echo printed e2e-tool-ran.")]);
    const resumed = await runCodex(sb, server, "what did the echo print?", { resume: a.sessionId });
    expect(resumed.sessionId).toBe(a.sessionId);
    expect(resumed.text).toBe("Resumed after the restore: the echo printed e2e-tool-ran.");
    expect(server.turnRequests.at(-1)!.body).toContain("e2e-tool-ran");
  });

  it("with the live state_5.sqlite there: --session brings the rollout and merges the thread's rows into it (no other thread's row changes), Codex lists and resumes it, --undo takes both out again; --path naming the rollout alone is refused; --target restores the unit whole", async () => {
    await snapshot(sb);
    const rollout = readFileSync(a.rollout);
    // After the snapshot: the rollout is gone and its threads row too (openai/codex #40426), and a newer session C begins.
    rmSync(a.rollout);
    withDb(path.join(codexHome(sb), "state_5.sqlite"), (db) => db.prepare("DELETE FROM threads WHERE id = ?").run(a.sessionId));
    server.setScript([say("C here.")]);
    const c = await runCodex(sb, server, "hello C");
    const listed = async () => (await codexThreadList(sb, server)).map((t) => t.id);
    expect(await listed()).not.toContain(a.sessionId);
    const threadRow = (id: string) => withDb(path.join(codexHome(sb), "state_5.sqlite"), (db) => JSON.stringify(db.prepare("SELECT * FROM threads WHERE id = ?").get(id)));
    const cRow = threadRow(c.sessionId);

    const r = (await ok(sb, ["restore", "latest", "--session", a.sessionId, "--json"])).json<Restored>();
    expect(r.failed).toEqual([]);
    expect(r.files.map((f) => `${f.action} ${f.path}`)).toEqual([`create ${path.relative(codexHome(sb), a.rollout)}`]);
    expect(readFileSync(a.rollout).equals(rollout)).toBe(true);
    const threads = r.rows.find((m) => m.live.endsWith("state_5.sqlite"))!.tables.find((t) => t.table === "threads")!;
    expect(threads.added).toBe(1);
    expect(threadRow(c.sessionId)).toBe(cRow);
    expect(await listed()).toEqual(expect.arrayContaining([a.sessionId, c.sessionId]));
    server.setScript([say("Resumed beside C: the echo printed e2e-tool-ran.")]);
    const resumed = await runCodex(sb, server, "what did the echo print?", { resume: a.sessionId });
    expect(resumed.sessionId).toBe(a.sessionId);
    expect(server.turnRequests.at(-1)!.body).toContain("e2e-tool-ran");

    // Codex wrote to the thread since: the undo names it, and --force puts back the state before the restore.
    expect(expectOneLineError(await cli(sb, ["restore", "--undo", r.undo!.id]), 1)).toMatch(/changed since the restore/);
    await ok(sb, ["restore", "--undo", r.undo!.id, "--force"]);
    expect(existsSync(a.rollout)).toBe(false);
    expect(threadRow(a.sessionId)).toBeUndefined();
    expect(threadRow(c.sessionId)).toBe(cRow);
    const before = fingerprint(treeState(codexHome(sb)), (rel) => !rel.endsWith("-shm"));

    // --path naming the rollout brings state_5.sqlite with it: refused the same way, unless --path names the db too.
    const rel = path.relative(codexHome(sb), a.rollout);
    const viaPath = expectOneLineError(await cli(sb, ["restore", "latest", "--path", rel]), 1);
    expect(viaPath).toMatch(/the files --path names come back with state_5\.sqlite .*replacing the live .*state_5\.sqlite would roll back its other sessions; nothing was restored/);
    expect(fingerprint(treeState(codexHome(sb)), (rel) => !rel.endsWith("-shm"))).toEqual(before);
    const both = (await ok(sb, ["restore", "latest", "--path", rel, "state_5.sqlite", "--dry-run", "--json"])).json<Restored>();
    // Codex sometimes leaves its -wal and -shm uncheckpointed at exit: those go with the db they belong to.
    const actions = both.files.map((f) => `${f.action} ${f.path}`);
    expect(actions).toEqual(expect.arrayContaining([`create ${rel}`, "replace state_5.sqlite"]));
    expect(actions.filter((a) => a !== `create ${rel}` && a !== "replace state_5.sqlite").every((a) => /^delete state_5\.sqlite-(wal|shm)$/.test(a))).toBe(true);

    const target = sb.dir("codex-target");
    const into = (await ok(sb, ["restore", "latest", "--session", a.sessionId, "--target", target, "--json"])).json<Restored>();
    expect(into.files.map((f) => f.path).sort()).toEqual([path.relative(codexHome(sb), a.rollout), "state_5.sqlite"].sort());
    expect(readFileSync(path.join(target, ".codex", path.relative(codexHome(sb), a.rollout))).equals(rollout)).toBe(true);
  });
});
