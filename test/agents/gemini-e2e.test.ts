// Gemini CLI end to end, with the real Gemini CLI 0.61.0 offline: a real session (with a shell
// tool call) is snapshotted by the built pi-guard CLI, ~/.gemini is wiped as in the pi incident,
// the guard flags the next snapshot, `restore latest` brings every file back byte for byte, and
// Gemini CLI itself resumes the session and answers in it. A second case: a chat older than
// general.sessionRetention.maxAge is removed as a new chat begins, which the guard records as
// Gemini's cleanup (tag agent-cleanup, named by status), not a loss.
import { readdirSync, rmSync, utimesSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { geminiAdapter } from "../../src/agents/gemini/index.js";
import { loadConfig } from "../../src/config/config.js";
import { geminiDataDir, runGemini, startGeminiModel, writeGeminiSettings } from "../helpers/agents/gemini.js";
import { expectMapped, readSession } from "../helpers/agents/read-session.js";
import { cli, initRepo, ok, snapshot } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { fingerprint, makeSandbox, type Sandbox, treeState } from "../helpers/tmp.js";

let sb: Sandbox | undefined;
let server: FakeModelServer | undefined;
afterEach(async () => {
  await server?.close();
  sb?.cleanup();
  sb = server = undefined;
});

describe("Gemini CLI end to end (real Gemini CLI 0.61.0, offline)", () => {
  it("a wiped ~/.gemini is flagged, restored byte for byte, and Gemini CLI resumes the session", async () => {
    sb = makeSandbox("gm-e2e");
    server = await startGeminiModel([callTool("run_shell_command", { command: "echo tool-said-hello", description: "Print a greeting" }), say("The tool printed it.")]);
    const made = await runGemini(sb, server, "please run echo");
    const dir = geminiDataDir(sb);
    const before = fingerprint(treeState(dir));
    expect(Object.keys(before).some((p) => /^tmp\/[^/]+\/chats\/session-.*\.jsonl$/.test(p))).toBe(true);

    await initRepo(sb);
    expect(loadConfig({}, sb.env).rootAgents).toMatchObject({ gemini: "gemini" });
    const first = await snapshot(sb);
    // The reader maps the real session into the common model, the same from the snapshot as live.
    const live = await readSession(geminiAdapter, sb, made.sessionId);
    expect(live.header.id).toBe(made.sessionId);
    expectMapped(live, "run_shell_command");
    const stored = await readSession(geminiAdapter, sb, made.sessionId, first.snapshotId);
    expect(stored.entries).toEqual(live.entries);
    expect(stored.header).toEqual(live.header);

    for (const name of readdirSync(dir)) rmSync(path.join(dir, name), { recursive: true, force: true });
    const after = await cli(sb, ["snapshot", "--json"]);
    expect(after.code, after.stderr).toBe(1);
    expect(after.stderr).toMatch(/SUSPECTED LOSS/);
    expect(after.json<{ tags: string[] }>().tags).toContain("suspect-loss");

    const restored = (await ok(sb, ["restore", "latest", "--json"])).json<{ snapshotId: string; failed: unknown[] }>();
    expect(restored.snapshotId).toBe(first.snapshotId);
    expect(restored.failed).toEqual([]);
    expect(fingerprint(treeState(dir))).toEqual(before);

    server.setScript([say("Back again, same session.")]);
    const resumed = await runGemini(sb, server, "are you still there?", { resume: made.sessionId });
    expect(resumed.sessionId).toBe(made.sessionId);
    expect(resumed.text).toContain("Back again, same session.");
    const history = JSON.stringify((server.turnRequests.at(-1)!.json as { contents: unknown[] }).contents);
    expect(history).toContain("please run echo");
    expect(history).toContain("tool-said-hello");
  }, 300_000);

  it("a chat older than sessionRetention's maxAge removed as a new one begins: agent-cleanup with Gemini's setting, not a loss", async () => {
    sb = makeSandbox("gm-sweep");
    writeGeminiSettings(sb, { general: { sessionRetention: { enabled: true, maxAge: "7d" } } });
    server = await startGeminiModel([say("first chat")]);
    const first = await runGemini(sb, server, "first");
    const dir = geminiDataDir(sb);
    const chat = first.files.find((f) => /\/chats\/session-[^/]*\.jsonl$/.test(f))!;
    expect(chat, first.files.join("\n")).toBeDefined();
    // Older than the 7 days set, younger than the default 30: only Gemini's own setting makes it a cleanup.
    const aged = new Date(Date.now() - 10 * 24 * 60 * 60 * 1000);
    utimesSync(chat, aged, aged);
    await initRepo(sb);
    const holder = await snapshot(sb);
    server.setScript([say("second chat")]);
    await runGemini(sb, server, "second");
    // Gemini CLI 0.61.0 did not remove it in this -p run (seen once: it was still there), so the
    // test removes it as the retention cleanup does; force, should a later version sweep it itself.
    rmSync(chat, { force: true });
    const swept = await cli(sb, ["snapshot", "--json"]);
    expect(swept.code, swept.stderr).toBe(0);
    expect(swept.json<{ tags: string[] }>().tags).toEqual(["agent-cleanup"]);
    const status = (await cli(sb, ["status", "--json"])).json<{ cleanups: { against: string; agents: Record<string, unknown>[] }[] }>();
    expect(status.cleanups).toHaveLength(1);
    expect(status.cleanups[0].against).toBe(holder.snapshotId);
    expect(status.cleanups[0].agents).toEqual([
      expect.objectContaining({ agent: "gemini", days: 7, setting: expect.stringMatching(/^general\.sessionRetention\.maxAge 7d/), sample: [`gemini:${path.relative(dir, chat)}`] }),
    ]);
  });
});
