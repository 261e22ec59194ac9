/**
 * The extension's work, one Guard per pi process: ask the watcher for a snapshot when pi has
 * persisted something (turn_end, agent_settled, session_shutdown), keep the answer being streamed
 * (and what its tools print while they run) in the in-flight journal until pi persisted it, and
 * show in pi's footer whether this session is protected. Nothing here waits on the watcher or the repository: a request is a small file the
 * watcher picks up, and the status comes from the watcher's state file.
 */
import { promises as fs } from "node:fs";
import path from "node:path";
import { makeDirs } from "../fs-safe.js";
import type { WatchLog } from "../watch/log.js";
import { JournalWriter, type PartialMessage } from "./journal.js";
import { locateWatcher, protection, type GuardPaths, type Protection } from "./protection.js";

/** What the guard uses of pi's ExtensionContext (pi 1.x; all optional: older pis lack some). */
export interface PiContext {
  hasUI?: boolean;
  ui?: { notify?(message: string, type?: "info" | "warning" | "error"): void; setStatus?(key: string, text: string | undefined): void };
  sessionManager?: { getSessionFile?(): string | undefined; getSessionId?(): string; getCwd?(): string; getLeafId?(): string | null };
}

export const STATUS_KEY = "pi-guard";
const STATUS_EVERY_MS = 1000;

export class Guard {
  private readonly journal: JournalWriter;
  /** When pi last persisted a turn (turn_end), for "saved" vs "saving". */
  private persistedAt = 0;
  /** The assistant message streaming now, and whether its message_end came. */
  private streaming: PartialMessage | undefined;
  private streamEnded = false;
  /** The answer's tool calls pi started and has not yet persisted a result of. */
  private readonly running = new Set<string>();
  private ui: PiContext["ui"];
  private statusTimer: NodeJS.Timeout | undefined;
  private shown: string | undefined;
  private toldNoWatcher = false;
  private requestSeq = 0;

  constructor(
    private readonly paths: GuardPaths,
    private readonly host: string,
    private readonly log: WatchLog,
    flushMs: number,
  ) {
    this.journal = new JournalWriter(paths.stateDir, host, flushMs, (where, err) => this.error(where, err));
  }

  error(where: string, err: unknown): void {
    this.log.write("error", "error", { where, message: (err as Error)?.message ?? String(err), pid: process.pid });
  }

  sessionStart(ctx: PiContext): void {
    this.remember(ctx);
    if (!ctx.hasUI || this.statusTimer) return;
    this.statusTimer = setInterval(() => this.background("status", this.refresh()), STATUS_EVERY_MS);
    this.statusTimer.unref();
    this.background("status", this.refresh());
  }

  messageStart(message: PartialMessage & { toolCallId?: unknown }, ctx: PiContext): void {
    // A tool's result is about to be persisted: its partial output goes. The journal stays while
    // other tools of the answer still run (pi may run them in parallel).
    if (message?.role === "toolResult" && this.streaming && this.streamEnded && typeof message.toolCallId === "string") {
      this.running.delete(message.toolCallId);
      this.journal.toolDone(message.toolCallId);
      if (this.running.size) return;
    }
    // Any message after a finished answer means pi has appended that answer.
    if (this.streaming && this.streamEnded) this.settled();
    if (message?.role !== "assistant") return;
    const sm = ctx.sessionManager;
    const sessionId = sm?.getSessionId?.();
    if (!sessionId) return;
    this.streaming = message;
    this.streamEnded = false;
    this.journal.begin(message, { sessionFile: sm?.getSessionFile?.() ?? null, sessionId, cwd: sm?.getCwd?.() ?? "", parentId: sm?.getLeafId?.() ?? null });
  }

  messageUpdate(message: PartialMessage): void {
    if (this.streaming && message?.role === "assistant") this.journal.update(message);
  }

  /** tool_execution_start of a call of the answer being journalled. */
  toolStart(toolCallId: unknown): void {
    if (this.streaming && typeof toolCallId === "string") this.running.add(toolCallId);
  }

  /** tool_execution_update: what the tool printed so far, kept in the journal until its result is persisted. */
  toolUpdate(toolCallId: unknown, toolName: unknown, partial: unknown): void {
    if (this.streaming && typeof toolCallId === "string" && this.running.has(toolCallId)) this.journal.toolUpdate(toolCallId, String(toolName ?? ""), partial);
  }

  /** message_end runs before pi appends the entry: the journal stays until a later event. */
  messageEnd(message: PartialMessage): void {
    if (this.streaming && message?.role === "assistant") this.streamEnded = true;
  }

  /** turn_end and agent_settled: the turn's messages are in the session file. */
  persisted(reason: "turn_end" | "agent_settled", ctx: PiContext): void {
    this.remember(ctx);
    this.settled();
    this.persistedAt = Date.now();
    this.background(reason, this.request(reason, ctx).then(() => this.refresh()));
  }

  async shutdown(ctx: PiContext): Promise<void> {
    this.remember(ctx);
    clearInterval(this.statusTimer);
    this.statusTimer = undefined;
    // An answer still streaming, or a tool of it still running, is kept for salvage; a finished
    // one is in the file.
    if (this.streaming && (!this.streamEnded || this.running.size)) await this.journal.flushNow();
    else await this.journal.end();
    this.streaming = undefined;
    await this.request("session_shutdown", ctx);
  }

  private settled(): void {
    this.streaming = undefined;
    this.running.clear();
    this.background("journal", this.journal.end());
  }

  /** Work no handler waits for: a rejection would be an unhandled one inside pi. */
  private background(where: string, work: Promise<unknown>): void {
    work.catch((err: unknown) => this.error(where, err));
  }

  private remember(ctx: PiContext): void {
    if (ctx?.hasUI && ctx.ui) this.ui = ctx.ui;
  }

  /** Ask the watcher to snapshot now; with no watcher, say so once and do nothing more. */
  private async request(reason: string, ctx: PiContext): Promise<void> {
    let tmp: string | undefined;
    try {
      const { files, state } = await locateWatcher(this.paths, this.host);
      // The state file is hostile input too: protection() may throw on a strange one.
      const p = protection(state, this.host, 0, Date.now());
      if (p.kind === "no-watcher") return this.noWatcher(p);
      const file = files.request;
      // One temp name per write: turn_end's and agent_settled's requests may be written at once.
      tmp = `${file}.tmp-${process.pid}-${++this.requestSeq}`;
      await makeDirs(path.dirname(file), 0o700);
      await fs.writeFile(tmp, JSON.stringify({ reason, pid: process.pid, sessionFile: ctx.sessionManager?.getSessionFile?.() ?? null, at: new Date().toISOString() }), { mode: 0o600 });
      await fs.rename(tmp, file);
    } catch (err) {
      this.error("request", err);
      if (tmp) await fs.rm(tmp, { force: true }).catch(() => undefined);
    }
  }

  private noWatcher(p: Protection): void {
    if (this.toldNoWatcher) return;
    this.toldNoWatcher = true;
    this.log.write("warn", "no-watcher", { pid: process.pid, agentDir: this.paths.agentDir, stateFile: this.paths.files.state, status: p.text });
    this.ui?.notify?.(`${p.text}. Start one with \`pi-guard watch\` (or \`pi-guard service install --enable\`); until then this session is backed up by nothing.`, "warning");
  }

  /** Re-read the state file and update the footer if the line changed. */
  private async refresh(): Promise<void> {
    if (!this.ui?.setStatus) return;
    try {
      const p = protection((await locateWatcher(this.paths, this.host)).state, this.host, this.persistedAt, Date.now());
      if (p.kind === "no-watcher") this.noWatcher(p);
      if (p.text === this.shown) return;
      this.shown = p.text;
      this.ui.setStatus(STATUS_KEY, p.text);
    } catch (err) {
      this.error("status", err);
    }
  }
}
