// `restore --session` of other agents' sessions on a restic repository, found as on a native one
// (agents/find-session.ts over restic's snapshot files), with real restic, real opencode and real
// Claude Code, offline. An opencode session restored into the live opencode.db is merged into it
// (restore/sqlite-merge.ts on restic's staged copy), other sessions untouched, and opencode
// continues it; a Claude Code session comes back byte for byte; and a whole restore of a live
// opencode.db deletes a -wal the snapshot lacks (on both engines): SQLite would replay its newer
// frames over the restored db.
import { existsSync, readFileSync, rmSync } from "node:fs";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claudeConfigDir, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { opencodeCli, opencodeDb, opencodeSessions, runOpencode, startOpencodeModel } from "../helpers/agents/opencode.js";
import { ok, type RestoreJson } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

type Restored = RestoreJson & { rows: { live: string; sessionId: string; tables: { table: string; added: number; replaced: number; deleted: number }[] }[] };

let sb: Sandbox;
let oc: FakeModelServer;
let claude: FakeModelServer;
let env: Record<string, string>;
let a: string;
let b: string;
let first: string;
let claudeRun: { sessionId: string; transcript: string };
let transcriptBytes: Buffer;

const restore = async (args: string[]) => (await ok(env, ["restore", "--json", ...args])).json<Restored>();
const added = (r: Restored) => r.rows.flatMap((m) => m.tables).reduce((n, t) => n + t.added, 0);

beforeAll(async () => {
  sb = makeSandbox("restic-agent-session");
  oc = await startOpencodeModel([callTool("bash", { command: "echo restic-merge-tool", description: "Print" }), say("A ran the tool.")]);
  a = (await runOpencode(sb, oc, "session A: please run echo")).sessionId;
  oc.setScript([say("B answers.")]);
  b = (await runOpencode(sb, oc, "session B: hello")).sessionId;
  claude = await startClaudeModel([say("A Claude Code answer kept in restic.")]);
  claudeRun = await runClaude(sb, claude, "remember the otter");
  transcriptBytes = readFileSync(claudeRun.transcript);
  env = { ...sb.env, CLAUDE_CONFIG_DIR: claudeConfigDir(sb), PI_GUARD_REPO: `restic:${sb.root}/restic-repo`, PI_GUARD_PASSWORD: "restic session password" };
  await ok(env, ["init"]);
  first = (await ok(env, ["snapshot", "--json", "--allow-empty"])).json<{ snapshotId: string }>().snapshotId;
}, 300_000);

afterAll(async () => {
  await oc?.close();
  await claude?.close();
  sb?.cleanup();
});

describe("restic engine: restore --session of any agent", () => {
  it("an opencode session deleted by opencode is merged back into the live opencode.db; a newer session stays; opencode lists and continues it", async () => {
    await opencodeCli(sb, ["session", "delete", a]);
    oc.setScript([say("C answers.")]);
    const c = (await runOpencode(sb, oc, "session C: new")).sessionId;
    expect(await opencodeSessions(sb)).not.toContain(a);

    const dry = await restore(["latest", "--session", a, "--dry-run"]);
    expect(added(dry)).toBeGreaterThan(0);
    expect(await opencodeSessions(sb)).not.toContain(a);

    const r = await restore(["latest", "--session", a]);
    expect(r.snapshotId).toBe(first);
    expect(r.failed).toEqual([]);
    expect(r.files).toEqual([]); // opencode.db is not replaced: the session's rows are merged into it
    expect(r.rows.map((m) => [m.live, m.sessionId])).toEqual([[opencodeDb(sb), a]]);
    expect(added(r)).toBe(added(dry));
    expect(r.undoSnapshot).toBeTruthy();
    expect(await opencodeSessions(sb)).toEqual(expect.arrayContaining([a, b, c]));

    oc.setScript([say("Back in A, from restic.")]);
    const resumed = await runOpencode(sb, oc, "session A: are you there?", { session: a });
    expect(resumed.text).toContain("Back in A, from restic.");
    expect(JSON.stringify((oc.turnRequests.at(-1)!.json as { messages: unknown[] }).messages)).toContain("restic-merge-tool");
  });

  it("a Claude Code session, by a prefix of its id, comes back byte for byte", async () => {
    rmSync(claudeRun.transcript);
    const r = await restore(["latest", "--session", claudeRun.sessionId.slice(0, 13)]);
    expect(r.failed).toEqual([]);
    expect(r.files.map((f) => `${f.action} ${f.root}`)).toEqual(["create claude"]);
    expect(readFileSync(claudeRun.transcript).equals(transcriptBytes)).toBe(true);
  });

  it("a whole restore brings opencode.db back with the side files the restic snapshot holds: sound, with the snapshot's sessions", async () => {
    const r = await restore([first, "--agent", "opencode"]);
    expect(r.failed).toEqual([]);
    expect(r.files.filter((f) => f.action !== "unchanged").map((f) => f.path)).toEqual(expect.arrayContaining(["opencode.db"]));
    expect(integrity()).toBe("ok");
    expect((await opencodeSessions(sb)).sort()).toEqual([a, b].sort());
  });

  it("on both engines: a -wal written after the snapshot is deleted with the db it goes with, so the restore really is as of the snapshot", async () => {
    const native = { ...env, PI_GUARD_REPO: `${sb.root}/native-repo` };
    await ok(native, ["init"]);
    for (const [engine, repoEnv] of [["restic", env], ["native", native]] as const) {
      // A checkpointed db with no -wal, snapshotted; then opencode writes a session into a new -wal only.
      checkpoint();
      expect(existsSync(`${opencodeDb(sb)}-wal`), engine).toBe(false);
      const taken = (await ok(repoEnv, ["snapshot", "--json"])).json<{ snapshotId: string }>().snapshotId;
      const before = (await opencodeSessions(sb)).sort();
      oc.setScript([say(`A session after the ${engine} snapshot.`)]);
      const later = (await runOpencode(sb, oc, `after the ${engine} snapshot`)).sessionId;
      expect(existsSync(`${opencodeDb(sb)}-wal`), engine).toBe(true);

      const r = (await ok(repoEnv, ["restore", "--json", taken, "--agent", "opencode"])).json<Restored>();
      expect(r.failed, engine).toEqual([]);
      expect(r.files.map((f) => `${f.action} ${f.path}`), engine).toEqual(expect.arrayContaining(["delete opencode.db-wal"]));
      expect(r.undoSnapshot, engine).toBeTruthy();
      expect(existsSync(`${opencodeDb(sb)}-wal`), engine).toBe(false);
      expect(integrity(), engine).toBe("ok");
      const after = await opencodeSessions(sb);
      expect(after, engine).not.toContain(later);
      expect(after.sort(), engine).toEqual(before);
    }
  });
});

/** PRAGMA integrity_check of the live opencode.db, read-only. */
function integrity(): unknown {
  const db = new Database(opencodeDb(sb), { readonly: true });
  try {
    return db.pragma("integrity_check", { simple: true });
  } finally {
    db.close();
  }
}

/** Fold the WAL into opencode.db and close: SQLite removes the -wal and -shm when the last connection closes. */
function checkpoint(): void {
  const db = new Database(opencodeDb(sb));
  try {
    db.pragma("wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
}
