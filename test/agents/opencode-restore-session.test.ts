// `restore --session` for opencode, with the real CLI offline. An opencode session is rows of
// opencode.db: with the live db there (holding a newer session too), swapping in the snapshot's db
// would roll that session back, so the restore is refused in one line and nothing is written
// (until a row merge exists); into --target, or a wiped data dir, the db comes back whole, passes
// opencode's check, and opencode continues the session.

import { readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { opencodeDataDir, runOpencode, startOpencodeModel } from "../helpers/agents/opencode.js";
import { cli, expectOneLineError, initRepo, ok, type RestoreJson, snapshot } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { fingerprint, makeSandbox, type Sandbox, treeState } from "../helpers/tmp.js";

type Restored = RestoreJson & { checks: { agent: string; name: string; ok: boolean; message: string }[] };

describe("restore --session with opencode sessions (real opencode, offline)", () => {
  let sb: Sandbox;
  let server: FakeModelServer;
  let a: { sessionId: string };
  afterAll(async () => {
    await server?.close();
    sb?.cleanup();
  });

  it("with the live opencode.db there: refused in one line (exit 1), nothing written; --target restores the db whole", async () => {
    sb = makeSandbox("opencode-session");
    server = await startOpencodeModel([callTool("bash", { command: "echo tool-said-hello", description: "Print a greeting" }), say("The tool printed it.")]);
    a = await runOpencode(sb, server, "please run echo");
    await initRepo(sb);
    await snapshot(sb);
    server.setScript([say("B here.")]);
    await runOpencode(sb, server, "hello B");
    const before = fingerprint(treeState(opencodeDataDir(sb)));

    const line = expectOneLineError(await cli(sb, ["restore", "latest", "--session", a.sessionId]), 1);
    expect(line).toMatch(/restoring one opencode session into a live database is not available yet: .*opencode\.db holds other sessions that replacing it would roll back; nothing was restored \(restore the session into an empty folder with --target, or all of opencode with --agent opencode\)/);
    expect(fingerprint(treeState(opencodeDataDir(sb)))).toEqual(before);

    const target = sb.dir("opencode-target");
    const r = (await ok(sb, ["restore", "latest", "--session", a.sessionId, "--target", target, "--json"])).json<Restored>();
    expect(r.failed).toEqual([]);
    expect(r.files.map((f) => `${f.root}:${f.path}`)).toEqual(["opencode:opencode.db"]);
    expect(readdirSync(path.join(target, ".opencode"))).toEqual(["opencode.db"]);
    expect(r.checks).toEqual([expect.objectContaining({ agent: "opencode", ok: true, message: expect.stringMatching(/^integrity_check ok, 1 session/) })]);
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
