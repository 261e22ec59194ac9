// The real Codex CLI 0.169.0, offline against the fake model server: a turn with a tool call (an
// `echo` through its exec_command shell tool), then `codex exec resume <id>` answering in the same
// session. This proves the runner the other agent tests stand on.

import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { runCodex, startCodexModel } from "../helpers/agents/codex.js";
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

describe("Codex CLI offline (runner)", () => {
  it("runs echo through its shell tool, then resumes the same session and answers in it", async () => {
    sb = makeSandbox("codex-cli");
    server = await startCodexModel([callTool("exec_command", { cmd: "echo hello-from-codex-tool" }), say("The echo printed hello-from-codex-tool.")]);
    const first = await runCodex(sb, server, "please run echo");
    expect(first.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.text).toBe("The echo printed hello-from-codex-tool.");
    expect(server.remaining()).toEqual([]);
    // The command really ran: its output went back to the model as a function_call_output.
    expect(server.turnRequests[1].body).toContain("hello-from-codex-tool");
    expect(first.events.some((e: any) => e.item?.type === "command_execution" && e.item.exit_code === 0)).toBe(true);
    expect(first.files).toContain(first.rollout);

    const records = lines(first.rollout);
    expect(records[0]).toMatchObject({ type: "session_meta", payload: { id: first.sessionId } });
    expect(records.some((r) => r.payload?.type === "function_call" && r.payload.name === "exec_command")).toBe(true);
    expect(records.some((r) => r.payload?.type === "function_call_output" && String(r.payload.output).includes("hello-from-codex-tool"))).toBe(true);

    server.setScript([say("Resumed: I remember the echo.")]);
    const second = await runCodex(sb, server, "what did the echo print?", { resume: first.sessionId });
    expect(second.sessionId).toBe(first.sessionId);
    expect(second.text).toBe("Resumed: I remember the echo.");
    expect(second.rollout).toBe(first.rollout);
    expect(server.turnRequests.at(-1)!.body).toContain("hello-from-codex-tool");
    expect(JSON.stringify(lines(first.rollout))).toContain("Resumed: I remember the echo.");
  });
});
