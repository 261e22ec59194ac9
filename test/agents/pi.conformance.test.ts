// The agent conformance suite (conformance.ts) run against pi: sessions made by pi 1.6.0's real
// agent loop (test/helpers/pi1.ts), checked by pi's own parser; a real SQLite database in WAL
// mode beside them, as pi-hermes-memory keeps one, held open while the suite runs.

import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { piAdapter } from "../../src/agents/pi/index.js";
import { makePi1Session, pi1ToolCall, validatePi1 } from "../helpers/pi1.js";
import { makeSandbox, writeFileExact } from "../helpers/tmp.js";
import { agentConformance } from "./conformance.js";

agentConformance({
  adapter: piAdapter,
  timeoutMs: 180_000,
  async make() {
    const sb = makeSandbox("agent-pi");
    let db: Database | undefined;
    const dbPath = "pi-hermes-memory/sessions.db";
    return {
      sb,
      envOverride: "PI_CODING_AGENT_DIR",
      defaultDir: (home) => path.join(home, ".pi", "agent"),
      async makeSession() {
        const secret = `sk-ant-api03-${randomBytes(24).toString("hex")}`;
        writeFileExact(path.join(sb.agentDir, "auth.json"), JSON.stringify({ anthropic: { type: "api_key", key: secret } }, null, 2), 0o600);
        const cwd = path.join(sb.root, "work", "notes");
        mkdirSync(cwd, { recursive: true });
        writeFileSync(path.join(cwd, "notes.txt"), "line one\nline two\n");
        const made = await makePi1Session({
          agentDir: sb.agentDir,
          cwd,
          turns: [{ user: `My key ${secret} stopped working. What is in notes.txt?`, assistant: [[pi1ToolCall("read", { path: "notes.txt" })], "It has two lines."] }],
        });
        // pi's own parser says how many message entries the file holds.
        const checked = await validatePi1(readFileSync(made.file, "utf8"));
        // A database in WAL mode with its -wal and -shm on disk, as an extension keeps one.
        mkdirSync(path.join(sb.agentDir, "pi-hermes-memory"), { recursive: true });
        db = new Database(path.join(sb.agentDir, dbPath));
        db.pragma("journal_mode = WAL");
        db.exec("CREATE TABLE messages (id INTEGER PRIMARY KEY, content TEXT)");
        db.prepare("INSERT INTO messages (content) VALUES (?)").run("remembered");
        return { id: made.sessionId, messages: checked.entries.filter((e) => e.type === "message").length, toolName: "read", usage: true, secret };
      },
      async plantHazard() {
        writeFileSync(path.join(sb.agentDir, "package.json"), "{}\n");
        return "npm project";
      },
      unitProbe: {
        select: { root: "agent", path: dbPath },
        // Stored as one consistent copy (docs/FORMAT.md §10): the db comes back alone.
        expect: [{ root: "agent", path: dbPath }],
      },
      async close() {
        db?.close();
      },
    };
  },
});
