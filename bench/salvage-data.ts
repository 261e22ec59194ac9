// Generated salvage inputs of realistic shape: a pi-hermes-memory sessions.db (DESIGN.md §2:
// sessions, messages, session_files, memories and the FTS5 tables) and a pi `--mode json` event
// log with several sessions, where pi 0.73's message_update events each carry the partial message
// so far (that is what makes real logs big). Seeded, so a run is repeatable.

import Database from "better-sqlite3";
import { closeSync, openSync, statSync, writeSync } from "node:fs";
import { Prng } from "./prng.js";

const VOCAB = (
  "the a to of and in is for that with on this it be as are file function test error we can should " +
  "code session pi agent tool result read write edit bash command output line change fix build run " +
  "type import export const return value string number array object node module package json jsonl " +
  "user assistant message model provider token context compaction branch tree entry header timestamp"
).split(" ");

export function words(prng: Prng, n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(prng.pick(VOCAB));
  return out.join(" ");
}

/** Assistant text: paragraphs of words, sometimes long. */
function reply(prng: Prng): string {
  const paragraphs = prng.int(1, 6);
  return Array.from({ length: paragraphs }, () => words(prng, prng.logInt(20, 400))).join("\n\n");
}

const uuid = (prng: Prng) => {
  const h = Array.from({ length: 4 }, () => prng.nextU32().toString(16).padStart(8, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

/** pi-hermes-memory's sessions.db schema (DESIGN.md §2). The salvage tests build their databases with it too. */
export const HERMES_SCHEMA = `
  CREATE TABLE sessions (id TEXT PRIMARY KEY, project TEXT, cwd TEXT, started_at TEXT, ended_at TEXT, message_count INTEGER);
  CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, timestamp TEXT, tool_calls TEXT);
  CREATE INDEX idx_messages_session ON messages(session_id);
  CREATE TABLE session_files (session_id TEXT, path TEXT);
  CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT, created_at TEXT);
  CREATE VIRTUAL TABLE message_fts USING fts5(content);
  CREATE VIRTUAL TABLE memory_fts USING fts5(content);`;

/** Fill a sessions.db until it is at least `targetBytes` on disk. */
export function generateHermesDb(path: string, targetBytes: number, seed = "hermes"): { sessions: number; messages: number } {
  const prng = new Prng(seed);
  const db = new Database(path);
  // Only for generating: no journal, no fsync. The result is a plain rollback-mode database.
  db.pragma("journal_mode = OFF");
  db.pragma("synchronous = OFF");
  db.exec(HERMES_SCHEMA);
  const addSession = db.prepare("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)");
  const addMessage = db.prepare("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)");
  const addFts = db.prepare("INSERT INTO message_fts (content) VALUES (?)");
  const addFile = db.prepare("INSERT INTO session_files VALUES (?, ?)");
  let sessions = 0;
  let messages = 0;
  let time = Date.parse("2026-01-01T00:00:00Z");
  const oneSession = db.transaction(() => {
    const id = uuid(prng);
    const project = `project-${prng.int(1, 40)}`;
    const count = prng.int(100, 700);
    addSession.run(id, project, `/home/dev/${project}`, new Date(time).toISOString(), null, count);
    for (let i = 0; i < count; i++) {
      time += prng.int(1000, 60_000);
      const user = i % 2 === 0;
      let content = user ? words(prng, prng.logInt(5, 200)) : reply(prng);
      // Now and then a huge reply, cut the way pi-hermes-memory cuts text over 100 KB.
      if (!user && prng.chance(0.002)) content = `${words(prng, 10_000)}... (truncated, 900000 chars total)${words(prng, 3_000)}`;
      const tools = !user && prng.chance(0.4) ? JSON.stringify([prng.pick(["bash", "read", "edit", "write"])]) : null;
      addMessage.run((messages++).toString(16).padStart(8, "0"), id, user ? "user" : "assistant", content, new Date(time).toISOString(), tools);
      addFts.run(content);
    }
    addFile.run(id, `/home/dev/${project}/src/index.ts`);
    sessions++;
  });
  while (sessions % 20 !== 0 || statSync(path).size < targetBytes) oneSession();
  db.pragma("journal_mode = DELETE");
  db.close();
  return { sessions, messages };
}

/** Buffered appends to one fd: the log is written as a stream, never held whole. */
class LineWriter {
  private readonly fd: number;
  private parts: string[] = [];
  private pending = 0;
  written = 0;
  constructor(path: string) {
    this.fd = openSync(path, "w");
  }
  line(value: unknown): void {
    const s = `${JSON.stringify(value)}\n`;
    this.parts.push(s);
    this.pending += s.length;
    if (this.pending > 4 * 1024 * 1024) this.flush();
  }
  flush(): void {
    const b = Buffer.from(this.parts.join(""), "utf8");
    writeSync(this.fd, b);
    this.written += b.length;
    this.parts = [];
    this.pending = 0;
  }
  close(): void {
    this.flush();
    closeSync(this.fd);
  }
}

const usage = { input: 1200, output: 300, cacheRead: 0, cacheWrite: 0, totalTokens: 1500, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

/** One assistant message streamed the way pi 0.73 emits it: start, text deltas, end. */
function streamAssistant(w: LineWriter, prng: Prng, time: number, toolCall?: { id: string; command: string }) {
  const text = reply(prng);
  const base = { role: "assistant", api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5", usage, timestamp: time };
  const content: Record<string, unknown>[] = [{ type: "text", text: "" }];
  w.line({ type: "message_start", message: { ...base, content, stopReason: "stop" } });
  const chunks = text.match(/[\s\S]{1,160}/g) ?? [];
  let sofar = "";
  for (const delta of chunks) {
    sofar += delta;
    const partial = { ...base, content: [{ type: "text", text: sofar }], stopReason: "stop" };
    w.line({ type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta, partial }, message: partial });
  }
  const final = [{ type: "text", text }, ...(toolCall ? [{ type: "toolCall", id: toolCall.id, name: "bash", arguments: { command: toolCall.command } }] : [])];
  const message = { ...base, content: final, stopReason: toolCall ? "toolUse" : "stop" };
  w.line({ type: "message_end", message });
  return message;
}

/** A multi-session `pi --mode json` log of at least `targetBytes`. */
export function generateEventLog(path: string, targetBytes: number, seed = "log"): { sessions: number; messages: number } {
  const prng = new Prng(seed);
  const w = new LineWriter(path);
  let sessions = 0;
  let messages = 0;
  let time = Date.parse("2026-02-01T00:00:00Z");
  while (w.written < targetBytes) {
    const id = uuid(prng);
    w.line({ type: "session", version: 3, id, timestamp: new Date(time).toISOString(), cwd: `/home/dev/project-${prng.int(1, 40)}` });
    const prompts = prng.int(10, 60);
    for (let p = 0; p < prompts; p++) {
      const turnMessages: unknown[] = [];
      w.line({ type: "agent_start" });
      const user = { role: "user", content: [{ type: "text", text: words(prng, prng.logInt(5, 300)) }], timestamp: (time += 5000) };
      w.line({ type: "message_start", message: user });
      w.line({ type: "message_end", message: user });
      turnMessages.push(user);
      const tools = prng.int(0, 3);
      for (let t = 0; t <= tools; t++) {
        w.line({ type: "turn_start" });
        const call = t < tools ? { id: `toolu_${prng.nextU32().toString(16)}`, command: words(prng, 4) } : undefined;
        const assistant = streamAssistant(w, prng, (time += 2000), call);
        turnMessages.push(assistant);
        const results: unknown[] = [];
        if (call) {
          w.line({ type: "tool_execution_start", toolCallId: call.id, toolName: "bash", args: { command: call.command } });
          const output = words(prng, prng.logInt(10, 3000));
          const result = { role: "toolResult", toolCallId: call.id, toolName: "bash", content: [{ type: "text", text: output }], isError: false, timestamp: (time += 1000) };
          w.line({ type: "tool_execution_end", toolCallId: call.id, toolName: "bash", result: { content: result.content }, isError: false });
          w.line({ type: "message_start", message: result });
          w.line({ type: "message_end", message: result });
          results.push(result);
          turnMessages.push(result);
        }
        w.line({ type: "turn_end", message: assistant, toolResults: results });
      }
      w.line({ type: "agent_end", messages: turnMessages });
      messages += turnMessages.length;
    }
    sessions++;
    time += 3_600_000;
  }
  w.close();
  return { sessions, messages };
}
