// `sessions merge A B`: one new session holding the messages of both, that pi can load. Each source
// contributes the messages on its current branch (what pi shows for it). Only message entries are
// taken: compactions and branch summaries point at entry ids of their own file and would mean
// nothing in the merged one.
//
// A fork copies its parent's entries with their ids and bytes (pi's /fork, `pi --fork`), so the
// two branches may share messages. A shared message (same entryKey: the same content wherever it
// sits in the tree; a version 1 file's ids are only made up on reading) is written once. Sessions
// that start with the same messages (a fork and its parent) are joined at the fork point: the
// shared start once, then each session's continuation as its own branch of the tree. Sessions
// with nothing in common are interleaved by time as one straight chain.

import { randomUUID } from "node:crypto";
import type { SessionEntry, SessionHeader } from "../model/session.js";
import { sessionView } from "./view.js";
import type { LoadedSession } from "./read.js";
import { roleOf } from "./describe.js";
import { entryKey, MERGE_MARKER } from "./summary.js";

export interface MergeSource {
  id: string;
  /** The id as the catalog shows it (src/sessions/short-id.ts); the full id when not given. */
  shortId?: string;
  name: string | null;
  session: LoadedSession;
}

export interface MergedSession {
  header: SessionHeader;
  entries: SessionEntry[];
  /** Messages both sessions hold (the same entryKey), written once. */
  shared: number;
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
function keyedMessages(messages: readonly SessionEntry[], source: number): Keyed[] {
  const out: Keyed[] = [];
  let last = 0;
  for (const [index, entry] of messages.entries()) {
    const key = roleOf(entry) === "toolResult" && out.length ? last : timeOf(entry);
    last = key;
    out.push({ entry, key, source, index });
  }
  return out;
}

function byTime(a: readonly SessionEntry[], b: readonly SessionEntry[]): SessionEntry[] {
  const all = [...keyedMessages(a, 0), ...keyedMessages(b, 1)];
  all.sort((x, y) => x.key - y.key || x.source - y.source || x.index - y.index);
  return all.map((k) => k.entry);
}

const lastTime = (path: readonly SessionEntry[]) => (path.length ? timeOf(path[path.length - 1]) : -Infinity);

export function mergeSessions(a: MergeSource, b: MergeSource, now = new Date()): MergedSession {
  const messagesOf = (s: MergeSource) => sessionView(s.session).path.filter((e) => e.type === "message");
  const [ma, mb] = [messagesOf(a), messagesOf(b)];
  const [ka, kb] = [ma.map(entryKey), mb.map(entryKey)];
  let common = 0;
  while (common < ma.length && common < mb.length && ka[common] === kb[common]) common++;
  // Anything else the two share (a message reached on both sides after they parted) is kept once.
  const inA = new Set(ka);
  const restB = mb.slice(common).filter((_, i) => !inA.has(kb[common + i]));
  const restA = ma.slice(common);
  const shared = mb.length - restB.length;

  const header: SessionHeader = { type: "session", version: 3, id: randomUUID(), timestamp: now.toISOString(), cwd: a.session.header.cwd };
  const taken = new Set<string>();
  const freshId = (want: string): string => {
    let id = want;
    while (taken.has(id)) id = randomUUID().slice(0, 8); // the two files may share an 8-hex id
    taken.add(id);
    return id;
  };
  const entries: SessionEntry[] = [];
  const chain = (messages: readonly SessionEntry[], from: string | null): string | null => {
    let parentId = from;
    for (const entry of messages) {
      const copy = { ...entry, id: freshId(entry.id), parentId } as SessionEntry;
      entries.push(copy);
      parentId = copy.id;
    }
    return parentId;
  };

  let leaf: string | null;
  if (common === 0) {
    leaf = chain(byTime(restA, restB), null);
  } else {
    const forkPoint = chain(ma.slice(0, common), null);
    // The newer continuation goes last: pi continues from the last line, and so does the reader.
    const [older, newer] = lastTime(restB) < lastTime(restA) ? [restB, restA] : [restA, restB];
    const olderLeaf = chain(older, forkPoint);
    leaf = newer.length ? chain(newer, forkPoint) : olderLeaf;
  }
  // Two sessions of one name (or none) are told apart by their ids, which UUIDv7 makes share
  // their first 8 digits when started in the same minute: the catalog's short ids differ.
  const idOf = (s: MergeSource) => s.shortId ?? s.id;
  const sameName = a.name !== null && a.name === b.name;
  const label = (s: MergeSource) => (s.name === null ? idOf(s) : sameName ? `${s.name} (${idOf(s)})` : s.name);
  const last = entries.length ? entries[entries.length - 1].timestamp : header.timestamp;
  // Names the sources for `stats`, which counts the copied messages in them, not here again. pi
  // keeps custom entries out of the model's context.
  const marker = { type: "custom", id: freshId(randomUUID().slice(0, 8)), parentId: leaf, timestamp: header.timestamp, customType: MERGE_MARKER, data: { from: [a.id, b.id] } } as SessionEntry;
  entries.push(marker);
  entries.push({ type: "session_info", id: freshId(randomUUID().slice(0, 8)), parentId: marker.id, timestamp: last, name: `merge of ${label(a)} + ${label(b)}` } as SessionEntry);
  return { header, entries, shared };
}
