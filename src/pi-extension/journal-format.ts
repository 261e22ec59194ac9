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
/** A journal file larger than this is not read (hostile or broken). */
export const MAX_JOURNAL_BYTES = 2 * MAX_JOURNAL_TEXT + 1024 * 1024;

/** One block of the partial answer: text, thinking, or a tool call with its arguments so far. */
export type JournalBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string }
  | { type: "toolCall"; id: string; name: string; arguments: unknown };

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
  return { journal: { ...(j as InflightJournal), content } };
}
