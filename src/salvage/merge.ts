// Several sources for one session become one session: same entries recognised (by id, else by
// message-key.ts), the richest copy kept, everything ordered by time, parents re-linked so the
// result is still a tree pi can load.

import type { SessionEntry } from "../pi/index.js";
import { entryKey, entryTime, richness } from "./message-key.js";
import type { SalvagedSession } from "./types.js";

interface Slot {
  entry: SessionEntry;
  /** Position in the anchor-merged order: ties in time keep the order the sources agree on. */
  rank: number;
  /** The session (by index) whose copy of the entry won. */
  from: number;
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
  const order: Slot[] = [];
  const byKey = new Map<string, Slot>();
  const byId = new Map<string, Slot>();
  /** (session index, original id) -> the merged entry's id. */
  const idMap = new Map<string, string>();

  ordered.forEach((session, si) => {
    let prev: Slot | undefined;
    for (const entry of session.entries) {
      const key = entryKey(entry);
      const same = byId.get(entry.id) ?? byKey.get(key);
      if (same) {
        if (richness(entry) > richness(same.entry)) {
          same.entry = { ...entry, id: same.entry.id, parentId: same.entry.parentId };
          same.from = si;
        }
        idMap.set(`${si}|${entry.id}`, same.entry.id);
        prev = same;
        continue;
      }
      // A new entry sits right after the entry before it in its own source.
      const slot: Slot = { entry: { ...entry }, rank: 0, from: si };
      if (prev) order.splice(order.indexOf(prev) + 1, 0, slot);
      else order.push(slot);
      byKey.set(key, slot);
      byId.set(entry.id, slot);
      idMap.set(`${si}|${entry.id}`, entry.id);
      prev = slot;
    }
  });

  order.forEach((slot, i) => (slot.rank = i));
  // Parents: the source's own link, translated to merged ids.
  for (const slot of order) {
    const p = slot.entry.parentId;
    slot.entry.parentId = p === null ? null : (idMap.get(`${slot.from}|${p}`) ?? null);
  }
  const sorted = [...order].sort((a, b) => entryTime(a.entry) - entryTime(b.entry) || a.rank - b.rank);
  const entries = parentsFirst(sorted.map((s) => s.entry));
  relinkLinear(entries);

  const lead = ordered[0];
  const leafSource = ordered.findIndex((s) => s.leafId);
  const leafId = leafSource >= 0 ? idMap.get(`${leafSource}|${ordered[leafSource].leafId}`) : undefined;
  return {
    header: lead.header,
    idKnown: ordered.some((s) => s.idKnown),
    cwdKnown: ordered.some((s) => s.cwdKnown),
    entries,
    ...(leafId ? { leafId } : {}),
    sources: ordered.flatMap((s) => s.sources),
    provided: ordered.flatMap((s) => s.provided ?? []),
    gaps: ordered.flatMap((s) => s.gaps),
  };
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
