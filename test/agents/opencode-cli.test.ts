// opencode 1.18.33 itself, offline against the fake model server: a turn with a real tool call
// (bash echo), then the same session continued with `--session`, and opencode's own listing.
import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { opencodeCli, opencodeDb, runOpencode, startOpencodeModel } from "../helpers/agents/opencode.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox | undefined;
let server: FakeModelServer | undefined;
afterEach(async () => {
  await server?.close();
  sb?.cleanup();
  sb = server = undefined;
});

describe("opencode runner (real opencode 1.18.33, offline)", () => {
  it("runs a turn with a bash tool call, then continues the same session and answers in it", async () => {
    sb = makeSandbox("oc-cli");
    server = await startOpencodeModel([callTool("bash", { command: "echo tool-said-hello", description: "Print a greeting" }), say("The tool printed it.")]);
    const first = await runOpencode(sb, server, "please run echo");
    expect(first.sessionId).toMatch(/^ses_/);
    expect(first.text).toContain("The tool printed it.");
    expect(existsSync(opencodeDb(sb))).toBe(true);
    expect(first.files).toContain(opencodeDb(sb));
    // The second request carried the tool's real output back to the model.
    expect(server.remaining()).toEqual([]);
    const toolResult = JSON.stringify((server.turnRequests[1]!.json as { messages: unknown[] }).messages);
    expect(toolResult).toContain("tool-said-hello");

    server.setScript([say("Still here, same session.")]);
    const second = await runOpencode(sb, server, "are you still there?", { session: first.sessionId });
    expect(second.sessionId).toBe(first.sessionId);
    expect(second.text).toContain("Still here, same session.");
    // The continued request holds the first turn's history.
    const history = JSON.stringify((server.turnRequests[2]!.json as { messages: unknown[] }).messages);
    expect(history).toContain("please run echo");
    expect(history).toContain("tool-said-hello");

    const list = await opencodeCli(sb, ["session", "list", "--format", "json"]);
    expect(list.stdout).toContain(first.sessionId);
  }, 240_000);
});
