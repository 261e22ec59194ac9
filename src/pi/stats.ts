// Per-session numbers for `sessions stats` and the dashboard. Counts cover every branch in the
// file, because abandoned branches still cost tokens and money.

import type { AssistantMessage, SessionEntry } from "./types.js";

export interface SessionStats {
  entries: number;
  /** User prompts that got at least one assistant reply (one agent run each). */
  turns: number;
  userMessages: number;
  assistantMessages: number;
  toolResults: number;
  toolCalls: number;
  /** Sum of usage.totalTokens over assistant messages (old files lack it: then the four parts). */
  tokens: number;
  /** Sum of usage.cost.total over assistant messages, in the provider's currency (USD). */
  cost: number;
  /** "provider/model" of every assistant message, in order of first use. */
  models: string[];
  /** Earliest and latest entry timestamps (ISO), or null when none parse. */
  firstTimestamp: string | null;
  lastTimestamp: string | null;
}

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

function totalTokens(usage: AssistantMessage["usage"] | undefined): number {
  if (!usage) return 0;
  if (typeof usage.totalTokens === "number") return num(usage.totalTokens);
  // Sessions from late 2025 predate totalTokens; its parts were already recorded.
  return num(usage.input) + num(usage.output) + num(usage.cacheRead) + num(usage.cacheWrite);
}

function entryTime(e: SessionEntry): number {
  const fromEntry = typeof e.timestamp === "string" ? Date.parse(e.timestamp) : NaN;
  if (!Number.isNaN(fromEntry)) return fromEntry;
  const fromMessage = (e.message as { timestamp?: unknown } | undefined)?.timestamp;
  return typeof fromMessage === "number" ? fromMessage : NaN;
}

function roleOf(e: SessionEntry): string | undefined {
  if (e.type !== "message") return undefined;
  const role = (e.message as { role?: unknown } | undefined)?.role;
  return typeof role === "string" ? role : undefined;
}

export function sessionStats(entries: readonly SessionEntry[]): SessionStats {
  const stats: SessionStats = {
    entries: entries.length,
    turns: 0,
    userMessages: 0,
    assistantMessages: 0,
    toolResults: 0,
    toolCalls: 0,
    tokens: 0,
    cost: 0,
    models: [],
    firstTimestamp: null,
    lastTimestamp: null,
  };
  const models = new Set<string>();
  // Nearest user message above each entry; parents come before children in pi's files.
  const userAbove = new Map<string, string | undefined>();
  const answeredUsers = new Set<string>();
  let first = Infinity;
  let last = -Infinity;

  for (const e of entries) {
    const t = entryTime(e);
    if (!Number.isNaN(t)) {
      first = Math.min(first, t);
      last = Math.max(last, t);
    }
    const role = roleOf(e);
    const inherited = e.parentId ? userAbove.get(e.parentId) : undefined;
    userAbove.set(e.id, role === "user" ? e.id : inherited);
    if (role === "user") stats.userMessages++;
    else if (role === "toolResult") stats.toolResults++;
    else if (role === "assistant") {
      stats.assistantMessages++;
      const msg = e.message as AssistantMessage;
      if (inherited) answeredUsers.add(inherited);
      stats.tokens += totalTokens(msg.usage);
      stats.cost += num(msg.usage?.cost?.total);
      if (Array.isArray(msg.content)) stats.toolCalls += msg.content.filter((b) => b?.type === "toolCall").length;
      if (msg.provider || msg.model) models.add(`${msg.provider ?? "?"}/${msg.model ?? "?"}`);
    }
  }
  stats.turns = answeredUsers.size;
  stats.models = [...models];
  if (first !== Infinity) {
    stats.firstTimestamp = new Date(first).toISOString();
    stats.lastTimestamp = new Date(last).toISOString();
  }
  return stats;
}
