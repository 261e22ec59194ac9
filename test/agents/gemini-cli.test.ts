// Gemini CLI 0.61.0 itself, offline against the fake model server: a turn with a real tool call
// (run_shell_command echo), then the same session continued with `--resume`.
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { runGemini, startGeminiModel } from "../helpers/agents/gemini.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox | undefined;
let server: FakeModelServer | undefined;
afterEach(async () => {
  await server?.close();
  sb?.cleanup();
  sb = server = undefined;
});

const contents = (i: number) => JSON.stringify((server!.turnRequests[i]!.json as { contents: unknown[] }).contents);

describe("Gemini CLI runner (real Gemini CLI 0.61.0, offline)", () => {
  it("runs a turn with a shell tool call, then resumes the same session and answers in it", async () => {
    sb = makeSandbox("gm-cli");
    server = await startGeminiModel([callTool("run_shell_command", { command: "echo tool-said-hello", description: "Print a greeting" }), say("The tool printed it.")]);
    const first = await runGemini(sb, server, "please run echo");
    expect(first.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.text).toContain("The tool printed it.");
    expect(server.remaining()).toEqual([]);
    expect(contents(1)).toContain("tool-said-hello");
    const chat = first.files.find((f) => /\/tmp\/[^/]+\/chats\/session-[^/]+\.jsonl$/.test(f));
    expect(chat, first.files.join("\n")).toBeDefined();
    expect(readFileSync(chat!, "utf8")).toContain(first.sessionId);

    server.setScript([say("Still here, same session.")]);
    const second = await runGemini(sb, server, "are you still there?", { resume: first.sessionId });
    expect(second.sessionId).toBe(first.sessionId);
    expect(second.text).toContain("Still here, same session.");
    expect(contents(2)).toContain("please run echo");
    expect(contents(2)).toContain("tool-said-hello");
    expect(readFileSync(chat!, "utf8")).toContain("Still here, same session.");
  }, 240_000);
});
