// The agent conformance suite (conformance.ts) run against Claude Code: a session made by the real
// Claude Code 2.1.328 offline (test/helpers/agents/claude.ts), with one Bash tool call.

import { randomBytes } from "node:crypto";
import path from "node:path";
import { claudeAdapter } from "../../src/agents/claude/index.js";
import { claudeConfigDir, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, writeFileExact } from "../helpers/tmp.js";
import { agentConformance } from "./conformance.js";

agentConformance({
  adapter: claudeAdapter,
  timeoutMs: 180_000,
  async make() {
    const sb = makeSandbox("agent-claude");
    let server: FakeModelServer | undefined;
    return {
      sb,
      envOverride: "CLAUDE_CONFIG_DIR",
      defaultDir: (home) => path.join(home, ".claude"),
      async makeSession() {
        const secret = `sk-ant-oat01-${randomBytes(24).toString("hex")}`;
        server = await startClaudeModel([callTool("Bash", { command: "echo conformance", description: "echo" }), say("It printed conformance.")]);
        const run = await runClaude(sb, server, `My token ${secret} stopped working. Run echo.`);
        writeFileExact(path.join(claudeConfigDir(sb), ".credentials.json"), JSON.stringify({ claudeAiOauth: { accessToken: secret, expiresAt: 1 } }), 0o600);
        // The prompt, the tool call, its result, the answer.
        return { id: run.sessionId, messages: 4, toolName: "Bash", usage: true, secret };
      },
      async plantHazard() {
        writeFileExact(path.join(claudeConfigDir(sb), "settings.json"), JSON.stringify({ cleanupPeriodDays: 7 }), 0o644);
        return "claude: cleanupPeriodDays";
      },
      async close() {
        await server?.close();
      },
    };
  },
});
