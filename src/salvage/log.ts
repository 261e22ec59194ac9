// `--from-log`: pi's --mode json / --mode rpc output and web UI logs, streamed line by line so a
// multi-GB log with 100 MB lines never sits in memory whole. One log can hold several sessions:
// a session header or a get_state response with another id starts the next one.

import { isUtf8 } from "node:buffer";
import { readLines } from "../agents/pi/parse.js";
import { type SessionHeader } from "../model/session.js";
import { RepoError } from "../repo/errors.js";
import { deepGap, statInput } from "./input.js";
import { buildLogEntries, inventedSessionId } from "./log-entries.js";
import { readLogLine } from "./log-lines.js";
import { messageText } from "./message-key.js";
import { LogSession, Q } from "./log-session.js";
import { eventIdentity, excerpt, plainLineIdentity, type LineIdentity, type LineRef, type Named } from "./log-identity.js";
import type { IdentitySource, SalvagedSession, SourceResult } from "./types.js";

interface Current {
  header: Partial<SessionHeader>;
  idKnown: boolean;
  log: LogSession;
  /** The lines that named this session's id and cwd. */
  idFrom?: Named;
  cwdFrom?: Named;
  /** Lines of the log whose JSON was nested too deep to keep whole (pi/nesting.ts). */
  deepLines?: number[];
}

const fresh = (): Current => ({ header: {}, idKnown: false, log: new LogSession() });

class LogReader {
  /** Sessions finished so far; each is handed to `onDone` at once and not kept. */
  done = 0;
  cur: Current = fresh();

  constructor(private readonly onDone: (c: Current) => void) {}

  stats = { lines: 0, text: 0, broken: 0, brokenLines: [] as number[], events: 0, invalidUtf8: 0, naming: 0 };

  /** Start a new session unless the current one is still empty or is this very session. */
  switchTo(id: string, at: LineRef, header?: Partial<SessionHeader>): void {
    if (this.cur.idKnown && this.cur.header.id === id) {
      if (header) this.cur.header = { ...this.cur.header, ...header };
      return;
    }
    if (!this.cur.idKnown && (this.cur.log.slots.length === 0 || !header)) {
      // An unnamed stream so far: the id names it (get_state usually comes after the first prompt).
      this.cur.header = { ...this.cur.header, ...header, id };
      this.cur.idKnown = true;
      this.cur.idFrom = { ...at, value: id };
      return;
    }
    this.finish();
    this.cur = { header: { ...header, id }, idKnown: true, log: new LogSession(), idFrom: { ...at, value: id } };
  }

  /** pi moved on to another session (or a new process started): what follows is not this one. */
  boundary(keepCwd: boolean): void {
    const cwd = keepCwd && this.cur.cwdFrom ? { header: { cwd: this.cur.cwdFrom.value }, cwdFrom: this.cur.cwdFrom } : {};
    if (this.cur.log.slots.length > 0) this.finish();
    this.cur = { ...fresh(), ...cwd, header: { ...cwd.header } };
  }

  setCwd(cwd: string, at: LineRef): void {
    // A project dir named after this session's messages belongs to the next session.
    if (this.cur.log.slots.length > 0 && this.cur.header.cwd !== cwd) this.boundary(false);
    if (this.cur.header.cwd === cwd && this.cur.cwdFrom) return;
    this.cur.header = { ...this.cur.header, cwd };
    this.cur.cwdFrom = { ...at, value: cwd };
  }

  /** Apply what one line says about the session (plain lines and pi's JSON alike). */
  identity(i: LineIdentity, at: LineRef, header?: Partial<SessionHeader>): void {
    if (i.moved) this.boundary(i.moved === "same-cwd");
    if (i.spawn) this.boundary(false);
    if (i.sessionId) this.switchTo(i.sessionId, at, header);
    if (i.cwd) this.setCwd(i.cwd, at);
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
      case "response": {
        const data = (e.data ?? {}) as Record<string, unknown>;
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

/** Identity patterns are looked for in the first 4 KiB of a plain line (a line may be 100 MB). */
const PLAIN_SCAN = 4096;

/** `--session-id` and `--cwd`: given by hand, they win over what the log's lines name. */
export interface LogFlags {
  sessionId?: string;
  cwd?: string;
}

const NO_ID_GAP = "the log names no session (no header, get_state or \"session <uuid>\" line): session id invented";
const NO_CWD_GAP = "the log names no project dir (cwd)";

function chosen(file: string, named: Named | undefined, flag: string | undefined): IdentitySource | null {
  if (flag !== undefined) {
    const replaced = named && named.value !== flag ? { replaced: { value: named.value, line: named.line, text: named.text } } : {};
    return { value: flag, from: "flag", ...replaced };
  }
  return named ? { value: named.value, from: "line", path: file, line: named.line, text: named.text } : null;
}

function toSession(file: string, c: Current, flags: LogFlags): SalvagedSession {
  const firstTime = c.log.slots.map((s) => s.message.timestamp).find((t): t is number => typeof t === "number");
  const first = c.log.slots[0]?.message ?? {};
  const firstKey = `${String(first.role)}|${String(first.timestamp)}|${messageText(first).slice(0, 2000)}`;
  const cwd = flags.cwd ?? (typeof c.header.cwd === "string" ? c.header.cwd : "");
  const header: SessionHeader = {
    type: "session",
    version: 3,
    id: flags.sessionId ?? c.header.id ?? inventedSessionId(`${file}|${firstKey}`),
    timestamp: typeof c.header.timestamp === "string" ? c.header.timestamp : new Date(firstTime ?? Date.now()).toISOString(),
    cwd,
    ...(typeof c.header.parentSession === "string" ? { parentSession: c.header.parentSession } : {}),
  };
  const built = buildLogEntries(header, c.log);
  const gaps = [...built.gaps];
  const idKnown = c.idKnown || flags.sessionId !== undefined;
  if (!idKnown) gaps.push(NO_ID_GAP);
  if (!header.cwd) gaps.push(NO_CWD_GAP);
  if (c.deepLines) gaps.push(deepGap(`line${c.deepLines.length === 1 ? "" : "s"} ${c.deepLines.slice(0, 5).join(", ")}${c.deepLines.length > 5 ? ", …" : ""} of the log`));
  const identity = { sessionId: chosen(file, c.idFrom, flags.sessionId), cwd: chosen(file, c.cwdFrom, flags.cwd) };
  return { header, idKnown, cwdKnown: header.cwd !== "", entries: built.entries, sources: [{ kind: "log", path: file }], identity, gaps };
}

/**
 * Read a log. Each session is handed to `sink` as soon as the log moves on to the next one, so
 * memory holds one session, not the log; without a sink they are collected in the result.
 */
export async function salvageLog(file: string, sink?: (s: SalvagedSession) => void, flags: LogFlags = {}): Promise<SourceResult> {
  const stat = await statInput(file);
  if (stat.size === 0) throw new RepoError(`${file} is empty`, "input");
  const sessions: SalvagedSession[] = [];
  /** With --session-id: the sessions the log itself tells apart; the flag can name only one. */
  const named = new Set<string>();
  const reader = new LogReader((c) => {
    if (flags.sessionId !== undefined) named.add(c.idKnown ? String(c.header.id) : `unnamed ${named.size}`);
    (sink ?? ((x) => sessions.push(x)))(toSession(file, c, flags));
  });
  let tornTail: number | undefined;
  for await (const raw of readLines(file)) {
    reader.stats.lines = raw.line;
    if (!isUtf8(raw.bytes)) reader.stats.invalidUtf8++;
    const text = raw.bytes.toString("utf8");
    const line = readLogLine(text);
    const at = () => ({ line: raw.line, text: excerpt(text.replace(/\r$/, "")) });
    if (line.kind === "object") {
      reader.stats.events++;
      const named = eventIdentity(line.value);
      if (named.sessionId || named.cwd || named.moved) reader.identity(named, at(), line.value.type === "session" ? (line.value as Partial<SessionHeader>) : undefined);
      reader.event(line.value);
      if (line.cut) (reader.cur.deepLines ??= []).push(raw.line);
      continue;
    }
    if (line.kind === "text") reader.stats.text++;
    else if (!raw.terminated) tornTail = raw.line;
    else reader.stats.broken++;
    // Only the plain part of a line: the text after a "{" may be a torn message quoting anything.
    const brace = text.indexOf("{");
    const named = plainLineIdentity((brace === -1 ? text : text.slice(0, brace)).slice(0, PLAIN_SCAN));
    if (named.sessionId || named.cwd) {
      reader.stats.naming++;
      reader.identity(named, at());
    }
  }
  reader.finish();
  if (reader.done === 0) throw new RepoError(`${file}: no pi messages found (not a pi --mode json/rpc log?)`, "input");
  if (named.size > 1) {
    throw new RepoError(`--session-id names one session, but ${file} holds ${named.size} (split at the lines that switch sessions); salvage it without --session-id`, "usage");
  }

  const s = reader.stats;
  const notes: string[] = [];
  if (s.text) notes.push(`${s.text} plain text line(s) skipped${s.naming ? ` (${s.naming} of the plain lines named the session or its cwd and were used for that)` : ""}`);
  if (s.broken) notes.push(`${s.broken} line(s) with unreadable JSON skipped`);
  if (tornTail) notes.push(`the last line (${tornTail}) is cut off and could not be read`);
  if (s.invalidUtf8) notes.push(`${s.invalidUtf8} line(s) held invalid UTF-8; bad bytes read as U+FFFD`);
  const notKept = Object.fromEntries(Object.entries({ "plain text lines": s.text, "unreadable JSON lines": s.broken, "cut-off last line": tornTail ? 1 : 0 }).filter(([, n]) => n > 0));
  return { source: { kind: "log", path: file }, sessions, sessionCount: reader.done, notes, notKept };
}
