// The Claude Code adapter against files the real Claude Code 2.1.328 wrote, offline: where it
// looks, what it masks, how it reads a transcript into the common model, what doctor says about
// cleanupPeriodDays, and what a restore brings back together.

import { mkdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claudeAdapter } from "../../src/agents/claude/index.js";
import { liveFiles } from "../../src/agents/files.js";
import { findAgent } from "../../src/agents/registry.js";
import type { AgentSession, SessionMeta } from "../../src/agents/types.js";
import type { AssistantMessage, ToolResultMessage } from "../../src/model/session.js";
import { claudeConfigDir, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
let server: FakeModelServer;
let sessionId: string;
let transcript: string;

beforeAll(async () => {
  sb = makeSandbox("claude-adapter");
  server = await startClaudeModel([
    callTool("Bash", { command: "echo adapter-tool-output", description: "echo" }, { thinking: "The user wants an echo.", text: "Running echo now." }),
    say("The echo printed adapter-tool-output."),
  ]);
  const run = await runClaude(sb, server, "please echo something");
  server.setScript([say("Second turn answer.")]);
  await runClaude(sb, server, "and again", { resume: run.sessionId });
  sessionId = run.sessionId;
  transcript = run.transcript;
});
afterAll(async () => {
  await server?.close();
  sb?.cleanup();
});

const hz = () => ({ env: {}, repo: sb.repo, keyFile: path.join(sb.root, "key") });
const loc = () => claudeAdapter.locate({ env: { CLAUDE_CONFIG_DIR: claudeConfigDir(sb) }, home: sb.home });
async function listAndRead(): Promise<{ metas: SessionMeta[]; session: AgentSession }> {
  const files = liveFiles(loc().roots);
  const metas: SessionMeta[] = [];
  for await (const m of claudeAdapter.sessions.list(files)) metas.push(m);
  return { metas, session: await claudeAdapter.sessions.read(files, metas[0]) };
}

describe("claude adapter", () => {
  it("is the registered claude adapter, and finds ~/.claude, $CLAUDE_CONFIG_DIR or the configured dir, in that order", () => {
    expect(findAgent("claude")).toBe(claudeAdapter);
    expect(claudeAdapter.locate({ env: {}, home: sb.home })).toMatchObject({ dir: path.join(sb.home, ".claude"), foundBy: "default" });
    expect(claudeAdapter.locate({ env: { CLAUDE_CONFIG_DIR: "/x/cc" }, home: sb.home, config: { dir: "/y" } })).toMatchObject({ dir: "/x/cc", foundBy: "env", via: "CLAUDE_CONFIG_DIR" });
    expect(claudeAdapter.locate({ env: {}, home: sb.home, config: { dir: "~/cc" } })).toMatchObject({ dir: path.join(sb.home, "cc"), foundBy: "config" });
  });

  it("lists the real session with its cwd, start and first prompt, and reads it into the common model", async () => {
    const { metas, session } = await listAndRead();
    expect(metas).toHaveLength(1);
    expect(metas[0]).toMatchObject({ agent: "claude", id: sessionId, cwd: path.join(sb.root, "claude-project"), title: "please echo something" });
    expect(metas[0].files[0].path).toBe(path.relative(claudeConfigDir(sb), transcript));
    expect(session.warnings).toEqual([]);
    expect(session.header).toMatchObject({ id: sessionId, cwd: path.join(sb.root, "claude-project") });
    const messages = session.entries.filter((e) => e.type === "message").map((e) => e.message as AssistantMessage | ToolResultMessage);
    const roles = messages.map((m) => m.role);
    expect(roles).toEqual(["user", "assistant", "assistant", "assistant", "toolResult", "assistant", "user", "assistant"]);
    const blocks = messages.flatMap((m) => (m.role === "assistant" ? m.content : []));
    expect(blocks).toContainEqual({ type: "thinking", thinking: "The user wants an echo.", thinkingSignature: "fake-signature" });
    expect(blocks).toContainEqual({ type: "text", text: "Running echo now." });
    const call = blocks.find((b) => b.type === "toolCall");
    expect(call).toMatchObject({ name: "Bash", arguments: { command: "echo adapter-tool-output" } });
    const result = messages.find((m) => m.role === "toolResult") as ToolResultMessage;
    expect(result).toMatchObject({ toolCallId: (call as { id: string }).id, toolName: "Bash", isError: false, content: [{ type: "text", text: "adapter-tool-output" }] });
    // Three lines of one API message carry its usage three times; the model counts it once.
    const priced = messages.filter((m) => m.role === "assistant" && m.usage);
    expect(priced).toHaveLength(3);
    expect(priced[0]).toMatchObject({ model: "claude-opus-5-5", usage: { input: 120, output: 30, cacheRead: 10, cacheWrite: 5, totalTokens: 165 } });
    // Every native line is an entry (nothing dropped), in one chain: no branch the transcript has not.
    expect(session.entries).toHaveLength(readFileSync(transcript, "utf8").trim().split("\n").length);
    const children = new Map<string | null, number>();
    for (const e of session.entries) children.set(e.parentId, (children.get(e.parentId) ?? 0) + 1);
    expect([...children.values()].every((n) => n === 1)).toBe(true);
    expect(session.leafId).toBe(session.entries.at(-1)!.id);
    expect(session.entries.filter((e) => e.type === "custom").every((e) => String(e.customType).startsWith("claude:"))).toBe(true);
  });

  it("keeps a rewind as a branch: a line whose parentUuid points back forks the tree there", async () => {
    // Claude Code writes a rewound or edited prompt as a new user line whose parentUuid is an
    // older line; append one to a copy of the real transcript, as the CLI does.
    const lines = readFileSync(transcript, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    const firstUser = lines.find((l) => l.type === "user" && typeof l.message.content === "string");
    const firstAssistant = lines.find((l) => l.type === "assistant");
    const fork = { ...firstUser, uuid: "11111111-2222-4333-8444-555555555555", parentUuid: firstAssistant.uuid, message: { role: "user", content: "a different question" } };
    const copy = path.join(sb.dir("claude-branch"), "projects", "p", `${sessionId}.jsonl`);
    mkdirSync(path.dirname(copy), { recursive: true });
    writeFileSync(copy, readFileSync(transcript, "utf8") + JSON.stringify(fork) + "\n");
    const files = liveFiles([{ name: "claude", path: path.join(sb.root, "claude-branch") }]);
    const session = await claudeAdapter.sessions.read(files, { agent: "claude", id: sessionId, files: [{ root: "claude", path: `projects/p/${sessionId}.jsonl` }], bytes: 0 });
    const forkEntry = session.entries.find((e) => e.id === fork.uuid)!;
    const parent = session.entries.find((e) => e.id === forkEntry.parentId)!;
    const siblings = session.entries.filter((e) => e.parentId === parent.id);
    expect(siblings.length).toBe(2);
    expect(session.leafId).toBe(fork.uuid);
  });

  it("names .credentials.json and the keys in .claude.json as secrets, and finds their values", async () => {
    const dir = claudeConfigDir(sb);
    writeFileSync(path.join(dir, ".credentials.json"), JSON.stringify({ claudeAiOauth: { accessToken: "sk-ant-oat01-" + "A".repeat(40), refreshToken: "sk-ant-ort01-" + "B".repeat(40), expiresAt: 1 } }));
    const state = JSON.parse(readFileSync(path.join(dir, ".claude.json"), "utf8"));
    writeFileSync(path.join(dir, ".claude.json"), JSON.stringify({ ...state, primaryApiKey: "sk-ant-api03-" + "C".repeat(40) }));
    const paths = claudeAdapter.secretFiles(loc()).map((s) => s.path);
    expect(paths).toEqual(expect.arrayContaining([".credentials.json", ".claude.json"]));
    const values = (await claudeAdapter.secretValues(liveFiles(loc().roots), loc())).map((s) => s.value);
    expect(values).toEqual(expect.arrayContaining(["sk-ant-oat01-" + "A".repeat(40), "sk-ant-ort01-" + "B".repeat(40), "sk-ant-api03-" + "C".repeat(40)]));
    expect(values).not.toContain(state.userID ?? "never-a-secret");
  });

  it("doctor: warns about the default 30-day sweep, more loudly about 0, names the fix, and is quiet at 36500", async () => {
    const dir = claudeConfigDir(sb);
    const [unset] = await claudeAdapter.hazards(loc(), hz());
    expect(unset).toMatchObject({ name: "claude: cleanupPeriodDays", status: "warn" });
    expect(unset.message).toContain("not set (default 30)");
    expect(unset.fix).toContain(`"cleanupPeriodDays": 36500 in ${path.join(dir, "settings.json")}`);
    writeFileSync(path.join(dir, "settings.json"), JSON.stringify({ cleanupPeriodDays: 0 }));
    writeFileSync(path.join(dir, ".last-cleanup"), "");
    utimesSync(path.join(dir, ".last-cleanup"), new Date("2026-11-01T10:00:00Z"), new Date("2026-11-01T10:00:00Z"));
    const [zero] = await claudeAdapter.hazards(loc(), hz());
    expect(zero.status).toBe("warn");
    expect(zero.message).toContain("0 has meant: write no transcripts at all");
    expect(zero.message).toContain("last sweep ran 2026-11-01T10:00:00.000Z (.last-cleanup)");
    writeFileSync(path.join(dir, "settings.json"), JSON.stringify({ cleanupPeriodDays: 36500 }));
    expect((await claudeAdapter.hazards(loc(), hz()))[0].status).toBe("ok");
  });

  it("restores a transcript with its own folder, and checks the restored transcript reads back as the session", async () => {
    const rel = path.relative(claudeConfigDir(sb), transcript);
    const folder = rel.replace(/\.jsonl$/, "");
    const available = [{ root: "claude", path: rel }, { root: "claude", path: `${folder}/subagents/agent-a.jsonl` }, { root: "claude", path: "history.jsonl" }];
    const units = claudeAdapter.restoreUnits([{ root: "claude", path: rel }, { root: "claude", path: "history.jsonl" }], available);
    expect(units.map((u) => u.files.map((f) => f.path))).toEqual([[rel, `${folder}/subagents/agent-a.jsonl`], ["history.jsonl"]]);
    const checks = await claudeAdapter.checkRestored(liveFiles(loc().roots), [{ files: [{ root: "claude", path: rel }], why: rel }]);
    expect(checks).toEqual([expect.objectContaining({ ok: true })]);
  });
});
