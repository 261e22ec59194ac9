// The Gemini CLI adapter against files the real Gemini CLI 0.61.0 wrote, offline: where it looks,
// what it masks, how it replays a chat log ($set lines, a repeated message id, $rewindTo, an older
// whole .json chat), what doctor says about general.sessionRetention, and its restore checks.
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveFiles } from "../../src/agents/files.js";
import { geminiAdapter, replayGeminiChat } from "../../src/agents/gemini/index.js";
import { findAgent } from "../../src/agents/registry.js";
import type { SessionMeta } from "../../src/agents/types.js";
import { geminiDataDir, runGemini, startGeminiModel, writeGeminiSettings } from "../helpers/agents/gemini.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
let server: FakeModelServer;
let sessionId: string;
let chat: string;

beforeAll(async () => {
  sb = makeSandbox("gemini-adapter");
  server = await startGeminiModel([callTool("run_shell_command", { command: "echo adapter-tool-output" }), say("The echo printed adapter-tool-output.")]);
  const run = await runGemini(sb, server, "please echo something");
  sessionId = run.sessionId;
  chat = run.files.find((f) => f.endsWith(".jsonl"))!;
}, 180_000);
afterAll(async () => {
  await server?.close();
  sb?.cleanup();
});

const loc = () => geminiAdapter.locate({ env: sb.env, home: sb.home });
const metas = async () => {
  const out: SessionMeta[] = [];
  for await (const m of geminiAdapter.sessions.list(liveFiles(loc().roots))) out.push(m);
  return out;
};

describe("gemini adapter", () => {
  it("is registered, and finds ~/.gemini, $GEMINI_CLI_HOME/.gemini or the configured dir, the agent's own variable first", () => {
    expect(findAgent("gemini")).toBe(geminiAdapter);
    expect(geminiAdapter.locate({ env: {}, home: sb.home })).toMatchObject({ dir: path.join(sb.home, ".gemini"), foundBy: "default" });
    expect(geminiAdapter.locate({ env: { GEMINI_CLI_HOME: "/x/h" }, home: sb.home, config: { dir: "/y" } })).toMatchObject({ dir: "/x/h/.gemini", foundBy: "env", via: "GEMINI_CLI_HOME" });
    expect(geminiAdapter.locate({ env: {}, home: sb.home, config: { dir: "~/g" } })).toMatchObject({ dir: path.join(sb.home, "g"), foundBy: "config" });
    expect(loc().dir).toBe(geminiDataDir(sb));
  });

  it("copies chats as append-only JSONL and settings as whole-file JSON", () => {
    const rules = geminiAdapter.copyRules(loc());
    expect(rules.find((r) => r.glob === "tmp/*/chats/*.jsonl")?.kind).toBe("append-jsonl");
    expect(rules.find((r) => r.glob === "**/*.json")?.kind).toBe("rewrite-json");
    expect(geminiAdapter.sessions.isSessionFile({ root: "gemini", path: path.relative(geminiDataDir(sb), chat) })).toBe(true);
  });

  it("lists the real session with its title and project, and reads it into the common model", async () => {
    const [meta] = await metas();
    expect(meta).toMatchObject({ agent: "gemini", id: sessionId, title: "please echo something" });
    const s = await geminiAdapter.sessions.read(liveFiles(loc().roots), meta!);
    expect(s.warnings).toEqual([]);
    expect(s.header).toMatchObject({ id: sessionId, cwd: path.join(sb.root, "gemini-project") });
    const roles = s.entries.filter((e) => e.type === "message").map((e) => (e.message as { role: string }).role);
    expect(roles).toEqual(["user", "user", "assistant", "toolResult", "assistant"]);
    expect(s.entries.every((e, i) => e.parentId === (i ? s.entries[i - 1]!.id : null))).toBe(true);
  });

  it("replays the log as the CLI does: the latest line of a repeated id wins in its place, $set updates, $rewindTo drops the tail", () => {
    const lines = readFileSync(chat, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    const answer = lines.filter((l) => l.type === "gemini").at(-1)!;
    const before = replayGeminiChat(readFileSync(chat, "utf8"));
    appendFileSync(chat, JSON.stringify({ ...answer, content: "an edited answer" }) + "\n" + JSON.stringify({ $set: { summary: "a summary" } }) + "\n");
    const edited = replayGeminiChat(readFileSync(chat, "utf8"));
    expect(edited.messages.map((m) => m.id)).toEqual(before.messages.map((m) => m.id));
    expect(edited.messages.at(-1)!.content).toBe("an edited answer");
    expect(edited.meta).toMatchObject({ sessionId, summary: "a summary" });
    const firstGemini = lines.find((l) => l.type === "gemini")!;
    const rewound = replayGeminiChat(readFileSync(chat, "utf8") + JSON.stringify({ $rewindTo: firstGemini.id }) + "\n");
    expect(rewound.messages.map((m) => m.type)).toEqual(["user", "user"]);
    // An older whole .json chat is the same conversation.
    const whole = JSON.stringify({ ...edited.meta, messages: edited.messages }, null, 2);
    expect(replayGeminiChat(whole).messages).toEqual(edited.messages);
  });

  it("names oauth_creds.json, .env and the keys in settings.json as secrets", async () => {
    writeFileSync(path.join(geminiDataDir(sb), "oauth_creds.json"), JSON.stringify({ access_token: "ya29." + "Q".repeat(60), refresh_token: "1//" + "R".repeat(40), token_type: "Bearer" }));
    writeGeminiSettings(sb, { mcpServers: { s: { env: { API_KEY: "AIza" + "K".repeat(35) } } } });
    const values = (await geminiAdapter.secretValues(liveFiles(loc().roots), loc())).map((v) => v.value);
    expect(values).toContain("ya29." + "Q".repeat(60));
    expect(values).toContain("AIza" + "K".repeat(35));
    expect(geminiAdapter.secretFiles(loc()).map((f) => f.path)).toEqual(expect.arrayContaining(["oauth_creds.json", ".env", "settings.json"]));
  });

  it("doctor: general.sessionRetention on by default is a warning with the fix; turned off it is ok", async () => {
    const hz = { env: {}, repo: sb.repo, keyFile: path.join(sb.root, "key") };
    const [warn] = await geminiAdapter.hazards(loc(), hz as never);
    expect(warn).toMatchObject({ name: "gemini: general.sessionRetention", status: "warn" });
    expect(warn!.message).toContain("30d");
    expect(warn!.fix).toContain('"sessionRetention": {"enabled": false}');
    writeGeminiSettings(sb, { general: { sessionRetention: { enabled: false } } });
    expect((await geminiAdapter.hazards(loc(), hz as never))[0]).toMatchObject({ status: "ok" });
  });

  it("restores a chat alone, and checks that the restored chat has its session metadata", async () => {
    const ref = { root: "gemini", path: path.relative(geminiDataDir(sb), chat) };
    expect(geminiAdapter.restoreUnits([ref], [ref]).map((u) => u.files)).toEqual([[ref]]);
    const checks = await geminiAdapter.checkRestored(liveFiles(loc().roots), [{ files: [ref], why: "" }]);
    expect(checks).toEqual([expect.objectContaining({ ok: true })]);
  });
});
