// The numbers the catalog keeps per session version. Computed once per distinct file content and
// cached (catalog-cache.ts), so `sessions list` does not re-read unchanged sessions.

import { createHash } from "node:crypto";
import { fileSessionItemsSync, migrateToV3InMemory, streamSessionItems, type SessionItem } from "../agents/pi/parse.js";
import { sessionName } from "../model/tree.js";
import { countedUsage, sessionStats, type CountedUsage, type TokenCounts } from "../model/stats.js";
import type { RawSessionEntry, SessionEntry, SessionHeader } from "../model/session.js";
import { parseSessionFileName } from "../agents/pi/writer.js";
import { messageOf } from "./describe.js";
import { stableIdGenerator } from "./read.js";

export type { TokenCounts };

/**
 * Usage in one 15-minute UTC slot with one model: what `stats` and the dashboard add up. Slots,
 * not days, so that `stats --tz` can cut days at any zone's midnight: every zone's offset from
 * UTC has been a whole number of quarter hours since 1972.
 */
export interface UsageCell extends TokenCounts {
  /** Start of the slot, "YYYY-MM-DDTHH:MMZ" (UTC, minutes 00, 15, 30 or 45). */
  slot: string;
  model: string;
  messages: number;
}

/**
 * One entry this file holds that is older than its header: a copy from another session (a fork
 * copies its parent's entries, a merge both sessions'), or a very old file's first lines. `stats`
 * counts it here only when no older session it names as an origin holds it (see stats.ts).
 */
export interface CopiedUse {
  /** entryKey() of the entry. */
  k: string;
  slot: string;
  /** Usage pi counts (an assistant message, a usage entry, a summary): its model and counts. */
  model?: string;
  use?: TokenCounts;
  /** 0 when the usage is not an assistant message's; absent means 1. */
  messages?: 0;
  /** A user prompt that got an answer in this file. */
  turn?: 1;
}

export interface UsageBreakdown {
  /** Usage pi counts in a session's totals (countedUsage), per slot and model, on every branch, entries not copied from elsewhere. */
  usage: UsageCell[];
  /** Answered user prompts per slot, on every branch, entries not copied from elsewhere. */
  turnsBySlot: Record<string, number>;
  copied: CopiedUse[];
  /** Ids of the sessions the copies came from: the header's parentSession (branchedFrom in v1), a merge's sources. */
  origins: string[];
}

const SLOT_MS = 15 * 60_000;

/** The last slot named, by its number: a session's entries mostly fall in the slot of the one before. */
let lastSlot = { n: NaN, name: "" };

/** The UsageCell slot an ISO time falls in. */
export function slotOf(ts: unknown): string | undefined {
  if (typeof ts !== "string" || !/^\d{4}-\d{2}-\d{2}/.test(ts)) return undefined;
  const t = Date.parse(ts);
  if (!Number.isFinite(t)) return undefined;
  const n = Math.floor(t / SLOT_MS);
  if (n !== lastSlot.n) lastSlot = { n, name: `${new Date(n * SLOT_MS).toISOString().slice(0, 16)}Z` };
  return lastSlot.name;
}

/**
 * An entry's identity across files: a fork or merge copies an entry with every field, so all but
 * its place in the tree (id, parentId: a version 1 file gets its ids only when read) name it.
 */
export function entryKey(e: SessionEntry): string {
  const precomputed = (e as { [KEY]?: string })[KEY];
  if (precomputed !== undefined) return precomputed;
  const { id: _id, parentId: _parent, ...rest } = e;
  return createHash("sha256").update(JSON.stringify(rest)).digest("hex").slice(0, 16);
}

/** The entryKey of the full entry, carried by its slim copy (a symbol: never serialized). */
const KEY = Symbol("entryKey");

/**
 * What summarizeSession keeps of an entry: everything the numbers above read (ids, time, role,
 * model, usage, the number of tool calls, names, merge markers), not the text. A 200 MB session
 * is mostly text, so the summary of one must not hold it. Message entries older than the header
 * are copies that stats identifies by entryKey, so theirs is taken from the full entry first.
 */
function slimEntry(e: RawSessionEntry, headerTime: number): RawSessionEntry {
  const { message, summary: _s, content: _c, details: _d, data, ...rest } = e;
  const out = rest as RawSessionEntry;
  // Any entry may be a copy: usage, compaction and branch_summary entries carry usage too.
  if (Date.parse(String(e.timestamp ?? "")) <= headerTime) (out as { [KEY]?: string })[KEY] = entryKey(e as unknown as SessionEntry);
  if (e.type === "custom" && e.customType === MERGE_MARKER) out.data = data;
  if (message && typeof message === "object") {
    const m = message as Record<string, unknown>;
    const content = Array.isArray(m.content) ? m.content.filter((b) => b?.type === "toolCall").map(() => ({ type: "toolCall" })) : [];
    out.message = { role: m.role, provider: m.provider, model: m.model, usage: m.usage, timestamp: m.timestamp, content };
  } else if (message !== undefined) out.message = message;
  return out;
}

/** Marks a merged session (sessions merge) with the ids of its sources, for stats. */
export const MERGE_MARKER = "pi-guard.merge";

function originsOf(header: SessionHeader | undefined, entries: readonly SessionEntry[]): string[] {
  const out = new Set<string>();
  for (const field of [header?.parentSession, (header as { branchedFrom?: unknown } | undefined)?.branchedFrom]) {
    const id = typeof field === "string" ? parseSessionFileName(field.split(/[\\/]/).pop() ?? "")?.id : undefined;
    if (id) out.add(id);
  }
  for (const e of entries) {
    const from = e.type === "custom" && e.customType === MERGE_MARKER ? (e.data as { from?: unknown } | undefined)?.from : undefined;
    if (Array.isArray(from)) for (const id of from) if (typeof id === "string") out.add(id);
  }
  return [...out];
}

function tokenCounts(c: CountedUsage): TokenCounts {
  return { input: c.input, output: c.output, cacheRead: c.cacheRead, cacheWrite: c.cacheWrite, tokens: c.tokens, cost: c.cost };
}

export function addCounts(to: TokenCounts, from: TokenCounts): void {
  to.input += from.input;
  to.output += from.output;
  to.cacheRead += from.cacheRead;
  to.cacheWrite += from.cacheWrite;
  to.tokens += from.tokens;
  to.cost += from.cost;
}

export const zeroCounts = (): TokenCounts => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, tokens: 0, cost: 0 });

/**
 * Per slot and model: a session can span midnight and switch models mid-way. An entry older than
 * the header cannot have been written into this file by pi (pi stamps the header when it creates
 * the session), so it is kept apart as a possible copy, keyed by its identity. One stamped in the
 * header's own millisecond may be either (a fork made right after its parent's last entry, or the
 * session's own first entry): it is kept apart too, and attributeCopies counts it here unless an
 * origin holds it.
 */
export function usageBreakdown(header: SessionHeader | undefined, entries: readonly SessionEntry[]): UsageBreakdown {
  const cells = new Map<string, UsageCell>();
  const turnsBySlot: Record<string, number> = {};
  const copied: CopiedUse[] = [];
  const headerTime = Date.parse(String(header?.timestamp ?? ""));
  const isCopy = (e: SessionEntry) => Date.parse(String(e.timestamp ?? "")) <= headerTime;
  // A turn is a user prompt answered by an assistant message below it (as sessionStats counts).
  const userAbove = new Map<string, string | undefined>();
  const answered = new Set<string>();
  for (const e of entries) {
    const role = messageOf(e)?.role;
    const inherited = e.parentId ? userAbove.get(e.parentId) : undefined;
    userAbove.set(e.id, role === "user" ? e.id : inherited);
    if (role === "assistant" && inherited) answered.add(inherited);
  }
  for (const e of entries) {
    const slot = slotOf(e.timestamp);
    if (!slot) continue;
    const turn = messageOf(e)?.role === "user" && answered.has(e.id);
    const counted = countedUsage(e);
    if (!turn && !counted) continue;
    if (isCopy(e)) {
      copied.push(counted ? { k: entryKey(e), slot, model: counted.model, use: tokenCounts(counted), ...(counted.assistant ? {} : { messages: 0 as const }) } : { k: entryKey(e), slot, turn: 1 });
      continue;
    }
    if (turn) turnsBySlot[slot] = (turnsBySlot[slot] ?? 0) + 1;
    if (!counted) continue;
    const use = tokenCounts(counted);
    const key = `${slot}\0${counted.model}`;
    const c = cells.get(key) ?? { slot, model: counted.model, messages: 0, ...zeroCounts() };
    if (counted.assistant) c.messages++;
    addCounts(c, use);
    cells.set(key, c);
  }
  return { usage: [...cells.values()], turnsBySlot, copied, origins: originsOf(header, entries) };
}

export interface SessionFacts {
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

export type SessionSummary = SessionFacts & UsageBreakdown;

/** Summarise a file path or a byte stream. Only I/O errors reject. */
export async function summarizeSession(source: string | AsyncIterable<Uint8Array>, fallbackId: string): Promise<SessionSummary> {
  if (typeof source === "string") return summarizeFile(source, fallbackId);
  const parsed = new SlimParse();
  for await (const item of streamSessionItems(source)) parsed.add(item);
  return parsed.summary(fallbackId);
}

/**
 * Summarise a session file, read synchronously: what a parse worker runs, and the main thread
 * for a few files. Only I/O errors throw.
 */
export function summarizeFile(file: string, fallbackId: string): SessionSummary {
  const parsed = new SlimParse();
  for (const item of fileSessionItemsSync(file)) parsed.add(item);
  return parsed.summary(fallbackId);
}

/** The header and slim entries of a session, item by item. */
class SlimParse {
  private header: SessionHeader | null = null;
  private headerFragment?: Record<string, unknown>;
  private headerTime = NaN;
  private readonly entries: RawSessionEntry[] = [];

  add(item: SessionItem): void {
    if (item.kind === "header") {
      this.header = item.header;
      this.headerTime = Date.parse(String(item.header.timestamp ?? ""));
    } else if (item.kind === "header-fragment") this.headerFragment = item.fields;
    else if (item.kind === "entry") this.entries.push(slimEntry(item.entry, this.headerTime));
  }

  summary(fallbackId: string): SessionSummary {
    const header = this.header;
    const id = header?.id ?? (typeof this.headerFragment?.id === "string" ? this.headerFragment.id : fallbackId);
    const { entries, fromVersion } = migrateToV3InMemory(header, this.entries, { generateId: stableIdGenerator(id) });
    const stats = sessionStats(entries);
    const cwd = header?.cwd ?? this.headerFragment?.cwd;
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
      ...usageBreakdown(header ?? undefined, entries),
    };
  }
}
