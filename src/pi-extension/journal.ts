/**
 * Writes the in-flight journal (journal-format.ts) while pi streams an answer. message_update only
 * keeps a reference to pi's partial message and arms a timer: the handler returns at once, and
 * the file is written at most once per flush interval, off pi's path, one write at a time. Memory
 * is pi's own partial message plus one serialised copy while it is written, cut at
 * MAX_JOURNAL_TEXT. A tool the answer called keeps its partial output here too while it runs
 * (tool_execution_update: pi's latest partial result, the same way), until its result is persisted.
 */
import { promises as fs } from "node:fs";
import path from "node:path";
import { makeDirs, writeFully } from "../fs-safe.js";
import { JOURNAL_KIND, JOURNAL_VERSION, MAX_JOURNAL_TEXT, MAX_JOURNAL_TOOLS, MAX_TOOL_TEXT, journalFile, type InflightJournal, type JournalBlock, type JournalTool } from "./journal-format.js";

/** The parts of pi's AssistantMessage the journal reads (pi-ai types; everything checked). */
export interface PartialMessage {
  role?: unknown;
  content?: unknown;
  timestamp?: unknown;
  provider?: unknown;
  model?: unknown;
  api?: unknown;
}

export interface JournalSession {
  sessionFile: string | null;
  sessionId: string;
  cwd: string;
  parentId: string | null;
}

export class JournalWriter {
  private message: PartialMessage | undefined;
  private session: JournalSession | undefined;
  private startedAt = "";
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private file: string | undefined;
  /** Set once the message is persisted (or abandoned): no write may recreate the file after. */
  private closed = true;
  /** The answer's running tools' latest partial results (pi's objects), by tool call id. */
  private readonly tools = new Map<string, { toolName: string; partial: unknown; at: string }>();

  constructor(
    private readonly stateDir: string,
    private readonly host: string,
    private readonly flushMs: number,
    private readonly onError: (where: string, err: unknown) => void,
  ) {}

  /** A new assistant message begins streaming. */
  begin(message: PartialMessage, session: JournalSession): void {
    this.message = message;
    this.session = session;
    this.startedAt = new Date().toISOString();
    this.file = journalFile(this.stateDir, session.sessionId, process.pid);
    this.closed = false;
    this.tools.clear();
  }

  /** The answer grew: remember it, write it within flushMs. Never waits. */
  update(message: PartialMessage): void {
    if (this.closed) return;
    this.message = message;
    this.arm();
  }

  /** A tool of the answer printed more (pi's partial result so far): kept like the answer. Never waits. */
  toolUpdate(toolCallId: string, toolName: string, partial: unknown): void {
    if (this.closed || (!this.tools.has(toolCallId) && this.tools.size >= MAX_JOURNAL_TOOLS)) return;
    this.tools.set(toolCallId, { toolName, partial, at: new Date().toISOString() });
    this.arm();
  }

  /** pi is persisting that tool's result: its partial output is no longer needed. */
  toolDone(toolCallId: string): void {
    if (this.tools.delete(toolCallId) && !this.closed) this.arm();
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, this.flushMs);
    this.timer.unref();
  }

  /** Write now, unless a write is under way (then the next update or flush writes). */
  private flush(): void {
    if (this.closed || this.writing || !this.message || !this.session || !this.file) return;
    const file = this.file;
    let text: string;
    try {
      text = JSON.stringify(this.snapshot(this.message, this.session));
    } catch (err) {
      // Runs from a timer: a throw here would be an uncaught exception inside pi.
      return this.onError("journal", err);
    }
    this.writing = writeAtomic(file, text)
      .catch((err: unknown) => this.onError("journal", err))
      .finally(() => {
        this.writing = undefined;
        // pi persisted the message while this write ran: the file must not outlive it.
        if (this.closed && this.file === file) fs.rm(file, { force: true }).catch((err: unknown) => this.onError("journal", err));
      });
  }

  /** pi persisted the message (turn_end, agent_settled, a new message): the journal goes. */
  async end(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.message = undefined;
    this.tools.clear();
    const file = this.file;
    if (!file) return;
    await this.writing;
    await fs.rm(file, { force: true }).catch((err: unknown) => this.onError("journal", err));
  }

  /** Flush what is pending now (session_shutdown with an answer not persisted: keep what we have). */
  async flushNow(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
    this.flush();
    await this.writing;
  }

  private snapshot(m: PartialMessage, s: JournalSession): InflightJournal {
    let budget = MAX_JOURNAL_TEXT;
    let streamed = 0;
    let truncated = false;
    const cut = (t: string): string => {
      streamed += t.length;
      if (t.length <= budget) {
        budget -= t.length;
        return t;
      }
      truncated = true;
      const kept = t.slice(0, Math.max(0, budget));
      budget = 0;
      return kept;
    };
    const content: JournalBlock[] = [];
    for (const b of Array.isArray(m.content) ? (m.content as Record<string, unknown>[]) : []) {
      if (b?.type === "text" && typeof b.text === "string") content.push({ type: "text", text: cut(b.text) });
      else if (b?.type === "thinking" && typeof b.thinking === "string") content.push({ type: "thinking", thinking: cut(b.thinking) });
      else if (b?.type === "toolCall" && typeof b.id === "string" && typeof b.name === "string") {
        const args = JSON.stringify(b.arguments ?? {});
        content.push({ type: "toolCall", id: b.id, name: b.name, arguments: args.length <= budget ? b.arguments ?? {} : {} });
        cut(args);
      }
    }
    const str = (v: unknown) => (typeof v === "string" ? v : undefined);
    return {
      kind: JOURNAL_KIND,
      version: JOURNAL_VERSION,
      pid: process.pid,
      host: this.host,
      ...s,
      messageTimestamp: typeof m.timestamp === "number" ? m.timestamp : Date.parse(this.startedAt),
      provider: str(m.provider),
      model: str(m.model),
      api: str(m.api),
      startedAt: this.startedAt,
      updatedAt: new Date().toISOString(),
      streamedChars: streamed,
      truncated,
      content,
      ...(this.tools.size ? { tools: [...this.tools].map(([id, t]) => journalTool(id, t.toolName, t.partial, t.at)) } : {}),
    };
  }
}

/** A tool's partial result as the journal keeps it: its text blocks, the last MAX_TOOL_TEXT characters. */
function journalTool(toolCallId: string, toolName: string, partial: unknown, updatedAt: string): JournalTool {
  const content = (partial as { content?: unknown } | null)?.content;
  const blocks = Array.isArray(content) ? (content as { type?: unknown; text?: unknown }[]) : [];
  // Joined while counting: a hostile tool's thousands of blocks never become one huge string.
  let text = "";
  let streamedChars = 0;
  for (const b of blocks) {
    if (b?.type !== "text" || typeof b.text !== "string") continue;
    streamedChars += b.text.length;
    text = (text + b.text).slice(-MAX_TOOL_TEXT);
  }
  return { toolCallId, toolName, text, streamedChars, truncated: streamedChars > text.length, updatedAt };
}

/** Temp file, full write, rename: salvage sees the previous journal or this one. No fsync: it is
 * kept for a pi that dies, not for a machine that does, and an fsync per flush would cost pi's disk. */
async function writeAtomic(file: string, text: string): Promise<void> {
  await makeDirs(path.dirname(file), 0o700);
  const tmp = `${file}.tmp`;
  const handle = await fs.open(tmp, "w", 0o600);
  try {
    await writeFully(handle, Buffer.from(text), 0);
  } finally {
    await handle.close();
  }
  await fs.rename(tmp, file);
}
