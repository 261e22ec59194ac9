// The numbers the catalog keeps per session version. Computed once per distinct file content and
// cached (catalog-cache.ts), so `sessions list` does not re-read unchanged sessions.

import { migrateToV3InMemory, parseSessionFile, sessionName, sessionStats } from "../pi/index.js";
import type { SessionEntry } from "../pi/index.js";
import { messageOf, usageOf } from "./describe.js";
import { stableIdGenerator } from "./read.js";

/** Usage on one UTC day with one model: what `stats` and the dashboard add up. */
export interface UsageCell {
  day: string;
  model: string;
  messages: number;
  tokens: number;
  cost: number;
}

export interface SessionSummary {
  id: string;
  name: string | null;
  /** The header's cwd: the project the session ran in. */
  project: string;
  parentSession: string | null;
  /** Header timestamp (falls back to the first entry's). */
  started: string | null;
  lastActivity: string | null;
  turns: number;
  userMessages: number;
  assistantMessages: number;
  toolCalls: number;
  tokens: number;
  cost: number;
  entries: number;
  models: string[];
  version: number;
  /** Assistant usage per UTC day and model, on every branch. */
  usage: UsageCell[];
  /** User prompts per UTC day, on every branch. */
  promptsByDay: Record<string, number>;
}

const dayOf = (ts: unknown): string | undefined => (typeof ts === "string" && /^\d{4}-\d{2}-\d{2}/.test(ts) ? new Date(ts).toISOString().slice(0, 10) : undefined);

/** Per day and model: a session can span midnight and switch models mid-way. */
export function usageBreakdown(entries: readonly SessionEntry[]): Pick<SessionSummary, "usage" | "promptsByDay"> {
  const cells = new Map<string, UsageCell>();
  const promptsByDay: Record<string, number> = {};
  for (const e of entries) {
    const m = messageOf(e);
    const day = dayOf(e.timestamp);
    if (!m || !day) continue;
    if (m.role === "user") promptsByDay[day] = (promptsByDay[day] ?? 0) + 1;
    const u = usageOf(e);
    if (!u) continue;
    const model = `${typeof m.provider === "string" ? m.provider : "?"}/${typeof m.model === "string" ? m.model : "?"}`;
    const key = `${day}\0${model}`;
    const c = cells.get(key) ?? { day, model, messages: 0, tokens: 0, cost: 0 };
    c.messages++;
    c.tokens += u.tokens;
    c.cost += u.cost;
    cells.set(key, c);
  }
  return { usage: [...cells.values()], promptsByDay };
}

/** Summarise a file path or a byte stream. Only I/O errors reject. */
export async function summarizeSession(source: string | AsyncIterable<Uint8Array>, fallbackId: string): Promise<SessionSummary> {
  const parsed = await parseSessionFile(source);
  const header = parsed.header;
  const id = header?.id ?? (typeof parsed.headerFragment?.id === "string" ? parsed.headerFragment.id : fallbackId);
  const { entries, fromVersion } = migrateToV3InMemory(header, parsed.entries, { generateId: stableIdGenerator(id) });
  const stats = sessionStats(entries);
  const cwd = header?.cwd ?? parsed.headerFragment?.cwd;
  return {
    id,
    name: sessionName(entries) ?? null,
    project: typeof cwd === "string" ? cwd : "",
    parentSession: typeof header?.parentSession === "string" ? header.parentSession : null,
    started: typeof header?.timestamp === "string" ? header.timestamp : stats.firstTimestamp,
    lastActivity: stats.lastTimestamp ?? (typeof header?.timestamp === "string" ? header.timestamp : null),
    turns: stats.turns,
    userMessages: stats.userMessages,
    assistantMessages: stats.assistantMessages,
    toolCalls: stats.toolCalls,
    tokens: stats.tokens,
    cost: stats.cost,
    entries: stats.entries,
    models: stats.models,
    version: fromVersion,
    ...usageBreakdown(entries),
  };
}
