// `restore --session` for opencode, with the real CLI offline. An opencode session is rows of
// opencode.db: with the live db there (holding newer sessions too), swapping in the snapshot's db
// would roll those back, so only the session's rows are merged into it (restore/sqlite-merge.ts),
// undoably; into --target, or a wiped data dir, the db comes back whole, passes opencode's check,
// and opencode continues the session.

import { readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { opencodeCli, opencodeDataDir, opencodeDb, opencodeSessions, runOpencode, startOpencodeModel } from "../helpers/agents/opencode.js";
import { cli, expectOneLineError, initRepo, ok, type RestoreJson, snapshot } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { fingerprint, makeSandbox, type Sandbox, treeState } from "../helpers/tmp.js";

type Restored = RestoreJson & {
  checks: { agent: string; name: string; ok: boolean; message: string }[];
  rows: { live: string; sessionId: string; dryRun: boolean; tables: { table: string; added: number; replaced: number; deleted: number }[] }[];
  undo: { id: string; command: string } | null;
};

describe("restore --session with opencode sessions (real opencode, offline)", () => {
  let sb: Sandbox;
  let server: FakeModelServer;
  let a: { sessionId: string };
  afterAll(async () => {
    await server?.close();
    sb?.cleanup();
  });

  it("into the live opencode.db: only the session's rows are merged back (the dry run counts them, writes nothing); other sessions untouched; opencode lists and continues it; --undo takes it out again, and refuses once opencode wrote to it unless --force", async () => {
    sb = makeSandbox("opencode-session");
    server = await startOpencodeModel([callTool("bash", { command: "echo tool-said-hello", description: "Print a greeting" }), say("The tool printed it.")]);
    a = await runOpencode(sb, server, "please run echo");
    server.setScript([say("B here.")]);
    const b = (await runOpencode(sb, server, "hello B")).sessionId;
    await initRepo(sb);
    await snapshot(sb);
    // After the snapshot: opencode deletes A itself, and a newer session C begins.
    await opencodeCli(sb, ["session", "delete", a.sessionId]);
    server.setScript([say("C here.")]);
    const c = (await runOpencode(sb, server, "hello C")).sessionId;
    expect(await opencodeSessions(sb)).toEqual(expect.not.arrayContaining([a.sessionId]));
    // The db, its -wal and the rest as bytes; not -shm, SQLite's index of the WAL, which every reader marks.
    const state = () => fingerprint(treeState(opencodeDataDir(sb)), (rel) => !rel.endsWith("-shm"));
    const before = state();

    const dry = (await ok(sb, ["restore", "latest", "--session", a.sessionId, "--dry-run", "--json"])).json<Restored>();
    expect(state()).toEqual(before);
    const added = (r: Restored) => r.rows.flatMap((m) => m.tables).reduce((n, t) => n + t.added, 0);
    expect(dry.rows).toHaveLength(1);
    expect(added(dry)).toBeGreaterThan(0);

    const r = (await ok(sb, ["restore", "latest", "--session", a.sessionId, "--json"])).json<Restored>();
    expect(r.failed).toEqual([]);
    expect(r.files).toEqual([]); // opencode.db is not replaced: its rows are merged
    expect(r.rows.map((m) => ({ live: m.live, sessionId: m.sessionId, dryRun: m.dryRun }))).toEqual([{ live: opencodeDb(sb), sessionId: a.sessionId, dryRun: false }]);
    expect(added(r)).toBe(added(dry));
    expect(r.undoSnapshot).toBeTruthy();
    expect(await opencodeSessions(sb)).toEqual(expect.arrayContaining([a.sessionId, b, c]));

    // The undo merges the pre-restore state back: A is gone again, B and C stay.
    const undone = await ok(sb, ["restore", "--undo", r.undo!.id]);
    expect(undone.stdout + undone.stderr).not.toMatch(/failed/i);
    const listed = await opencodeSessions(sb);
    expect(listed).toEqual(expect.arrayContaining([b, c]));
    expect(listed).not.toContain(a.sessionId);

    // Again, in text: one line says what was merged.
    const text = await ok(sb, ["restore", "latest", "--session", a.sessionId]);
    expect(text.stdout).toMatch(new RegExp(`merged\\s+session ${a.sessionId} into .*opencode\\.db: \\d+ rows added, 0 replaced, 0 deleted; other sessions untouched`));
    const undoId = /pi-guard restore --undo (\S+)/.exec(text.stdout)![1];
    server.setScript([say("Back in A after the merge.")]);
    const resumed = await runOpencode(sb, server, "are you still there?", { session: a.sessionId });
    expect(resumed.sessionId).toBe(a.sessionId);
    expect(resumed.text).toContain("Back in A after the merge.");
    expect(JSON.stringify((server.turnRequests.at(-1)!.json as { messages: unknown[] }).messages)).toContain("tool-said-hello");

    // opencode wrote to A since: the undo is refused, naming it, and --force does it after a snapshot.
    const refused = expectOneLineError(await cli(sb, ["restore", "--undo", undoId]), 1);
    expect(refused).toMatch(new RegExp(`session ${a.sessionId}'s rows changed since the restore`));
    const forced = (await ok(sb, ["restore", "--undo", undoId, "--force", "--json"])).json<{ undoSnapshot: string | null }>();
    expect(forced.undoSnapshot).toBeTruthy();
    expect(await opencodeSessions(sb)).toEqual(expect.arrayContaining([b, c]));
    expect(await opencodeSessions(sb)).not.toContain(a.sessionId);
  });

  it("--target restores the db whole", async () => {
    const target = sb.dir("opencode-target");
    const r = (await ok(sb, ["restore", "latest", "--session", a.sessionId, "--target", target, "--json"])).json<Restored>();
    expect(r.failed).toEqual([]);
    expect(r.files.map((f) => `${f.root}:${f.path}`)).toEqual(["opencode:opencode.db"]);
    expect(readdirSync(path.join(target, ".opencode"))).toEqual(["opencode.db"]);
    expect(r.checks).toEqual([expect.objectContaining({ agent: "opencode", ok: true, message: expect.stringMatching(/^integrity_check ok, 2 session\(s\)/) })]);
  });

  it("a wiped data dir: --session brings the db back whole and opencode continues the session", async () => {
    for (const name of readdirSync(opencodeDataDir(sb))) rmSync(path.join(opencodeDataDir(sb), name), { recursive: true, force: true });
    const r = (await ok(sb, ["restore", "latest", "--session", a.sessionId, "--agent", "opencode", "--json"])).json<Restored>();
    expect(r.failed).toEqual([]);
    expect(r.files.map((f) => `${f.action} ${f.root}:${f.path}`)).toEqual(["create opencode:opencode.db"]);

    server.setScript([say("Back again, same session.")]);
    const resumed = await runOpencode(sb, server, "are you still there?", { session: a.sessionId });
    expect(resumed.sessionId).toBe(a.sessionId);
    expect(resumed.text).toContain("Back again, same session.");
    expect(JSON.stringify((server.turnRequests.at(-1)!.json as { messages: unknown[] }).messages)).toContain("tool-said-hello");
  });
});
