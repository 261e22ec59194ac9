// The real Claude Code 2.1.328, offline against the fake model server: a turn with a tool call (an
// `echo` through its Bash tool), then the same session resumed and answered in. This proves the
// runner the other agent tests stand on.

import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { findTranscript, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox | undefined;
let server: FakeModelServer | undefined;
afterEach(async () => {
  await server?.close();
  sb?.cleanup();
  sb = server = undefined;
});

const lines = (file: string) => readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, any>);

describe("Claude Code offline (runner)", () => {
  it("runs echo through Bash, then resumes the same session and answers in it", async () => {
    sb = makeSandbox("claude-cli");
    server = await startClaudeModel([callTool("Bash", { command: "echo hello-from-claude-tool", description: "say hello" }), say("The echo printed hello-from-claude-tool.")]);
    const first = await runClaude(sb, server, "please run echo");
    expect(first.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.result).toBe("The echo printed hello-from-claude-tool.");
    expect(server.remaining()).toEqual([]);
    // The tool really ran: its output came back to the model in the next request.
    expect(server.turnRequests[1].body).toContain("hello-from-claude-tool");
    expect(server.requests.every((r) => r.route === "anthropic")).toBe(true);
    expect(first.files).toContain(first.transcript);

    const records = lines(first.transcript);
    const toolUse = records.flatMap((r) => (Array.isArray(r.message?.content) ? r.message.content : [])).find((b: any) => b.type === "tool_use");
    expect(toolUse).toMatchObject({ name: "Bash", input: { command: "echo hello-from-claude-tool" } });
    const toolResult = records.flatMap((r) => (Array.isArray(r.message?.content) ? r.message.content : [])).find((b: any) => b.type === "tool_result");
    expect(JSON.stringify(toolResult)).toContain("hello-from-claude-tool");

    server.setScript([say("Resumed: I remember the echo.")]);
    const second = await runClaude(sb, server, "what did the echo print?", { resume: first.sessionId });
    expect(second.sessionId).toBe(first.sessionId);
    expect(second.result).toBe("Resumed: I remember the echo.");
    // The resumed request carried the first turn's history.
    expect(server.turnRequests.at(-1)!.body).toContain("hello-from-claude-tool");
    expect(findTranscript(first.transcript.split("/projects/")[0], first.sessionId)).toBe(first.transcript);
    const after = lines(first.transcript);
    expect(after.length).toBeGreaterThan(records.length);
    expect(JSON.stringify(after)).toContain("Resumed: I remember the echo.");
  });
});
