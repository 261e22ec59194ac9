// The numbers the catalog keeps per session version. Computed once per distinct file content and
// cached (catalog-cache.ts), so `sessions list` does not re-read unchanged sessions.

import { migrateToV3InMemory, parseSessionFile, sessionName, sessionStats } from "../pi/index.js";
import { stableIdGenerator } from "./read.js";

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
  };
}
