// `--from-log`: pi's --mode json / --mode rpc output and web UI logs, streamed line by line so a
// multi-GB log with 100 MB lines never sits in memory whole. One log can hold several sessions:
// a session header or a get_state response with another id starts the next one.

import { isUtf8 } from "node:buffer";
import { readLines, type SessionHeader } from "../pi/index.js";
import { RepoError } from "../repo/errors.js";
import { statInput } from "./input.js";
import { buildLogEntries, inventedSessionId } from "./log-entries.js";
import { readLogLine } from "./log-lines.js";
import { messageText } from "./message-key.js";
import { LogSession, Q } from "./log-session.js";
import type { SalvagedSession, SourceResult } from "./types.js";

interface Current {
  header: Partial<SessionHeader>;
  idKnown: boolean;
  log: LogSession;
}

const fresh = (): Current => ({ header: {}, idKnown: false, log: new LogSession() });

class LogReader {
  /** Sessions finished so far; each is handed to `onDone` at once and not kept. */
  done = 0;
  cur: Current = fresh();

  constructor(private readonly onDone: (c: Current) => void) {}

  stats = { lines: 0, text: 0, broken: 0, brokenLines: [] as number[], events: 0, invalidUtf8: 0 };

  /** Start a new session unless the current one is still empty or is this very session. */
  switchTo(id: string, header?: Partial<SessionHeader>): void {
    if (this.cur.idKnown && this.cur.header.id === id) {
      if (header) this.cur.header = { ...this.cur.header, ...header };
      return;
    }
    if (!this.cur.idKnown && (this.cur.log.slots.length === 0 || !header)) {
      // An unnamed stream so far: the id names it (get_state usually comes after the first prompt).
      this.cur.header = { ...this.cur.header, ...header, id };
      this.cur.idKnown = true;
      return;
    }
    this.finish();
    this.cur = { header: { ...header, id }, idKnown: true, log: new LogSession() };
  }

  finish(): void {
    if (this.cur.log.slots.length === 0) return;
    this.done++;
    this.onDone(this.cur);
    this.cur = fresh();
  }

  event(e: Record<string, unknown>): void {
    const log = this.cur.log;
    switch (e.type) {
      case "session":
        if (typeof e.id === "string") this.switchTo(e.id, e as Partial<SessionHeader>);
        return;
      case "response": {
        const data = (e.data ?? {}) as Record<string, unknown>;
        if (e.command === "get_state" && typeof data.sessionId === "string") this.switchTo(data.sessionId);
        if (e.command === "get_messages") log.addOrdered(data.messages, Q.fallback, "get_messages");
        return;
      }
      case "message_start":
        return log.messageStart(e.message);
      case "message_update":
        return log.messageUpdate(e);
      case "message_end":
        return log.messageEnd(e.message);
      case "turn_end":
        return log.addOrdered([e.message, ...(Array.isArray(e.toolResults) ? e.toolResults : [])], Q.fallback, "turn_end");
      case "agent_end":
        return log.addOrdered(e.messages, Q.fallback, "agent_end");
      case "tool_execution_end":
        return log.toolExecutionEnd(e);
      // pi 0.73 emits compaction_end; older releases auto_compaction_end. Same payload.
      case "compaction_end":
      case "auto_compaction_end":
        return log.compaction(e.result);
    }
  }
}

function toSession(file: string, c: Current): SalvagedSession {
  const firstTime = c.log.slots.map((s) => s.message.timestamp).find((t): t is number => typeof t === "number");
  const first = c.log.slots[0]?.message ?? {};
  const firstKey = `${String(first.role)}|${String(first.timestamp)}|${messageText(first).slice(0, 2000)}`;
  const header: SessionHeader = {
    type: "session",
    version: 3,
    id: c.header.id ?? inventedSessionId(`${file}|${firstKey}`),
    timestamp: typeof c.header.timestamp === "string" ? c.header.timestamp : new Date(firstTime ?? Date.now()).toISOString(),
    cwd: typeof c.header.cwd === "string" ? c.header.cwd : "",
    ...(typeof c.header.parentSession === "string" ? { parentSession: c.header.parentSession } : {}),
  };
  const built = buildLogEntries(header, c.log);
  const gaps = [...built.gaps];
  if (!c.idKnown) gaps.push("the log names no session (no header or get_state): session id invented");
  if (!header.cwd) gaps.push("the log names no project dir (cwd)");
  return { header, idKnown: c.idKnown, cwdKnown: header.cwd !== "", entries: built.entries, sources: [{ kind: "log", path: file }], gaps };
}

/**
 * Read a log. Each session is handed to `sink` as soon as the log moves on to the next one, so
 * memory holds one session, not the log; without a sink they are collected in the result.
 */
export async function salvageLog(file: string, sink?: (s: SalvagedSession) => void): Promise<SourceResult> {
  const stat = await statInput(file);
  if (stat.size === 0) throw new RepoError(`${file} is empty`, "input");
  const sessions: SalvagedSession[] = [];
  const reader = new LogReader((c) => (sink ?? ((x) => sessions.push(x)))(toSession(file, c)));
  let tornTail: number | undefined;
  for await (const raw of readLines(file)) {
    reader.stats.lines = raw.line;
    if (!isUtf8(raw.bytes)) reader.stats.invalidUtf8++;
    const line = readLogLine(raw.bytes.toString("utf8"));
    if (line.kind === "text") reader.stats.text++;
    else if (line.kind === "broken") {
      if (!raw.terminated) tornTail = raw.line;
      else reader.stats.broken++;
    } else {
      reader.stats.events++;
      reader.event(line.value);
    }
  }
  reader.finish();
  if (reader.done === 0) throw new RepoError(`${file}: no pi messages found (not a pi --mode json/rpc log?)`, "input");

  const s = reader.stats;
  const notes: string[] = [];
  if (s.text) notes.push(`${s.text} plain text line(s) skipped`);
  if (s.broken) notes.push(`${s.broken} line(s) with unreadable JSON skipped`);
  if (tornTail) notes.push(`the last line (${tornTail}) is cut off and could not be read`);
  if (s.invalidUtf8) notes.push(`${s.invalidUtf8} line(s) held invalid UTF-8; bad bytes read as U+FFFD`);
  const notKept = Object.fromEntries(Object.entries({ "plain text lines": s.text, "unreadable JSON lines": s.broken, "cut-off last line": tornTail ? 1 : 0 }).filter(([, n]) => n > 0));
  return { source: { kind: "log", path: file }, sessions, sessionCount: reader.done, notes, notKept };
}
