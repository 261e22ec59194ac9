// How two recovered copies of one message are recognised as the same message, and which copy is
// the better one. Sources disagree on detail (a hermes row keeps only the first 100 KB of text
// and tool names, a log keeps everything), so keys use only what every source keeps.

import type { SessionEntry } from "../model/session.js";
import { isNameOnlyCall, isUnrecordedResult } from "./not-recorded.js";

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

/**
 * Head of the text as its first words (letters and digits, lower-cased): survives hermes
 * truncation (which keeps the head), and a terminal's rendering, which drops markdown marks
 * ("**bold**" shows as "bold") and re-wraps lines.
 */
function fingerprint(text: string): string {
  // Slice first: texts can be 100 MB and the key needs only the head.
  return (text.slice(0, 1200).toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 40).join(" ");
}

/**
 * The dedupe key of an entry: tool results by their call id (unique per call), other messages by
 * role + text head, other entries by type and their own content. Message times are compared
 * separately (see SAME_MESSAGE_WINDOW_MS): sources stamp the same message differently (pi's
 * message time is when streaming began, hermes stores the entry's write time).
 */
export function entryKey(entry: SessionEntry): string {
  if (entry.type === "message") {
    const m = entry.message as { role?: string; toolCallId?: string; content?: unknown };
    if (m.role === "toolResult" && typeof m.toolCallId === "string") return `toolResult|${m.toolCallId}`;
    const head = fingerprint(messageText(m));
    if (head) return `${m.role}|${head}`;
    // Thinking + tool call, no text: the thinking tells it apart (a terminal invents call ids).
    const thought = fingerprint(thinkingText(m.content));
    if (thought) return `${m.role}|thinking|${thought}`;
    // Tool-only messages have no text to tell them apart; hermes drops them, so ids are safe here.
    return `${m.role}||${toolCallIds(m.content)}`;
  }
  // Logs synthesise a model_change where the model first shows; another source's copy of the
  // same change is stamped differently, so match it by content (within the time window).
  if (entry.type === "model_change") return `model_change|${String(entry.provider)}|${String(entry.modelId)}`;
  const { id: _id, parentId: _p, timestamp: _t, ...rest } = entry;
  return `${entry.type}|${entry.timestamp}|${JSON.stringify(rest)}`;
}

/** How far apart two sources may stamp one message: a long reply streams for minutes. */
export const SAME_MESSAGE_WINDOW_MS = 15 * 60 * 1000;

function thinkingText(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return (content as Block[])
    .filter((b) => b && b.type === "thinking" && typeof b.thinking === "string")
    .map((b) => b.thinking)
    .join("\n");
}

function toolCallIds(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return (content as { type?: string; id?: string }[])
    .filter((b) => b?.type === "toolCall")
    .map((b) => b.id)
    .join(",");
}

/**
 * Bigger is richer: full text over truncated text, tool results over names, more blocks over
 * fewer. A copy holding calls by name only or a "not recorded" result loses to any copy that has
 * the real ones, however short ({"command":"ls"} is shorter than the marker), even when it holds
 * more text: the kept copy is taken whole, and its calls must be the ones real results answer.
 */
export function richness(entry: SessionEntry): number {
  const size = JSON.stringify(entry).length;
  if (entry.type !== "message") return size;
  if (isUnrecordedResult(entry.message)) return -1;
  const c = (entry.message as { content?: unknown }).content;
  const placeholders = Array.isArray(c) ? c.filter(isNameOnlyCall).length : 0;
  return placeholders > 0 ? size - placeholders * 1e12 : size;
}

/** Milliseconds for ordering: the message's own time where it has one, else the entry's. */
export function entryTime(entry: SessionEntry): number {
  const m = entry.type === "message" ? (entry.message as { timestamp?: unknown }) : undefined;
  if (m && typeof m.timestamp === "number") return m.timestamp;
  const t = Date.parse(entry.timestamp);
  return Number.isFinite(t) ? t : 0;
}
