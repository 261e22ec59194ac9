// Codex CLI's history, guarded end to end with the real CLI, offline: a real session is made and
// snapshotted by the built pi-guard; $CODEX_HOME is wiped, as in the pi incident; the next
// snapshot is flagged as a suspected loss; an in-place restore brings the rollout back byte for
// byte with state_5.sqlite, whose threads table lists it; and `codex exec resume <id>` continues
// that very session. Then a snapshot taken while codex writes: restored, its state_5.sqlite passes
// PRAGMA integrity_check, lists the session, and codex resumes it.

import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { codexEnv, codexHome, runCodex, startCodexModel } from "../helpers/agents/codex.js";
import { cli, initRepo, ok, snapshot } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

const Database = createRequire(import.meta.url)("better-sqlite3") as typeof BetterSqlite3;

/** Opens a copy of the restored state db (never the agent's own file) and reads what codex lists from. */
function stateOf(home: string, sb: Sandbox): { integrity: unknown; threads: { id: string; rollout_path: string }[] } {
  const dir = sb.dir(`state-copy-${Date.now()}`);
  for (const side of ["", "-wal", "-shm"]) {
    try {
      writeFileSync(path.join(dir, `state_5.sqlite${side}`), readFileSync(path.join(home, `state_5.sqlite${side}`)));
    } catch {
      // a side file codex did not leave
    }
  }
  const db = new Database(path.join(dir, "state_5.sqlite"), { fileMustExist: true });
  try {
    return { integrity: db.pragma("integrity_check", { simple: true }), threads: db.prepare("SELECT id, rollout_path FROM threads").all() as { id: string; rollout_path: string }[] };
  } finally {
    db.close();
  }
}

describe("Codex CLI: a wiped CODEX_HOME comes back, and codex resumes the session", () => {
  let sb: Sandbox;
  let server: FakeModelServer;
  afterAll(async () => {
    await server?.close();
    sb?.cleanup();
  });

  it("snapshot, wipe, suspect-loss, restore byte-identical with its threads row, codex exec resume answers in the session", async () => {
    sb = makeSandbox("codex-e2e");
    server = await startCodexModel([callTool("exec_command", { cmd: "echo e2e-tool-ran" }), say("The echo printed e2e-tool-ran.")]);
    const run = await runCodex(sb, server, "run the echo please");
    const bytes = readFileSync(run.rollout);
    const env = { CODEX_HOME: codexEnv(sb).CODEX_HOME };

    // A pi-guard user with pi (its agent dir) who also runs Codex. Codex is guarded by name in the
    // config: guarded only because it is detected, it would drop out of the config with its
    // folder, and an in-place restore would refuse its root as "not configured now".
    mkdirSync(sb.agentDir, { recursive: true });
    await initRepo(sb);
    const configFile = path.join(sb.configHome, "pi-guard", "config.json");
    const config = existsSync(configFile) ? JSON.parse(readFileSync(configFile, "utf8")) : {};
    mkdirSync(path.dirname(configFile), { recursive: true });
    writeFileSync(configFile, JSON.stringify({ ...config, agents: { codex: { enabled: true } } }));
    const whole = await snapshot(sb, [], { env });

    rmSync(codexHome(sb), { recursive: true, force: true });
    const flagged = await cli(sb, ["snapshot", "--json"], { env });
    expect(flagged.code, flagged.stderr).toBe(1);
    expect(flagged.stderr).toMatch(/SUSPECTED LOSS/);
    expect(flagged.json<{ tags: string[] }>().tags).toEqual(["suspect-loss"]);

    const restored = (await ok(sb, ["restore", "latest", "--json"], { env })).json<{ snapshotId: string }>();
    expect(restored.snapshotId).toBe(whole.snapshotId);
    expect(readFileSync(run.rollout).equals(bytes)).toBe(true);
    const state = stateOf(codexHome(sb), sb);
    expect(state.integrity).toBe("ok");
    expect(state.threads).toEqual([expect.objectContaining({ id: run.sessionId, rollout_path: run.rollout })]);

    server.setScript([say("Resumed after the restore: the echo printed e2e-tool-ran.")]);
    const resumed = await runCodex(sb, server, "what did the echo print?", { resume: run.sessionId });
    expect(resumed.sessionId).toBe(run.sessionId);
    expect(resumed.text).toBe("Resumed after the restore: the echo printed e2e-tool-ran.");
    expect(server.turnRequests.at(-1)!.body).toContain("e2e-tool-ran");
    expect(readFileSync(run.rollout).subarray(0, bytes.length).equals(bytes)).toBe(true);
  });

  it("a snapshot taken while codex writes restores to a state_5.sqlite that passes integrity_check and lists the session, and codex resumes it", async () => {
    // A slow answer: codex has written the session's start, its threads row and the prompt, and is
    // still streaming when pi-guard takes the snapshot.
    const slow = "word ".repeat(60).trim();
    server.setScript([say(slow, { chunkDelayMs: 100 })]);
    const before = server.turnRequests.length;
    let finished = false;
    const writing = runCodex(sb, server, "a long answer please").finally(() => (finished = true));
    while (server.turnRequests.length === before) await new Promise((r) => setTimeout(r, 20));
    const env = { CODEX_HOME: codexEnv(sb).CODEX_HOME };
    const during = await snapshot(sb, [], { env });
    // The snapshot really was taken while codex ran (a precondition of this test, not a timing claim).
    expect(finished).toBe(false);
    const run = await writing;
    expect(run.text).toBe(slow);

    rmSync(codexHome(sb), { recursive: true, force: true });
    await ok(sb, ["restore", during.snapshotId, "--json"], { env });
    const state = stateOf(codexHome(sb), sb);
    expect(state.integrity).toBe("ok");
    expect(state.threads.map((t) => t.id)).toContain(run.sessionId);

    server.setScript([say("Resumed from the snapshot taken mid-answer.")]);
    const resumed = await runCodex(sb, server, "are you there?", { resume: run.sessionId });
    expect(resumed.sessionId).toBe(run.sessionId);
    expect(resumed.text).toBe("Resumed from the snapshot taken mid-answer.");
    expect(server.turnRequests.at(-1)!.body).toContain("a long answer please");
  });
});
