// Hermes databases filled from a real pi session by the mapping DESIGN.md §2 documents, for tests.

import Database from "better-sqlite3";
import { readFileSync } from "node:fs";
import { HERMES_SCHEMA } from "../../bench/salvage-data.js";
import { parseSessionText } from "../../src/agents/pi/parse.js";

type Msg = { role: string; content: unknown; timestamp: number; toolCallId?: string; toolName?: string };
/** What pi-hermes-memory indexes: pi's entry id and write time with the message. */
export type IndexedMsg = Msg & { entryId: string; entryTime: string };
type Block = { type: string; text?: string; id?: string; name?: string; arguments?: unknown };

export function piMessages(file: string): Msg[] {
  return parseSessionText(readFileSync(file, "utf8"))
    .entries.filter((e) => e.type === "message")
    .map((e) => e.message as Msg);
}

export function piIndexed(file: string): IndexedMsg[] {
  return parseSessionText(readFileSync(file, "utf8"))
    .entries.filter((e) => e.type === "message")
    .map((e) => ({ ...(e.message as Msg), entryId: e.id as string, entryTime: e.timestamp as string }));
}

export const textOf = (m: Msg) =>
  typeof m.content === "string"
    ? m.content
    : (m.content as Block[])
        .filter((b) => b.type === "text")
        .map((b) => b.text)
        .join("\n");

/** pi-hermes-memory cuts text over 100 KB to head + marker + tail. */
export function hermesTruncate(text: string): string {
  if (text.length <= 100_000) return text;
  return `${text.slice(0, 60_000)}... (truncated, ${text.length} chars total)${text.slice(-20_000)}`;
}

export interface MemorySession {
  id: string;
  cwd: string;
  messages: IndexedMsg[];
}

/** As the extension's indexer does: text blocks joined and trimmed, empty messages skipped. */
export function fillMemoryDb(path: string, sessions: MemorySession[]): void {
  const db = new Database(path);
  db.exec(HERMES_SCHEMA);
  const addSession = db.prepare("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)");
  const addMessage = db.prepare("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)");
  const addFts = db.prepare("INSERT INTO message_fts (content) VALUES (?)");
  for (const s of sessions) {
    const kept = s.messages.filter((m) => (m.role === "user" || m.role === "assistant") && textOf(m).trim() !== "");
    addSession.run(s.id, s.cwd.split("/").pop(), s.cwd, kept[0].entryTime, null, kept.length);
    for (const m of kept) {
      const tools = Array.isArray(m.content) ? (m.content as Block[]).filter((b) => b.type === "toolCall").map((b) => b.name) : [];
      const content = hermesTruncate(textOf(m).trim());
      addMessage.run(m.entryId, s.id, m.role, content, m.entryTime, tools.length ? JSON.stringify(tools) : null);
      addFts.run(content);
    }
  }
  db.close();
}

export interface AgentSession {
  id: string;
  parent: string | null;
  model: string;
  messages: Msg[];
}

/** hermes-agent state.db: OpenAI-format tool calls, `tool` rows for results, REAL seconds. */
export function fillAgentDb(path: string, sessions: AgentSession[], options: { wal?: boolean; keepOpen?: boolean } = {}): Database {
  const db = new Database(path);
  if (options.wal) db.pragma("journal_mode = WAL");
  if (options.wal) db.pragma("wal_autocheckpoint = 0");
  db.exec(`
    CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT, model TEXT, started_at REAL, parent_session_id TEXT, title TEXT);
    CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, role TEXT, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL, token_count INTEGER);`);
  const addSession = db.prepare("INSERT INTO sessions VALUES (?, 'cli', ?, ?, ?, NULL)");
  const add = db.prepare("INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?)");
  for (const s of sessions) {
    addSession.run(s.id, s.model, s.messages[0].timestamp / 1000, s.parent);
    add.run(s.id, "system", "You are a test assistant.", null, null, null, s.messages[0].timestamp / 1000);
    for (const m of s.messages) {
      const t = m.timestamp / 1000;
      if (m.role === "user") add.run(s.id, "user", textOf(m), null, null, null, t);
      else if (m.role === "assistant") {
        const calls = (m.content as Block[])
          .filter((b) => b.type === "toolCall")
          .map((b) => ({ id: b.id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.arguments) } }));
        add.run(s.id, "assistant", textOf(m), null, calls.length ? JSON.stringify(calls) : null, null, t);
      } else if (m.role === "toolResult") add.run(s.id, "tool", textOf(m), m.toolCallId, null, m.toolName, t);
    }
  }
  if (!options.keepOpen) db.close();
  return db;
}
