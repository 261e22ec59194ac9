/**
 * The in-flight journal: what the pi extension keeps of an answer while pi streams it, and what
 * `pi-guard salvage --from-journals` reads back after pi died before persisting it (docs/FORMAT.md
 * §15, docs/EXTENSION.md). One JSON file per pi process and session in `<stateDir>/inflight/`,
 * rewritten whole (temp file, rename) at most every flush interval, deleted once pi persisted the
 * message. Never in the agent dir: pi-guard does not write there.
 */
import path from "node:path";

export const JOURNAL_KIND = "pi-guard/inflight";
export const JOURNAL_VERSION = 1;
/** A journal holds at most this much text (the rest of a longer answer is cut and marked). */
export const MAX_JOURNAL_TEXT = 16 * 1024 * 1024;
/** A tool's partial output is cut to its last this many characters; at most MAX_JOURNAL_TOOLS tools are kept. */
export const MAX_TOOL_TEXT = 256 * 1024;
export const MAX_JOURNAL_TOOLS = 32;
/** A journal file larger than this is not read (hostile or broken): the answer, its tools' output (JSON-escaped, at most twice as long), and room. */
export const MAX_JOURNAL_BYTES = 2 * MAX_JOURNAL_TEXT + 2 * MAX_JOURNAL_TOOLS * MAX_TOOL_TEXT + 1024 * 1024;

/** One block of the partial answer: text, thinking, or a tool call with its arguments so far. */
export type JournalBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string }
  | { type: "toolCall"; id: string; name: string; arguments: unknown };

/**
 * What a tool printed so far while it ran (pi's tool_execution_update), kept until pi persists
 * its result. The text is pi's partial result's text blocks; past MAX_TOOL_TEXT only the end is
 * kept (the latest output, as pi's own bash tool keeps it).
 */
export interface JournalTool {
  toolCallId: string;
  toolName: string;
  text: string;
  /** Characters of the partial result's text before any cut, and whether it was cut. */
  streamedChars: number;
  truncated: boolean;
  /** When the tool last reported output (ISO). */
  updatedAt: string;
}

export interface InflightJournal {
  kind: typeof JOURNAL_KIND;
  version: typeof JOURNAL_VERSION;
  /** The pi process that streamed it, and its host (a journal of a live pi is not salvaged). */
  pid: number;
  host: string;
  /** The session, as pi's SessionManager named it. */
  sessionFile: string | null;
  sessionId: string;
  cwd: string;
  /** The entry pi's leaf was when the answer began: the recovered entry's parent. */
  parentId: string | null;
  /** The assistant message's own timestamp (ms), which pi also stores: it identifies the message. */
  messageTimestamp: number;
  provider?: string;
  model?: string;
  api?: string;
  /** When the answer began and when this file was written (ISO). */
  startedAt: string;
  updatedAt: string;
  /** Characters of text, thinking and tool-call arguments streamed so far (before any cut). */
  streamedChars: number;
  /** True when MAX_JOURNAL_TEXT cut the answer. */
  truncated: boolean;
  content: JournalBlock[];
  /**
   * The answer's tool calls that were running, with what they printed so far (optional: absent
   * while none has printed). Once pi persisted the answer, this is what a journal still holds.
   */
  tools?: JournalTool[];
}

export const journalDir = (stateDir: string): string => path.join(stateDir, "inflight");

/** `<sessionId>.<pid>.json`: one pi process writes one file per session, no two processes the same. */
export function journalFile(stateDir: string, sessionId: string, pid: number): string {
  return path.join(journalDir(stateDir), `${sessionId.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 128)}.${pid}.json`);
}

/** A journal, or why the text is not one. Hostile input: every field is checked. */
export function parseJournal(text: string): { journal: InflightJournal } | { error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { error: "not JSON" };
  }
  const j = raw as Partial<InflightJournal> | null;
  if (typeof j !== "object" || j === null || j.kind !== JOURNAL_KIND) return { error: `not a ${JOURNAL_KIND} journal` };
  if (j.version !== JOURNAL_VERSION) return { error: `journal version ${String(j.version)} is not ${JOURNAL_VERSION}` };
  if (typeof j.sessionId !== "string" || j.sessionId === "" || typeof j.cwd !== "string") return { error: "no session id or cwd" };
  if (!Number.isSafeInteger(j.pid) || !Number.isFinite(j.messageTimestamp) || !Array.isArray(j.content)) return { error: "no pid, message timestamp or content" };
  if (j.parentId !== null && typeof j.parentId !== "string") return { error: "a parent id that is not a string" };
  if (j.sessionFile !== null && typeof j.sessionFile !== "string") return { error: "a session file that is not a string" };
  const content: JournalBlock[] = [];
  for (const b of j.content as unknown[]) {
    const block = b as Record<string, unknown> | null;
    if (block?.type === "text" && typeof block.text === "string") content.push({ type: "text", text: block.text });
    else if (block?.type === "thinking" && typeof block.thinking === "string") content.push({ type: "thinking", thinking: block.thinking });
    else if (block?.type === "toolCall" && typeof block.id === "string" && typeof block.name === "string") {
      content.push({ type: "toolCall", id: block.id, name: block.name, arguments: block.arguments ?? {} });
    } else return { error: "a content block of an unknown kind" };
  }
  const tools: JournalTool[] = [];
  if (j.tools !== undefined) {
    if (!Array.isArray(j.tools) || j.tools.length > MAX_JOURNAL_TOOLS) return { error: "a tools list that is not one" };
    for (const t of j.tools as unknown[]) {
      const tool = t as Partial<JournalTool> | null;
      if (typeof tool?.toolCallId !== "string" || typeof tool.toolName !== "string" || typeof tool.text !== "string" || typeof tool.updatedAt !== "string") return { error: "a tool without its call id, name, text or time" };
      tools.push({ toolCallId: tool.toolCallId, toolName: tool.toolName, text: tool.text, streamedChars: Number.isSafeInteger(tool.streamedChars) ? tool.streamedChars! : tool.text.length, truncated: tool.truncated === true, updatedAt: tool.updatedAt });
    }
  }
  return { journal: { ...(j as InflightJournal), content, ...(j.tools !== undefined ? { tools } : {}) } };
}
