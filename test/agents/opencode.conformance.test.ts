// The agent conformance suite (conformance.ts) run against opencode: a session made by the real
// opencode 1.18.33 offline (test/helpers/agents/opencode.ts), with one bash tool call. Its data
// is one SQLite db in WAL mode, so the suite's copy case commits rows during the snapshots and
// compares the db by content.

import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { opencodeAdapter } from "../../src/agents/opencode/index.js";
import { opencodeDataDir, runOpencode, startOpencodeModel } from "../helpers/agents/opencode.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, writeFileExact } from "../helpers/tmp.js";
import { agentConformance } from "./conformance.js";

agentConformance({
  adapter: opencodeAdapter,
  timeoutMs: 240_000,
  async make() {
    const sb = makeSandbox("agent-opencode");
    let server: FakeModelServer | undefined;
    return {
      sb,
      envOverride: "XDG_DATA_HOME",
      envDir: (value) => path.join(value, "opencode"),
      defaultDir: (home) => path.join(home, ".local", "share", "opencode"),
      async makeSession() {
        const secret = `sk-ant-api03-${randomBytes(24).toString("hex")}`;
        server = await startOpencodeModel([callTool("bash", { command: "echo conformance", description: "Echo" }), say("It printed conformance.")]);
        const run = await runOpencode(sb, server, `My key ${secret} stopped working. Run echo.`);
        writeFileExact(path.join(opencodeDataDir(sb), "auth.json"), JSON.stringify({ anthropic: { type: "api", key: secret } }), 0o600);
        // The prompt, the tool call, its result, the answer.
        return { id: run.sessionId, messages: 4, toolName: "bash", usage: true, secret };
      },
      async plantHazard() {
        // Pre-1.2 JSON sessions waiting for opencode's migration.
        mkdirSync(path.join(opencodeDataDir(sb), "storage", "session"), { recursive: true });
        return "opencode: migrations";
      },
      unitProbe: { select: { root: "opencode", path: "opencode.db" }, expect: [{ root: "opencode", path: "opencode.db" }] },
      async close() {
        await server?.close();
      },
    };
  },
});
