// What the search index stores per entry: everything a user may remember about it (their words,
// the answer, its thinking, the tool calls and what the tools printed), as one plain string.

import type { SessionEntry } from "../model/session.js";
import { systemMessageOf } from "../agents/pi/system-prompt.js";
import { blocksOf, entryKind, entryText, messageOf, systemPromptText } from "./describe.js";

/**
 * Longer texts are cut: one huge tool output (a whole file read back) would otherwise dominate
 * both the index size and BM25's length normalisation. The cut is documented in SESSIONS.md.
 */
export const MAX_INDEXED_CHARS = 64 * 1024;

export interface IndexedEntry {
  entryId: string;
  kind: string;
  timestamp: string;
  text: string;
}

function messageParts(e: SessionEntry): string[] {
  const m = messageOf(e);
  if (!m) return [entryText(e)];
  const parts: string[] = [];
  if (m.role === "toolResult" && typeof m.toolName === "string") parts.push(m.toolName);
  if (m.role === "bashExecution") return [entryText(e)];
  if (m.role === "system") {
    // pi 1.x's prompt: its text, the section names, and the tools it declares (name, description).
    const sys = systemMessageOf(e)!;
    const sections = sys.sections && typeof sys.sections === "object" ? Object.keys(sys.sections) : [];
    const tools = [...(Array.isArray(sys.toolsAdded) ? sys.toolsAdded : []), ...(Array.isArray(sys.toolsRemoved) ? sys.toolsRemoved : [])];
    return [systemPromptText(e), sections.join(" "), ...tools.map((t) => (t && typeof t === "object" ? `${String(t.name ?? "")} ${typeof t.description === "string" ? t.description : ""}` : ""))];
  }
  for (const b of blocksOf(m.content)) {
    if (b.type === "text") parts.push(b.text);
    else if (b.type === "thinking") parts.push(b.thinking);
    else if (b.type === "toolCall") parts.push(`${b.name} ${JSON.stringify(b.arguments ?? {})}`);
  }
  return parts;
}

export function indexedEntry(e: SessionEntry): IndexedEntry | undefined {
  const text = messageParts(e).filter((p) => typeof p === "string" && p.length > 0).join("\n");
  if (!text.trim()) return undefined;
  return {
    entryId: e.id,
    kind: entryKind(e),
    timestamp: typeof e.timestamp === "string" ? e.timestamp : "",
    text: text.length > MAX_INDEXED_CHARS ? text.slice(0, MAX_INDEXED_CHARS) : text,
  };
}
