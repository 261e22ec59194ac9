// The agent conformance suite (conformance.ts) run against Codex CLI: a session made by the real
// Codex 0.169.0 offline (test/helpers/agents/codex.ts), with one exec_command tool call; its
// state_5.sqlite (WAL mode) is the unit a rollout comes back with.

import { randomBytes } from "node:crypto";
import path from "node:path";
import Database from "better-sqlite3";
import { codexAdapter } from "../../src/agents/codex/index.js";
import { codexHome, runCodex, startCodexModel } from "../helpers/agents/codex.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, writeFileExact } from "../helpers/tmp.js";
import { agentConformance } from "./conformance.js";

agentConformance({
  adapter: codexAdapter,
  timeoutMs: 180_000,
  async make() {
    const sb = makeSandbox("agent-codex");
    let server: FakeModelServer | undefined;
    return {
      sb,
      envOverride: "CODEX_HOME",
      defaultDir: (home) => path.join(home, ".codex"),
      async makeSession() {
        const secret = `sk-proj-${randomBytes(24).toString("hex")}`;
        server = await startCodexModel([callTool("exec_command", { cmd: "echo conformance" }), say("It printed conformance.")]);
        const run = await runCodex(sb, server, `My key ${secret} stopped working. Run echo.`);
        writeFileExact(path.join(codexHome(sb), "auth.json"), JSON.stringify({ OPENAI_API_KEY: secret, tokens: null }), 0o600);
        // The prompt, the tool call, its output, the answer.
        return { id: run.sessionId, messages: 4, toolName: "exec_command", usage: true, secret };
      },
      async plantHazard() {
        // The listing and the rollouts disagree (openai/codex #40426, #28068): a threads row whose
        // rollout is gone, as a restore of state_5.sqlite without its rollouts leaves one.
        const db = new Database(path.join(codexHome(sb), "state_5.sqlite"));
        try {
          db.exec(`CREATE TEMP TABLE t AS SELECT * FROM threads LIMIT 1;
            UPDATE t SET id = '00000000-0000-4000-8000-000000000000', rollout_path = rollout_path || '.gone';
            INSERT INTO threads SELECT * FROM t;`);
        } finally {
          db.close();
        }
        return "codex: threads";
      },
      async close() {
        await server?.close();
      },
    };
  },
});
