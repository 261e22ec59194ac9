// `restore --session` for Codex CLI, with the real CLI offline. A rollout comes back with
// state_5.sqlite (its `threads` row lists it): into a wiped $CODEX_HOME both come back whole and
// codex resumes the session; where the live state_5.sqlite holds other sessions, replacing it
// would roll them back, so the restore is refused in one line and nothing is written (until a
// row merge exists), as is a --path naming the rollout alone, while --target still restores the
// unit whole.

import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { codexHome, runCodex, startCodexModel } from "../helpers/agents/codex.js";
import { cli, expectOneLineError, initRepo, ok, type RestoreJson, snapshot } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { fingerprint, makeSandbox, type Sandbox, treeState } from "../helpers/tmp.js";

type Restored = RestoreJson & { checks: { agent: string; name: string; ok: boolean; message: string }[] };

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

  it("with the live state_5.sqlite there: --session, and --path naming the rollout alone, are refused in one line (exit 1), nothing written; --target restores the unit whole", async () => {
    await snapshot(sb);
    const rollout = readFileSync(a.rollout);
    rmSync(a.rollout);
    server.setScript([say("C here.")]);
    await runCodex(sb, server, "hello C");
    const before = fingerprint(treeState(codexHome(sb)));

    const line = expectOneLineError(await cli(sb, ["restore", "latest", "--session", a.sessionId]), 1);
    expect(line).toMatch(/restoring one Codex CLI session into a live database is not available yet: .*state_5\.sqlite holds other sessions that replacing it would roll back; nothing was restored \(restore the session into an empty folder with --target, or all of codex with --agent codex\)/);
    expect(fingerprint(treeState(codexHome(sb)))).toEqual(before);
    expect(existsSync(a.rollout)).toBe(false);
    // A dry run tells the same truth.
    expectOneLineError(await cli(sb, ["restore", "latest", "--session", a.sessionId, "--dry-run"]), 1);

    // --path naming the rollout brings state_5.sqlite with it: refused the same way, unless --path names the db too.
    const rel = path.relative(codexHome(sb), a.rollout);
    const viaPath = expectOneLineError(await cli(sb, ["restore", "latest", "--path", rel]), 1);
    expect(viaPath).toMatch(/the files --path names come back with state_5\.sqlite .*replacing the live .*state_5\.sqlite would roll back its other sessions; nothing was restored/);
    expect(fingerprint(treeState(codexHome(sb)))).toEqual(before);
    const both = (await ok(sb, ["restore", "latest", "--path", rel, "state_5.sqlite", "--dry-run", "--json"])).json<Restored>();
    // Codex sometimes leaves its -wal and -shm uncheckpointed at exit: those go with the db they belong to.
    const actions = both.files.map((f) => `${f.action} ${f.path}`);
    expect(actions).toEqual(expect.arrayContaining([`create ${rel}`, "replace state_5.sqlite"]));
    expect(actions.filter((a) => a !== `create ${rel}` && a !== "replace state_5.sqlite").every((a) => /^delete state_5\.sqlite-(wal|shm)$/.test(a))).toBe(true);

    const target = sb.dir("codex-target");
    const r = (await ok(sb, ["restore", "latest", "--session", a.sessionId, "--target", target, "--json"])).json<Restored>();
    expect(r.files.map((f) => f.path).sort()).toEqual([path.relative(codexHome(sb), a.rollout), "state_5.sqlite"].sort());
    expect(readFileSync(path.join(target, ".codex", path.relative(codexHome(sb), a.rollout))).equals(rollout)).toBe(true);
  });
});
