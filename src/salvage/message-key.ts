// How two recovered copies of one message are recognised as the same message, and which copy is
// the better one. Sources disagree on detail (a hermes row keeps only the first 100 KB of text
// and tool names, a log keeps everything), so keys use only what every source keeps.

import type { SessionEntry } from "../pi/index.js";

type Block = { type?: string; text?: string; thinking?: string; name?: string; id?: string };

/** The visible text of a message: text blocks joined, the way hermes stores it. */
export function messageText(message: object): string {
  const c = (message as { content?: unknown }).content;
  if (typeof c === "string") return c;
  if (!Array.isArray(c)) return "";
  return (c as Block[])
    .filter((b) => b && b.type === "text" && typeof b.text === "string")
    .map((b) => b.text)
    .join("\n");
}

/** Head of the text, whitespace-collapsed: survives hermes truncation (which keeps the head). */
function fingerprint(text: string): string {
  // Slice first: texts can be 100 MB and the key needs only the head.
  return text.slice(0, 800).replace(/\s+/g, " ").trim().slice(0, 200);
}

/**
 * The dedupe key of an entry: tool results by their call id (unique per call), other messages by
 * role + timestamp + text head, other entries by type and their own content.
 */
export function entryKey(entry: SessionEntry): string {
  if (entry.type === "message") {
    const m = entry.message as { role?: string; timestamp?: number; toolCallId?: string; content?: unknown };
    if (m.role === "toolResult" && typeof m.toolCallId === "string") return `toolResult|${m.toolCallId}`;
    return `${m.role}|${m.timestamp ?? ""}|${fingerprint(messageText(m))}`;
  }
  const { id: _id, parentId: _p, timestamp: _t, ...rest } = entry;
  return `${entry.type}|${entry.timestamp}|${JSON.stringify(rest)}`;
}

/** Bigger is richer: full text over truncated text, tool results over names, more blocks over fewer. */
export function richness(entry: SessionEntry): number {
  return JSON.stringify(entry).length;
}

/** Milliseconds for ordering: the message's own time where it has one, else the entry's. */
export function entryTime(entry: SessionEntry): number {
  const m = entry.type === "message" ? (entry.message as { timestamp?: unknown }) : undefined;
  if (m && typeof m.timestamp === "number") return m.timestamp;
  const t = Date.parse(entry.timestamp);
  return Number.isFinite(t) ? t : 0;
}
