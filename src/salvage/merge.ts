// Several sources for one session become one session: same entries recognised (by id, else by
// message-key.ts), the richest copy kept, ordered as the sources agree and by time where they
// do not, parents re-linked so the result is still a tree pi can load.

import type { SessionEntry } from "../model/session.js";
import { entryKey, entryTime, richness, SAME_MESSAGE_WINDOW_MS } from "./message-key.js";
import type { SalvagedSession } from "./types.js";
import { isNameOnlyCall, isUnrecordedResult } from "./not-recorded.js";

interface Slot {
  entry: SessionEntry;
  /** How much the source of the kept copy is trusted for detail (sourceRank). */
  rank: number;
  /** The session (by index) whose parent link the entry carries. */
  from: number;
  /** Sessions that already matched this slot: one source never supplies the same entry twice. */
  claimed: Set<number>;
}

/**
 * The slot for this key nearest in time, within the window, not yet claimed by this source.
 * A source without real times (a terminal) takes the first unclaimed slot, in order.
 */
function nearest(list: Slot[] | undefined, entry: SessionEntry, si: number, timeless: (s: Slot) => boolean): Slot | undefined {
  const t = entryTime(entry);
  let best: Slot | undefined;
  for (const s of list ?? []) {
    if (s.claimed.has(si)) continue;
    if (timeless(s)) return s;
    const d = Math.abs(entryTime(s.entry) - t);
    if (d <= SAME_MESSAGE_WINDOW_MS && (!best || d < Math.abs(entryTime(best.entry) - t))) best = s;
  }
  return best;
}

/** Between equally rich copies, prefer the source that keeps pi's own fields (exact times). */
function sourceRank(session: SalvagedSession): number {
  const kind = session.sources[0]?.kind;
  return kind === "html" ? 3 : kind === "hermes" ? 1 : 2;
}

/** Group by session id; a session with an invented id joins the group it shares messages with. */
function groupSessions(sessions: SalvagedSession[]): SalvagedSession[][] {
  const groups = new Map<string, SalvagedSession[]>();
  const keyOwner = new Map<string, string>();
  const unknown: SalvagedSession[] = [];
  for (const s of sessions) {
    if (!s.idKnown) {
      unknown.push(s);
      continue;
    }
    const list = groups.get(s.header.id) ?? [];
    list.push(s);
    groups.set(s.header.id, list);
    for (const e of s.entries) if (e.type === "message") keyOwner.set(entryKey(e), s.header.id);
  }
  for (const s of unknown) {
    const counts = new Map<string, number>();
    for (const e of s.entries) {
      const owner = e.type === "message" ? keyOwner.get(entryKey(e)) : undefined;
      if (owner) counts.set(owner, (counts.get(owner) ?? 0) + 1);
    }
    const best = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
    const id = best ?? s.header.id;
    const list = groups.get(id) ?? [];
    list.push(s);
    groups.set(id, list);
  }
  return [...groups.values()];
}

export function mergeSessions(sessions: SalvagedSession[]): SalvagedSession[] {
  return groupSessions(sessions).map((group) => (group.length === 1 ? group[0] : mergeGroup(group)));
}

function mergeGroup(group: SalvagedSession[]): SalvagedSession {
  // The session with the most entries leads: its header and order are the backbone.
  const ordered = [...group].sort((a, b) => Number(b.idKnown) - Number(a.idKnown) || b.entries.length - a.entries.length);
  const ranks = ordered.map(sourceRank);
  const order: Slot[] = [];
  const byKey = new Map<string, Slot[]>();
  const byId = new Map<string, Slot>();
  /** (session index, original id) -> the merged entry's id. */
  const idMap = new Map<string, string>();

  const timesKnown = ordered.map((s) => s.timesKnown !== false);
  ordered.forEach((session, si) => {
    let prev: Slot | undefined;
    /** This source's tool call ids -> the ids of the copies they merged into. */
    const callIds = new Map<string, string>();
    const timeless = (slot: Slot) => !timesKnown[si] || !timesKnown[slot.from];
    for (const original of session.entries) {
      const entry = withCallIds(original, callIds);
      const key = entryKey(entry);
      const byIdSlot = byId.get(entry.id);
      const same = byIdSlot && !byIdSlot.claimed.has(si) ? byIdSlot : nearest(byKey.get(key), entry, si, timeless);
      if (same) {
        same.claimed.add(si);
        mapCallIds(entry, same.entry, callIds);
        const gain = richness(entry) - richness(same.entry);
        if (gain > 0 || (gain === 0 && ranks[si] > same.rank)) {
          same.rank = ranks[si];
          // Content from the richer copy; the parent link stays with the source it was read from.
          // Call ids stay those of the kept copy, which other sources' tool results point to.
          same.entry = { ...renameCalls(entry, callIds), id: same.entry.id, parentId: same.entry.parentId };
        }
        idMap.set(`${si}|${entry.id}`, same.entry.id);
        prev = same;
        continue;
      }
      // A new entry sits right after the entry before it in its own source.
      // Two different entries with one id (ids invented by two sources): give the newcomer another.
      const id = byId.has(entry.id) ? `${entry.id.slice(0, 4)}${String(order.length).padStart(4, "0")}` : entry.id;
      const slot: Slot = { entry: { ...entry, id }, rank: ranks[si], from: si, claimed: new Set([si]) };
      order.splice(insertionPoint(order, prev, entry, si, timesKnown[si]), 0, slot);
      byKey.set(key, [...(byKey.get(key) ?? []), slot]);
      byId.set(id, slot);
      idMap.set(`${si}|${entry.id}`, id);
      prev = slot;
    }
  });

  // Parents: the source's own link, translated to merged ids.
  for (const slot of order) {
    const p = slot.entry.parentId;
    slot.entry.parentId = p === null ? null : (idMap.get(`${slot.from}|${p}`) ?? null);
  }
  const entries = dropOrphanPlaceholders(parentsFirst(order.map((s) => s.entry)));
  relinkLinear(entries);

  const lead = ordered[0];
  const leafSource = ordered.findIndex((s) => s.leafId);
  const leafId = leafSource >= 0 ? idMap.get(`${leafSource}|${ordered[leafSource].leafId}`) : undefined;
  const withCwd = ordered.find((s) => s.cwdKnown);
  return {
    header: withCwd ? { ...lead.header, cwd: withCwd.header.cwd } : lead.header,
    idKnown: ordered.some((s) => s.idKnown),
    cwdKnown: ordered.some((s) => s.cwdKnown),
    entries,
    ...(leafId ? { leafId } : {}),
    sources: ordered.flatMap((s) => s.sources),
    provided: ordered.flatMap((s) => s.provided ?? []),
    gaps: ordered.flatMap((s) => s.gaps),
    ...identityOf(ordered, withCwd),
  };
}

/**
 * Where a new entry goes: right after the entry before it in its own source (that order is
 * certain), then past entries only other sources know that are not later than it. Time decides
 * only between runs no source orders, because message times are not monotone (an assistant
 * message is stamped when streaming starts, after which its tool results get later stamps).
 */
function insertionPoint(order: Slot[], prev: Slot | undefined, entry: SessionEntry, si: number, timeKnown: boolean): number {
  let at = prev ? order.indexOf(prev) + 1 : 0;
  if (!timeKnown) return at; // made-up times order nothing
  const t = entryTime(entry);
  while (at < order.length && !order[at].claimed.has(si) && entryTime(order[at].entry) < t) at++; // a tie (same ms) keeps the source order
  return at;
}

/** Time order can put a child before its parent when clocks disagree; hold such entries back. */
function parentsFirst(entries: SessionEntry[]): SessionEntry[] {
  const present = new Set(entries.map((e) => e.id));
  const emitted = new Set<string>();
  const waiting = new Map<string, SessionEntry[]>();
  const out: SessionEntry[] = [];
  const emit = (e: SessionEntry) => {
    out.push(e);
    emitted.add(e.id);
    const kids = waiting.get(e.id) ?? [];
    waiting.delete(e.id);
    kids.forEach(emit);
  };
  for (const e of entries) {
    if (e.parentId !== null && present.has(e.parentId) && !emitted.has(e.parentId)) {
      const list = waiting.get(e.parentId) ?? [];
      list.push(e);
      waiting.set(e.parentId, list);
    } else emit(e);
  }
  for (const list of waiting.values()) list.forEach((e) => !emitted.has(e.id) && emit(e));
  return out;
}

/**
 * Entries whose parent did not survive (a linear source whose predecessor was deduped away,
 * or a source with no parent links) hang under the entry before them instead of becoming roots.
 */
function relinkLinear(entries: SessionEntry[]): void {
  entries.forEach((e, i) => {
    if (i > 0 && e.parentId === null) e.parentId = entries[i - 1].id;
  });
}

type CallBlock = { type?: string; id?: string; name?: string };
const callsOf = (e: SessionEntry): CallBlock[] => {
  const c = e.type === "message" ? (e.message as { content?: unknown }).content : undefined;
  return Array.isArray(c) ? (c as CallBlock[]).filter((b) => b?.type === "toolCall" && typeof b.id === "string") : [];
};

/**
 * When an assistant message matched another source's copy, its tool calls are those calls: a
 * source that had to invent call ids (a terminal) then finds its tool results under the ids the
 * kept copy uses, so they dedupe against that source's results instead of doubling them.
 */
function mapCallIds(entry: SessionEntry, kept: SessionEntry, callIds: Map<string, string>): void {
  const mine = callsOf(entry);
  const theirs = callsOf(kept);
  mine.forEach((b, i) => {
    const other = theirs[i];
    // A call known by name only takes the real call's id instead (see dropOrphanPlaceholders).
    if (other && other.name === b.name && other.id !== b.id && !(isNameOnlyCall(other) && !isNameOnlyCall(b))) callIds.set(b.id!, other.id!);
  });
}

function withCallIds(entry: SessionEntry, callIds: Map<string, string>): SessionEntry {
  if (callIds.size === 0 || entry.type !== "message") return entry;
  const m = entry.message as { role?: string; toolCallId?: string };
  const id = m.role === "toolResult" && m.toolCallId ? callIds.get(m.toolCallId) : undefined;
  return id ? ({ ...entry, message: { ...entry.message, toolCallId: id } } as SessionEntry) : entry;
}

function renameCalls(entry: SessionEntry, callIds: Map<string, string>): SessionEntry {
  if (callIds.size === 0 || callsOf(entry).length === 0) return entry;
  const m = entry.message as { content: CallBlock[] };
  const content = m.content.map((b) => (b?.type === "toolCall" && b.id && callIds.has(b.id) ? { ...b, id: callIds.get(b.id) } : b));
  return { ...entry, message: { ...(entry.message as object), content } } as SessionEntry;
}

/**
 * A "not recorded" result whose call was replaced by another source's real call (with its own id
 * and real result) answers nothing any more: drop it, and hang what followed it on its parent.
 */
function dropOrphanPlaceholders(entries: SessionEntry[]): SessionEntry[] {
  const calls = new Set(entries.flatMap((e) => callsOf(e).map((b) => b.id!)));
  const dropped = new Map<string, string | null>();
  const kept = entries.filter((e) => {
    const m = e.type === "message" ? (e.message as { toolCallId?: string }) : undefined;
    if (!m || !isUnrecordedResult(m) || calls.has(String(m.toolCallId))) return true;
    dropped.set(e.id, e.parentId);
    return false;
  });
  if (dropped.size === 0) return entries;
  for (const e of kept) {
    let p = e.parentId;
    while (p !== null && dropped.has(p)) p = dropped.get(p)!;
    e.parentId = p;
  }
  return kept;
}

/** The log lines that named the merged session: the first that named its id, the first that named the cwd it got. */
function identityOf(ordered: SalvagedSession[], withCwd: SalvagedSession | undefined): Pick<SalvagedSession, "identity"> {
  const sessionId = ordered.find((s) => s.identity?.sessionId)?.identity?.sessionId ?? null;
  const value = withCwd?.header.cwd;
  const cwd = ordered.find((s) => s.identity?.cwd && s.identity.cwd.value === value)?.identity?.cwd ?? null;
  return sessionId || cwd ? { identity: { sessionId, cwd } } : {};
}
