// Plain-text views of entries, shared by `sessions show` and the exporters.

import type { AssistantMessage, ContentBlock, SessionEntry, SessionHeader, ToolResultMessage } from "../model/session.js";
import { countedUsage } from "../model/stats.js";
import { findAgent } from "../agents/registry.js";
import { applySystemMessage, describeSystemChange, emptySystemState, systemMessageOf, systemText } from "../agents/pi/system-prompt.js";

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
    if (m.role === "system") return systemPromptText(e);
    return contentText(m.content);
  }
  switch (e.type) {
    case "context_edit":
      return replacementText(e);
    case "usage":
      return `${String(e.kind ?? "")} ${String(e.provider ?? "")}/${String(e.model ?? "")}`;
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

/** A system message's whole text as pi renders it: its instructions, then its sections in order. */
export function systemPromptText(e: SessionEntry): string {
  const m = systemMessageOf(e);
  if (!m) return "";
  const sections = m.sections && typeof m.sections === "object" ? Object.values(m.sections as Record<string, unknown>) : [];
  return [systemText(m.content), ...sections.filter((t): t is string => typeof t === "string")].filter((t) => t.length > 0).join("\n\n");
}

/** The text a context edit puts in place of its target ("" when it omits it). */
export function replacementText(e: SessionEntry): string {
  const r = e.replacement as { content?: unknown } | null | undefined;
  return r && typeof r === "object" ? contentText(r.content) : "";
}

/** "user", "assistant", "toolResult", or the entry type for non-messages. */
export function entryKind(e: SessionEntry): string {
  return roleOf(e) ?? e.type;
}

export function oneLine(text: string, max = 72): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * pi's tree label of a system message: "system prompt: 3 sections, 4 tools" for the first of a
 * branch (`leading`), else "system update: skills, -rules, tools +bash" (what it changes).
 */
export function systemPreview(e: SessionEntry, leading: boolean): string {
  const m = systemMessageOf(e);
  if (!m) return "";
  if (leading) {
    const { sections, tools } = applySystemMessage(emptySystemState(), m).state;
    return `system prompt: ${sections.size} sections, ${tools.size} tools`;
  }
  const changes = describeSystemChange(m);
  return `system update${changes ? `: ${changes}` : ""}`;
}

/** A short line describing an entry, for tree outlines. */
export function entryPreview(e: SessionEntry, max = 60): string {
  const m = messageOf(e);
  if (e.type === "context_edit") return oneLine(`${e.replacement === null ? "omit" : "replace"} ${String(e.targetId ?? "?")}${e.replacement === null ? "" : `: ${replacementText(e)}`}`, max);
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

/** Usage as pi 1.x records it, on any entry that has some (messages, usage entries, summaries). */
export interface UsageDetail extends Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** The provider reported the cost it billed (cost.totalFromProvider), not an estimate. */
  billed: boolean;
}

/**
 * The usage an entry carries, with its breakdown, for display: the same usage the session totals
 * count (countedUsage: an assistant's or a tool result's, a `usage` entry's, a compaction's or a
 * branch summary's).
 */
export function entryUsage(e: SessionEntry): UsageDetail | undefined {
  const counted = countedUsage(e);
  if (!counted) return undefined;
  const { tokens, cost, input, output, cacheRead, cacheWrite, usage } = counted;
  const billed = !!usage.cost && typeof usage.cost === "object" && (usage.cost as Record<string, unknown>).totalFromProvider === true;
  return { tokens, cost, input, output, cacheRead, cacheWrite, billed };
}

/** "50.0k tokens (↑0 ↓0 R50.0k W0) · $0.0150 billed": pi's breakdown (input, output, cache read, cache write). */
export function formatUsage(u: UsageDetail): string {
  const parts = `↑${formatTokens(u.input)} ↓${formatTokens(u.output)} R${formatTokens(u.cacheRead)} W${formatTokens(u.cacheWrite)}`;
  return `${formatTokens(u.tokens)} tokens (${parts}) · ${formatCost(u.cost)}${u.billed ? " billed" : ""}`;
}

/** "850 ms", "12.3 s", "4 min 5 s". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/**
 * What pi 1.x records about a reply besides its text: the thinking level asked for, how long it
 * took, and whether the cost is the provider's bill. Strings ready for a "·"-joined line.
 */
export function messageFacts(e: SessionEntry): string[] {
  const m = messageOf(e);
  if (!m) return [];
  const out: string[] = [];
  if (typeof m.thinkingLevel === "string" && m.thinkingLevel) out.push(`thinking: ${m.thinkingLevel}`);
  if (typeof m.durationMs === "number") out.push(formatDuration(m.durationMs));
  if (entryUsage(e)?.billed) out.push("cost billed by the provider");
  return out.filter(Boolean);
}

/** Header fields other than the ones pi defines: custom metadata a caller or extension added. */
const HEADER_FIELDS = new Set(["type", "version", "id", "timestamp", "cwd", "parentSession"]);
export function headerMetadata(h: SessionHeader): [string, string][] {
  return Object.entries(h)
    .filter(([k, v]) => !HEADER_FIELDS.has(k) && v !== undefined)
    .map(([k, v]) => [k, oneLine(typeof v === "string" ? v : jsonOrNote(v), 200)]);
}

function jsonOrNote(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return "(not printable)";
  }
}

export function formatCost(cost: number): string {
  return cost === 0 ? "$0" : cost < 0.01 ? `$${cost.toFixed(4)}` : `$${cost.toFixed(2)}`;
}

export function formatTokens(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : String(n);
}

/** A session's default title, naming the agent that wrote it: "pi session <id>", "Claude Code session <id>". */
export function sessionTitle(header: SessionHeader): string {
  const agent = typeof header.agent === "string" ? findAgent(header.agent) : undefined;
  return `${agent?.title ?? "pi"} session ${String(header.id)}`;
}
