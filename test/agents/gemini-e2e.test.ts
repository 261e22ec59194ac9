// Gemini CLI end to end, with the real Gemini CLI 0.61.0 offline: a real session (with a shell
// tool call) is snapshotted by the built pi-guard CLI, ~/.gemini is wiped as in the pi incident,
// the guard flags the next snapshot, `restore latest` brings every file back byte for byte, and
// Gemini CLI itself resumes the session and answers in it.
import { readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { liveFiles, snapshotFiles } from "../../src/agents/files.js";
import { geminiAdapter } from "../../src/agents/gemini/index.js";
import type { AgentSession, FileReader } from "../../src/agents/types.js";
import { loadConfig } from "../../src/config/config.js";
import { openRepository } from "../../src/engine.js";
import { SnapshotReader } from "../../src/restore/snapshot-reader.js";
import { geminiDataDir, runGemini, startGeminiModel } from "../helpers/agents/gemini.js";
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

/** The session as the adapter reads it into the common model, live or from a snapshot. */
async function readSession(sb: Sandbox, id: string, snapshotId?: string): Promise<AgentSession> {
  const loc = geminiAdapter.locate({ env: sb.env, home: sb.home });
  const read = async (files: FileReader) => {
    for await (const m of geminiAdapter.sessions.list(files)) if (m.id === id) return geminiAdapter.sessions.read(files, m);
    throw new Error(`session ${id} is not listed in ${files.where}`);
  };
  if (!snapshotId) return read(liveFiles(loc.roots));
  const repo = await openRepository(loadConfig({}, sb.env));
  const reader = await SnapshotReader.open(repo);
  try {
    const record = (await reader.snapshots()).find((r) => r.id === snapshotId)!;
    return await read(await snapshotFiles(reader, { id: snapshotId, tree: record.snapshot.tree }));
  } finally {
    await reader.close();
  }
}

/** What the common model must hold of the session: the prompt, the tool call with its result, the answer, usage. */
function expectMapped(s: AgentSession, toolName: string): void {
  const messages = s.entries.filter((e) => e.type === "message").map((e) => (e as { message: { role: string; content?: unknown; usage?: { input: number; output: number }; toolCallId?: string } }).message);
  const text = JSON.stringify(messages);
  expect(messages.some((m) => m.role === "user" && JSON.stringify(m.content).includes("please run echo"))).toBe(true);
  const call = messages.flatMap((m) => (m.role === "assistant" && Array.isArray(m.content) ? (m.content as { type: string; name?: string; id?: string }[]) : [])).find((b) => b.type === "toolCall" && b.name === toolName);
  expect(call, `a ${toolName} tool call`).toBeDefined();
  const result = messages.find((m) => m.role === "toolResult" && m.toolCallId === call!.id);
  expect(JSON.stringify(result)).toContain("tool-said-hello");
  expect(text).toContain("The tool printed it.");
  expect(messages.some((m) => m.role === "assistant" && (m.usage?.input ?? 0) + (m.usage?.output ?? 0) > 0)).toBe(true);
  expect(s.leafId).not.toBeNull();
}

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
    const live = await readSession(sb, made.sessionId);
    expect(live.header.id).toBe(made.sessionId);
    expectMapped(live, "run_shell_command");
    const stored = await readSession(sb, made.sessionId, first.snapshotId);
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
});
