// Claude Code's history, guarded end to end with the real CLI, offline: a real session is made and
// snapshotted by the built pi-guard; the transcript is aged 40 days and unlinked as Claude Code's
// cleanupPeriodDays sweep does (2.1.328 runs the sweep only ~10 minutes into an interactive
// session, never in -p runs, so the test does what the sweep does); the next snapshot is flagged
// as a suspected loss; an in-place restore brings the transcript back byte for byte; and
// `claude --resume` continues that very session and answers in it.

import { readFileSync, unlinkSync, utimesSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { claudeEnv, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { cli, initRepo, ok, snapshot } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

const DAY = 24 * 60 * 60 * 1000;

describe("Claude Code: a transcript the cleanup sweep took comes back, and claude resumes it", () => {
  let sb: Sandbox;
  let server: FakeModelServer;
  afterAll(async () => {
    await server?.close();
    sb?.cleanup();
  });

  it("snapshot, sweep, suspect-loss, restore byte-identical, claude --resume answers in the session", async () => {
    sb = makeSandbox("claude-e2e");
    server = await startClaudeModel([callTool("Bash", { command: "echo e2e-tool-ran", description: "echo" }), say("The echo printed e2e-tool-ran.")]);
    const run = await runClaude(sb, server, "run the echo please");
    const bytes = readFileSync(run.transcript);
    // pi-guard sees what the agent sees: the same CLAUDE_CONFIG_DIR.
    const env = { CLAUDE_CONFIG_DIR: claudeEnv(sb, server).CLAUDE_CONFIG_DIR };

    await initRepo(sb);
    const whole = await snapshot(sb, [], { env });
    expect(whole.files).toBeGreaterThan(1);

    // The sweep: transcripts older than cleanupPeriodDays (30 by default) are unlinked.
    const old = new Date(Date.now() - 40 * DAY);
    utimesSync(run.transcript, old, old);
    unlinkSync(run.transcript);

    const flagged = await cli(sb, ["snapshot", "--json"], { env });
    expect(flagged.code, flagged.stderr).toBe(1);
    expect(flagged.stderr).toMatch(/SUSPECTED LOSS/);
    expect(flagged.json<{ tags: string[]; suspectLoss: { reason: string } }>()).toMatchObject({ tags: ["suspect-loss"], suspectLoss: { reason: "sessions" } });

    const restored = await ok(sb, ["restore", "latest", "--json"], { env });
    expect(restored.json<{ snapshotId: string; create: number }>()).toMatchObject({ snapshotId: whole.snapshotId });
    expect(readFileSync(run.transcript).equals(bytes)).toBe(true);

    server.setScript([say("Resumed after the restore: the echo printed e2e-tool-ran.")]);
    const resumed = await runClaude(sb, server, "what did the echo print?", { resume: run.sessionId });
    expect(resumed.sessionId).toBe(run.sessionId);
    expect(resumed.result).toBe("Resumed after the restore: the echo printed e2e-tool-ran.");
    // Claude Code sent the restored history to the model: the tool's output is in the request.
    expect(server.turnRequests.at(-1)!.body).toContain("e2e-tool-ran");
    expect(readFileSync(run.transcript).subarray(0, bytes.length).equals(bytes)).toBe(true);
  });
});
