// Per-session numbers for `sessions stats` and the dashboard. Counts cover every branch in the
// file, because abandoned branches still cost tokens and money. Tokens and cost follow pi's own
// definition of a session's totals (countedUsage below).

import type { AssistantMessage, SessionEntry } from "./session.js";

export interface SessionStats {
  entries: number;
  /** User prompts that got at least one assistant reply (one agent run each). */
  turns: number;
  userMessages: number;
  assistantMessages: number;
  toolResults: number;
  toolCalls: number;
  /** Sum of the four token counts (input, output, cache read and write) over the usage countedUsage counts. */
  tokens: number;
  /** Sum of usage.cost.total over the same usage, in the provider's currency (USD). */
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

function entryTime(e: SessionEntry): number {
  const fromEntry = typeof e.timestamp === "string" ? Date.parse(e.timestamp) : NaN;
  if (!Number.isNaN(fromEntry)) return fromEntry;
  const fromMessage = (e.message as { timestamp?: unknown } | undefined)?.timestamp;
  return typeof fromMessage === "number" ? fromMessage : NaN;
}

/** pi's name for usage no model is named for (getUsageCostBreakdown, dist/core/usage-totals.js). */
export const SUMMARY_USAGE_MODEL = "Tools/summaries";

/** Token counts as pi records them in a `usage` object (0 where missing or not a finite number), plus its total and cost. */
export interface TokenCounts {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /**
   * A usage's tokens as pi counts them: input + output + cache read + cache write (pi 1.6.0's
   * getSessionStats), never the provider's own `totalTokens`, which may count more (or be missing,
   * in sessions from late 2025).
   */
  tokens: number;
  cost: number;
}

export interface CountedUsage extends TokenCounts {
  /** The usage object as recorded (input, output, cacheRead, cacheWrite, totalTokens, cost). */
  usage: Record<string, unknown>;
  /** "provider/model", or SUMMARY_USAGE_MODEL for compactions, branch summaries and tool results. */
  model: string;
  /** An assistant message (the others are not messages the counts of messages include). */
  assistant: boolean;
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/**
 * The usage one entry adds to its session's totals, by pi's definition: pi 1.6.0's
 * AgentSession.getSessionStats (dist/core/agent-session.js) sums assistant messages, tool
 * results that carry usage, `usage` entries of any kind (cache_warm and kinds not known yet),
 * and the usage of compactions and branch summaries (their summaries cost a model call), over
 * every entry of the file. pi 0.73.1 files have only the first. None of it is LLM context.
 */
export function countedUsage(e: SessionEntry): CountedUsage | undefined {
  const raw = e as { type: string; usage?: unknown; provider?: unknown; model?: unknown; message?: unknown };
  let usage: unknown;
  let model = SUMMARY_USAGE_MODEL;
  let assistant = false;
  if (raw.type === "message") {
    const m = raw.message as { role?: unknown; usage?: unknown; provider?: unknown; model?: unknown } | undefined;
    if (m?.role === "assistant") {
      assistant = true;
      usage = m.usage;
      model = `${str(m.provider) ?? "?"}/${str(m.model) ?? "?"}`;
    } else if (m?.role === "toolResult") usage = m.usage;
  } else if (raw.type === "usage") {
    usage = raw.usage;
    model = `${str(raw.provider) ?? "?"}/${str(raw.model) ?? "?"}`;
  } else if (raw.type === "compaction" || raw.type === "branch_summary") usage = raw.usage;
  if (!usage || typeof usage !== "object") return undefined;
  const u = usage as Partial<NonNullable<AssistantMessage["usage"]>>;
  const [input, output, cacheRead, cacheWrite] = [num(u.input), num(u.output), num(u.cacheRead), num(u.cacheWrite)];
  return { usage: usage as Record<string, unknown>, input, output, cacheRead, cacheWrite, tokens: input + output + cacheRead + cacheWrite, cost: num(u.cost?.total), model, assistant };
}

function roleOf(e: SessionEntry): string | undefined {
  if (e.type !== "message") return undefined;
  const role = (e.message as { role?: unknown } | undefined)?.role;
  return typeof role === "string" ? role : undefined;
}

/**
 * What the stats need of one entry. The export's streaming reader keeps these (not whole entries)
 * for every entry of a session, so both paths count by the same rules.
 */
export interface StatFacts {
  id: string | undefined;
  parentId: string | null;
  /** A message's role; undefined for other entry types. */
  role?: string;
  /** Entry time in ms, NaN when none parses. */
  time: number;
  tokens: number;
  cost: number;
  toolCalls: number;
  /** "provider/model" of an assistant message. */
  model?: string;
}

export function statFacts(e: SessionEntry): StatFacts {
  const role = roleOf(e);
  const facts: StatFacts = {
    id: typeof e.id === "string" ? e.id : undefined,
    parentId: typeof e.parentId === "string" ? e.parentId : null,
    time: entryTime(e),
    tokens: 0,
    cost: 0,
    toolCalls: 0,
    ...(role ? { role } : {}),
  };
  const counted = countedUsage(e);
  if (counted) {
    facts.tokens = counted.tokens;
    facts.cost = counted.cost;
  }
  if (role === "assistant") {
    const msg = e.message as AssistantMessage;
    const content = msg.content as unknown;
    if (Array.isArray(content)) facts.toolCalls = content.filter((b) => b?.type === "toolCall").length;
    if (msg.provider || msg.model) facts.model = `${msg.provider ?? "?"}/${msg.model ?? "?"}`;
  }
  return facts;
}

export function sessionStats(entries: readonly SessionEntry[]): SessionStats {
  return statsFromFacts(entries.map(statFacts));
}

export function statsFromFacts(list: readonly StatFacts[]): SessionStats {
  const stats: SessionStats = {
    entries: list.length,
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
  const userAbove = new Map<string | undefined, string | undefined>();
  const answeredUsers = new Set<string>();
  let first = Infinity;
  let last = -Infinity;
  for (const f of list) {
    if (!Number.isNaN(f.time)) {
      first = Math.min(first, f.time);
      last = Math.max(last, f.time);
    }
    const inherited = f.parentId ? userAbove.get(f.parentId) : undefined;
    userAbove.set(f.id, f.role === "user" ? f.id : inherited);
    stats.tokens += f.tokens;
    stats.cost += f.cost;
    if (f.role === "user") stats.userMessages++;
    else if (f.role === "toolResult") stats.toolResults++;
    else if (f.role === "assistant") {
      stats.assistantMessages++;
      if (inherited) answeredUsers.add(inherited);
      stats.toolCalls += f.toolCalls;
      if (f.model) models.add(f.model);
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
