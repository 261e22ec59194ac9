// The Codex CLI adapter against files the real Codex 0.169.0 wrote, offline: where it looks, what
// it masks, how it reads a rollout into the common model, what doctor says when the threads table
// and the rollouts disagree, and what a restore brings back together.

import { copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { codexAdapter } from "../../src/agents/codex/index.js";
import { liveFiles } from "../../src/agents/files.js";
import { findAgent } from "../../src/agents/registry.js";
import type { SessionMeta } from "../../src/agents/types.js";
import type { AssistantMessage, ToolResultMessage } from "../../src/model/session.js";
import { codexHome, runCodex, startCodexModel } from "../helpers/agents/codex.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
let server: FakeModelServer;
let sessionId: string;
let rollout: string;

beforeAll(async () => {
  sb = makeSandbox("codex-adapter");
  server = await startCodexModel([
    callTool("exec_command", { cmd: "echo adapter-tool-output" }, { thinking: "The user wants an echo.", text: "Running echo now." }),
    say("The echo printed adapter-tool-output."),
  ]);
  const run = await runCodex(sb, server, "please echo something");
  sessionId = run.sessionId;
  rollout = run.rollout;
});
afterAll(async () => {
  await server?.close();
  sb?.cleanup();
});

const hz = () => ({ env: {}, repo: sb.repo, keyFile: path.join(sb.root, "key") });
const loc = () => codexAdapter.locate({ env: { CODEX_HOME: codexHome(sb) }, home: sb.home });
const metasOf = async () => {
  const metas: SessionMeta[] = [];
  for await (const m of codexAdapter.sessions.list(liveFiles(loc().roots))) metas.push(m);
  return metas;
};

describe("codex adapter", () => {
  it("is the registered codex adapter, and finds ~/.codex, $CODEX_HOME or the configured dir, in that order", () => {
    expect(findAgent("codex")).toBe(codexAdapter);
    expect(codexAdapter.locate({ env: {}, home: sb.home })).toMatchObject({ dir: path.join(sb.home, ".codex"), foundBy: "default" });
    expect(codexAdapter.locate({ env: { CODEX_HOME: "/x/cx" }, home: sb.home, config: { dir: "/y" } })).toMatchObject({ dir: "/x/cx", foundBy: "env", via: "CODEX_HOME" });
    expect(codexAdapter.locate({ env: {}, home: sb.home, config: { dir: "~/cx" } })).toMatchObject({ dir: path.join(sb.home, "cx"), foundBy: "config" });
  });

  it("copies its SQLite databases as sqlite-wal units and its rollouts as append-only JSONL", () => {
    const rules = codexAdapter.copyRules(loc());
    expect(rules.find((r) => r.glob === "*.sqlite")?.kind).toBe("sqlite-wal");
    expect(rules.find((r) => r.glob === "sessions/**/*.jsonl")?.kind).toBe("append-jsonl");
    // The real home has it: state_5.sqlite in WAL mode (header bytes 18 and 19 are 2).
    const header = readFileSync(path.join(codexHome(sb), "state_5.sqlite")).subarray(0, 20);
    expect([header[18], header[19]]).toEqual([2, 2]);
  });

  it("lists the real session and reads it into the common model: one assistant message per response, the tool call and its output, usage once", async () => {
    const metas = await metasOf();
    expect(metas).toHaveLength(1);
    expect(metas[0]).toMatchObject({ agent: "codex", id: sessionId, cwd: path.join(sb.root, "codex-project"), title: "please echo something" });
    const session = await codexAdapter.sessions.read(liveFiles(loc().roots), metas[0]);
    expect(session.warnings).toEqual([]);
    expect(session.header).toMatchObject({ id: sessionId, cwd: path.join(sb.root, "codex-project") });
    const messages = session.entries.filter((e) => e.type === "message").map((e) => e.message as AssistantMessage | ToolResultMessage);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    const first = messages[1] as AssistantMessage;
    expect(first.content.map((b) => b.type)).toEqual(["thinking", "text", "toolCall"]);
    expect(first.content[2]).toMatchObject({ name: "exec_command", arguments: { cmd: "echo adapter-tool-output" } });
    expect(first).toMatchObject({ model: "gpt-fake", stopReason: "toolUse", usage: { input: 110, cacheRead: 10, output: 30, totalTokens: 150 } });
    expect(messages[2]).toMatchObject({ role: "toolResult", toolName: "exec_command", toolCallId: (first.content[2] as { id: string }).id });
    expect((messages[2] as ToolResultMessage).content[0]).toMatchObject({ text: expect.stringContaining("adapter-tool-output") });
    expect(messages[3]).toMatchObject({ content: [{ type: "text", text: "The echo printed adapter-tool-output." }], stopReason: "stop", usage: { output: 30 } });
    // Every envelope is an entry, or one item of a response's assistant message (kept in its raw), in one chain.
    const merged = messages.filter((m) => m.role === "assistant").reduce((n, m) => n + (m.raw as unknown[]).length - 1, 0);
    expect(session.entries.length + merged).toBe(readFileSync(rollout, "utf8").trim().split("\n").length);
    expect(session.entries.every((e, i) => e.parentId === (i ? session.entries[i - 1].id : null))).toBe(true);
    expect(session.entries.filter((e) => e.type === "custom").every((e) => String(e.customType).startsWith("codex:"))).toBe(true);
  });

  it("names auth.json as a secret and finds its key", async () => {
    writeFileSync(path.join(codexHome(sb), "auth.json"), JSON.stringify({ OPENAI_API_KEY: "sk-proj-" + "Z".repeat(48), tokens: null }));
    expect(codexAdapter.secretFiles(loc())).toEqual([expect.objectContaining({ path: "auth.json", kind: "whole" })]);
    expect((await codexAdapter.secretValues(liveFiles(loc().roots), loc())).map((s) => s.value)).toContain("sk-proj-" + "Z".repeat(48));
  });

  it("doctor: ok while every rollout has its threads row; a warning naming the rollout when state_5.sqlite lost it", async () => {
    expect(await codexAdapter.hazards(loc(), hz())).toEqual([expect.objectContaining({ name: "codex: threads", status: "ok" })]);
    // Keep the state as it is now, let codex make a second session, then put the older state back:
    // the second rollout is on disk but not in the threads table, as in openai/codex #40426.
    const home = codexHome(sb);
    const saved = sb.dir("codex-state-before");
    const stateFiles = readdirSync(home).filter((n) => n.startsWith("state_5.sqlite"));
    for (const n of stateFiles) copyFileSync(path.join(home, n), path.join(saved, n));
    server.setScript([say("another session")]);
    const second = await runCodex(sb, server, "a second session");
    for (const n of readdirSync(home).filter((n) => n.startsWith("state_5.sqlite"))) rmSync(path.join(home, n));
    for (const n of stateFiles) copyFileSync(path.join(saved, n), path.join(home, n));
    const [check] = await codexAdapter.hazards(loc(), hz());
    expect(check).toMatchObject({ name: "codex: threads", status: "warn" });
    expect(check.message).toContain("1 rollout(s) have no row in the threads table");
    expect(check.paths).toEqual([path.relative(home, second.rollout)]);
    expect(check.fix).toContain("pi-guard restore --agent codex");
  });

  it("restores rollouts together with state_5.sqlite and its side files; other databases with theirs", () => {
    const rel = path.relative(codexHome(sb), rollout);
    const available = ["state_5.sqlite", "state_5.sqlite-wal", "state_5.sqlite-shm", "logs_2.sqlite", "logs_2.sqlite-wal", "history.jsonl", rel].map((p) => ({ root: "codex", path: p }));
    const units = codexAdapter.restoreUnits([{ root: "codex", path: rel }, { root: "codex", path: "logs_2.sqlite" }, { root: "codex", path: "history.jsonl" }], available);
    expect(units.map((u) => u.files.map((f) => f.path))).toEqual([[rel, "state_5.sqlite", "state_5.sqlite-wal", "state_5.sqlite-shm"], ["logs_2.sqlite", "logs_2.sqlite-wal"], ["history.jsonl"]]);
  });
});
