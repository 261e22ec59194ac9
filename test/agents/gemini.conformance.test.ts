// The agent conformance suite (conformance.ts) run against Gemini CLI: a session made by the real
// Gemini CLI 0.61.0 offline (test/helpers/agents/gemini.ts), with one run_shell_command call. Its
// variable GEMINI_CLI_HOME is a home: the data dir is <value>/.gemini.

import { randomBytes } from "node:crypto";
import path from "node:path";
import { geminiAdapter } from "../../src/agents/gemini/index.js";
import { geminiDataDir, runGemini, startGeminiModel } from "../helpers/agents/gemini.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, writeFileExact } from "../helpers/tmp.js";
import { agentConformance } from "./conformance.js";

agentConformance({
  adapter: geminiAdapter,
  timeoutMs: 240_000,
  async make() {
    const sb = makeSandbox("agent-gemini");
    let server: FakeModelServer | undefined;
    return {
      sb,
      envOverride: "GEMINI_CLI_HOME",
      envDir: (value) => path.join(value, ".gemini"),
      defaultDir: (home) => path.join(home, ".gemini"),
      async makeSession() {
        const secret = `ya29.${randomBytes(30).toString("hex")}`;
        server = await startGeminiModel([callTool("run_shell_command", { command: "echo conformance" }), say("It printed conformance.")]);
        const run = await runGemini(sb, server, `My token ${secret} stopped working. Run echo.`);
        writeFileExact(path.join(geminiDataDir(sb), "oauth_creds.json"), JSON.stringify({ access_token: secret, refresh_token: `1//${randomBytes(20).toString("hex")}`, token_type: "Bearer" }), 0o600);
        // The prompt, the context the CLI adds as a second user message, the tool call, its result, the answer.
        return { id: run.sessionId, messages: 5, toolName: "run_shell_command", usage: true, secret };
      },
      async plantHazard() {
        // The CLI's default: general.sessionRetention deletes chats after 30 days.
        return "gemini: general.sessionRetention";
      },
      async close() {
        await server?.close();
      },
    };
  },
});
