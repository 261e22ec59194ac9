// Plain-text views of entries, shared by `sessions show` and the exporters.

import type { AssistantMessage, ContentBlock, SessionEntry, ToolResultMessage } from "../pi/index.js";

type Msg = { role?: unknown; content?: unknown; [k: string]: unknown };

export function messageOf(e: SessionEntry): Msg | undefined {
  return e.type === "message" && e.message && typeof e.message === "object" ? (e.message as Msg) : undefined;
}

export function roleOf(e: SessionEntry): string | undefined {
  const r = messageOf(e)?.role;
  return typeof r === "string" ? r : undefined;
}

/** The text blocks of a content value (string or block list), joined by blank lines. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((b): b is { type: "text"; text: string } => b?.type === "text" && typeof b.text === "string")
    .map((b) => b.text)
    .join("\n\n");
}

export function blocksOf(content: unknown): ContentBlock[] {
  return Array.isArray(content) ? (content.filter((b) => b && typeof b === "object") as ContentBlock[]) : typeof content === "string" ? [{ type: "text", text: content }] : [];
}

/** The main text of an entry of any type (what a reader would call its content). */
export function entryText(e: SessionEntry): string {
  const m = messageOf(e);
  if (m) {
    if (m.role === "bashExecution") return `$ ${String(m.command ?? "")}\n${String(m.output ?? "")}`;
    return contentText(m.content);
  }
  switch (e.type) {
    case "compaction":
    case "branch_summary":
      return String(e.summary ?? "");
    case "custom_message":
      return contentText(e.content);
    case "label":
      return String(e.label ?? "");
    case "session_info":
      return String(e.name ?? "");
    case "model_change":
      return `${String(e.provider ?? "")}/${String(e.modelId ?? "")}`;
    case "thinking_level_change":
      return String(e.thinkingLevel ?? "");
    default:
      return "";
  }
}

/** "user", "assistant", "toolResult", or the entry type for non-messages. */
export function entryKind(e: SessionEntry): string {
  return roleOf(e) ?? e.type;
}

export function oneLine(text: string, max = 72): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A short line describing an entry, for tree outlines. */
export function entryPreview(e: SessionEntry, max = 60): string {
  const m = messageOf(e);
  if (m?.role === "assistant") {
    const a = m as unknown as AssistantMessage;
    const text = contentText(a.content);
    const tools = blocksOf(a.content).filter((b) => b.type === "toolCall").map((b) => (b as { name: string }).name);
    return oneLine(text || (tools.length ? `[${tools.join(", ")}]` : ""), max);
  }
  if (m?.role === "toolResult") return oneLine(`${(m as unknown as ToolResultMessage).toolName}: ${contentText(m.content)}`, max);
  return oneLine(entryText(e), max);
}

export interface Usage {
  tokens: number;
  cost: number;
}

export function usageOf(e: SessionEntry): Usage | undefined {
  const m = messageOf(e);
  if (m?.role !== "assistant") return undefined;
  const u = (m as unknown as AssistantMessage).usage;
  if (!u) return undefined;
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  const tokens = typeof u.totalTokens === "number" ? n(u.totalTokens) : n(u.input) + n(u.output) + n(u.cacheRead) + n(u.cacheWrite);
  return { tokens, cost: n(u.cost?.total) };
}

export function formatCost(cost: number): string {
  return cost === 0 ? "$0" : cost < 0.01 ? `$${cost.toFixed(4)}` : `$${cost.toFixed(2)}`;
}

export function formatTokens(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : String(n);
}
