// `sessions merge A B`: one new session holding the messages of both, in time order, as one
// straight chain pi can load. Each source contributes the messages on its current branch (what pi
// shows for it). Only message entries are taken: compactions and branch summaries point at entry
// ids of their own file and would mean nothing in the merged one.

import { randomUUID } from "node:crypto";
import type { SessionEntry, SessionHeader } from "../pi/index.js";
import { sessionView } from "./view.js";
import type { LoadedSession } from "./read.js";
import { roleOf } from "./describe.js";

export interface MergeSource {
  id: string;
  name: string | null;
  session: LoadedSession;
}

export interface MergedSession {
  header: SessionHeader;
  entries: SessionEntry[];
}

interface Keyed {
  entry: SessionEntry;
  key: number;
  source: number;
  index: number;
}

function timeOf(e: SessionEntry): number {
  const t = Date.parse(String(e.timestamp ?? ""));
  return Number.isFinite(t) ? t : 0;
}

/**
 * Sorting by time could put a message of B between A's tool call and its result, which providers
 * reject; a tool result therefore sorts with the message before it.
 */
function keyedMessages(path: readonly SessionEntry[], source: number): Keyed[] {
  const out: Keyed[] = [];
  let last = 0;
  for (const [index, entry] of path.entries()) {
    if (entry.type !== "message") continue;
    const key = roleOf(entry) === "toolResult" && out.length ? last : timeOf(entry);
    last = key;
    out.push({ entry, key, source, index });
  }
  return out;
}

export function mergeSessions(a: MergeSource, b: MergeSource, now = new Date()): MergedSession {
  const all = [a, b].flatMap((s, i) => keyedMessages(sessionView(s.session).path, i));
  all.sort((x, y) => x.key - y.key || x.source - y.source || x.index - y.index);
  const header: SessionHeader = { type: "session", version: 3, id: randomUUID(), timestamp: now.toISOString(), cwd: a.session.header.cwd };
  const taken = new Set<string>();
  const freshId = (want: string): string => {
    let id = want;
    while (taken.has(id)) id = randomUUID().slice(0, 8); // the two files may share an 8-hex id
    taken.add(id);
    return id;
  };
  const entries: SessionEntry[] = [];
  let parentId: string | null = null;
  for (const { entry } of all) {
    const copy = { ...entry, id: freshId(entry.id), parentId } as SessionEntry;
    entries.push(copy);
    parentId = copy.id;
  }
  const label = (s: MergeSource) => s.name ?? s.id.slice(0, 8);
  const last = entries.length ? entries[entries.length - 1].timestamp : header.timestamp;
  entries.push({ type: "session_info", id: freshId(randomUUID().slice(0, 8)), parentId, timestamp: last, name: `merge of ${label(a)} + ${label(b)}` } as SessionEntry);
  return { header, entries };
}
