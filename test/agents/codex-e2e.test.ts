// Codex CLI's history, guarded end to end with the real CLI, offline: a real session is made and
// snapshotted by the built pi-guard; $CODEX_HOME is wiped, as in the pi incident; the next
// snapshot is flagged as a suspected loss; an in-place restore brings the rollout back byte for
// byte with state_5.sqlite, whose threads table lists it; and `codex exec resume <id>` continues
// that very session. Then a snapshot taken while codex writes: restored, its state_5.sqlite passes
// PRAGMA integrity_check, lists the session, and codex resumes it. Then, as users report in
// openai/codex #40426, most threads rows of state_5.sqlite are lost in place with every rollout
// left: the snapshot is flagged (reason rows), status is unhealthy, and restore --agent codex brings
// every row back, which codex lists and resumes (codex 0.169 also heals such a loss itself when a
// listing scans the rollouts; the test records that too).

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { codexEnv, codexHome, codexThreadList, runCodex, startCodexModel } from "../helpers/agents/codex.js";
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

/**
 * Deletes every threads row but `keep` by a real SQL connection in a process that is then killed
 * before it closes: the deletion stays committed in state_5.sqlite-wal, as a writer that crashed
 * leaves it. An in-place restore that kept that -wal would have SQLite replay it onto the restored db.
 */
function deleteThreadsExcept(home: string, keep: string): void {
  const script = `const D = require(${JSON.stringify(createRequire(import.meta.url).resolve("better-sqlite3"))});
    new D(process.argv[1], { fileMustExist: true }).prepare("DELETE FROM threads WHERE id != ?").run(process.argv[2]);
    process.kill(process.pid, "SIGKILL");`;
  const r = spawnSync(process.execPath, ["-e", script, path.join(home, "state_5.sqlite"), keep], { encoding: "utf8" });
  if (r.signal !== "SIGKILL") throw new Error(`the deleting process ended with ${r.status ?? r.signal}: ${r.stderr}`);
}

/**
 * A repository for a pi-guard user with pi (its agent dir) who also runs Codex. Codex is guarded by
 * name in the config: guarded only because it is detected, it would drop out of the config with its
 * folder, and an in-place restore would refuse its root as "not configured now".
 */
async function guardCodex(sb: Sandbox): Promise<void> {
  mkdirSync(sb.agentDir, { recursive: true });
  await initRepo(sb);
  const configFile = path.join(sb.configHome, "pi-guard", "config.json");
  const config = existsSync(configFile) ? JSON.parse(readFileSync(configFile, "utf8")) : {};
  mkdirSync(path.dirname(configFile), { recursive: true });
  writeFileSync(configFile, JSON.stringify({ ...config, agents: { codex: { enabled: true } } }));
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

    await guardCodex(sb);
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

describe("Codex CLI: threads rows lost in place, rollouts left (openai/codex #40426)", () => {
  let sb: Sandbox;
  let server: FakeModelServer;
  afterAll(async () => {
    await server?.close();
    sb?.cleanup();
  });

  it("the snapshot is flagged (rows), status is unhealthy, restore --agent codex brings every threads row back and codex lists and resumes the sessions", async () => {
    sb = makeSandbox("codex-rows");
    server = await startCodexModel();
    const runs = [];
    for (const word of ["one", "two", "three", "four"]) {
      server.setScript([say(`answer ${word}`)]);
      runs.push(await runCodex(sb, server, `prompt ${word}`));
    }
    const ids = runs.map((r) => r.sessionId);
    expect((await codexThreadList(sb, server, { stateDbOnly: true })).map((t) => t.id).sort()).toEqual([...ids].sort());
    const env = { CODEX_HOME: codexEnv(sb).CODEX_HOME };
    await guardCodex(sb);
    const whole = await snapshot(sb, [], { env });
    const rollouts = runs.map((r) => [r.rollout, readFileSync(r.rollout)] as const);

    // Three of the four rows go, in place, while no codex runs; the rollouts stay.
    deleteThreadsExcept(codexHome(sb), ids[0]);
    expect(readdirSync(codexHome(sb)).filter((n) => n.startsWith("state_5.sqlite")).sort()).toEqual(["state_5.sqlite", "state_5.sqlite-shm", "state_5.sqlite-wal"]);
    for (const [file, bytes] of rollouts) expect(readFileSync(file).equals(bytes)).toBe(true);

    const flagged = await cli(sb, ["snapshot", "--json"], { env });
    expect(flagged.code, flagged.stderr).toBe(1);
    expect(flagged.stderr).toMatch(/SUSPECTED LOSS: a database lost most of its sessions \(codex:state_5\.sqlite: 1 of 4 rows of table threads left/);
    const verdict = flagged.json<{ snapshotId: string; tags: string[]; suspectLoss: unknown }>();
    expect(verdict.tags).toEqual(["suspect-loss"]);
    expect(verdict.suspectLoss).toMatchObject({ reason: "rows", against: whole.snapshotId, rows: [{ file: "codex:state_5.sqlite", table: "threads", before: 4, now: 1 }] });

    const status = await cli(sb, ["status", "--json"], { env });
    expect(status.code).not.toBe(0);
    const report = status.json<{ healthy: boolean; problems: string[] }>();
    expect(report.healthy).toBe(false);
    const named = new RegExp(`the newest snapshot ${verdict.snapshotId.slice(0, 8)} .* is a suspected loss: .*most rows of a database's sessions table vanished`);
    expect(report.problems).toContainEqual(expect.stringMatching(named));
    const text = await cli(sb, ["status"], { env });
    expect(text.code).not.toBe(0);
    expect(text.stdout).toMatch(new RegExp(`newest snapshot +${verdict.snapshotId.slice(0, 8)} .*SUSPECTED LOSS`));
    expect(text.stderr).toMatch(named);

    // The deletion is still in the -wal: the restore must not leave it beside the restored db.
    expect(readdirSync(codexHome(sb)).filter((n) => n.startsWith("state_5.sqlite")).sort()).toEqual(["state_5.sqlite", "state_5.sqlite-shm", "state_5.sqlite-wal"]);
    const restored = (await ok(sb, ["restore", "latest", "--agent", "codex", "--json"], { env })).json<{ snapshotId: string; failed: unknown[] }>();
    expect(restored).toMatchObject({ snapshotId: whole.snapshotId, failed: [] });
    expect(readdirSync(codexHome(sb)).filter((n) => n.startsWith("state_5.sqlite"))).toEqual(["state_5.sqlite"]);
    const state = stateOf(codexHome(sb), sb);
    expect(state.integrity).toBe("ok");
    expect(state.threads.map((t) => t.id).sort()).toEqual([...ids].sort());
    for (const [file, bytes] of rollouts) expect(readFileSync(file).equals(bytes)).toBe(true);

    // Codex itself lists every session again from the restored table (not by its own repair) and
    // continues one whose row had been lost.
    expect((await codexThreadList(sb, server, { stateDbOnly: true })).map((t) => t.id).sort()).toEqual([...ids].sort());
    server.setScript([say("Resumed after the row loss.")]);
    const resumed = await runCodex(sb, server, "still there?", { resume: ids[2] });
    expect(resumed).toMatchObject({ sessionId: ids[2], text: "Resumed after the row loss." });
    expect(server.turnRequests.at(-1)!.body).toContain("prompt three");

    // The same loss again, seen by codex: its listing from the threads table shows only the row
    // left. Codex 0.169 heals it itself when a listing scans the rollouts (its default): the rows
    // are written back, and the next snapshot is whole again, not a loss.
    deleteThreadsExcept(codexHome(sb), ids[0]);
    expect((await codexThreadList(sb, server, { stateDbOnly: true })).map((t) => t.id)).toEqual([ids[0]]);
    expect((await codexThreadList(sb, server, { stateDbOnly: false })).map((t) => t.id).sort()).toEqual([...ids].sort());
    expect((await codexThreadList(sb, server, { stateDbOnly: true })).map((t) => t.id).sort()).toEqual([...ids].sort());
    expect((await ok(sb, ["snapshot", "--json"], { env })).json<{ tags: string[]; suspectLoss: unknown }>()).toMatchObject({ tags: [], suspectLoss: null });
  });
});
