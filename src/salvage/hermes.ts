// `--from-hermes DB`: sessions from a pi-hermes-memory sessions.db or a hermes-agent state.db.
// Rows are streamed with iterate(), one session (or parent chain) at a time.

import { resolve } from "node:path";
import type { SessionEntry, SessionHeader } from "../model/session.js";
import { RepoError } from "../repo/errors.js";
import { openHermes, sqliteError, type OpenedHermes } from "./hermes-db.js";
import { agentRow, emptyStats, type MapStats, memoryRow, statCounts, statGaps, toMs } from "./hermes-map.js";
import { unrecordedResult } from "./not-recorded.js";
import { EntryIds } from "./ids.js";
import { messageText } from "./message-key.js";
import type { SalvagedSession, SalvageSource, SourceResult } from "./types.js";

export interface HermesSelection {
  sessions?: string[];
  /** pi-hermes-memory records each session's cwd; state.db does not (there it only fills in). */
  cwd?: string;
  /** Milliseconds: sessions started at or after this. */
  since?: number;
  all?: boolean;
}

interface Candidate {
  id: string;
  members: string[];
  started: number | undefined;
  cwd: string;
  model?: string;
}

function choose(file: string, all: Candidate[], sel: HermesSelection, cwdKnown: boolean): Candidate[] {
  let chosen = all;
  if (sel.sessions?.length) {
    chosen = chosen.filter((c) => c.members.some((m) => sel.sessions!.includes(m)));
    const missing = sel.sessions.filter((id) => !all.some((c) => c.members.includes(id)));
    if (missing.length) throw new RepoError(`${file} holds no session ${missing.join(", ")}`, "not-found");
  }
  if (sel.cwd && cwdKnown) chosen = chosen.filter((c) => c.cwd === resolve(sel.cwd!));
  if (sel.since !== undefined) chosen = chosen.filter((c) => (c.started ?? 0) >= sel.since!);
  const filtered = !!(sel.sessions?.length || (sel.cwd && cwdKnown) || sel.since !== undefined);
  if (!filtered && !sel.all && all.length > 1) {
    throw new RepoError(`${file} holds ${all.length} sessions: choose with --session ID, --cwd PATH, --since TIME, or take them all with --all`, "usage");
  }
  return chosen;
}

/** A recovered message and, where the database kept them, pi's entry id and entry time. */
interface Row {
  message: Record<string, unknown>;
  entryId?: string;
  entryTime?: string;
}

function toSession(file: string, c: Candidate, rows: Row[], gaps: string[], cwdKnown: boolean): SalvagedSession {
  const messages = rows.map((r) => r.message);
  const firstTime = messages.map((m) => m.timestamp).find((t): t is number => typeof t === "number");
  const header: SessionHeader = {
    type: "session",
    version: 3,
    id: c.id,
    timestamp: new Date(c.started ?? firstTime ?? 0).toISOString(),
    cwd: cwdKnown ? c.cwd : "",
  };
  // Keep pi's own entry ids where the database has them (so they match other copies of the
  // session); rows without one, or with a clashing one, get a derived id.
  const kept = new Set<string>();
  for (const r of rows) if (r.entryId && /^[0-9a-f]{8}$/.test(r.entryId) && !kept.has(r.entryId)) kept.add(r.entryId);
  const ids = new EntryIds(kept);
  const used = new Set<string>();
  let parentId: string | null = null;
  const entries: SessionEntry[] = rows.map(({ message, entryId, entryTime }) => {
    const t = typeof message.timestamp === "number" ? message.timestamp : 0;
    const own = entryId && kept.has(entryId) && !used.has(entryId) ? entryId : undefined;
    const id = own ?? ids.make(`${c.id}|${message.role}|${t}|${String(message.toolCallId ?? "")}|${messageText(message).slice(0, 400)}`);
    used.add(id);
    const timestamp = entryTime && Number.isFinite(Date.parse(entryTime)) ? entryTime : new Date(t).toISOString();
    const entry = { type: "message", id, parentId, timestamp, message } as SessionEntry;
    parentId = id;
    return entry;
  });
  return { header, idKnown: true, cwdKnown: cwdKnown && c.cwd !== "", entries, sources: [{ kind: "hermes", path: file }], gaps };
}

function* readMemory(h: OpenedHermes, file: string, sel: HermesSelection): Generator<SalvagedSession> {
  const candidates: Candidate[] = h.db
    .prepare("SELECT id, cwd, started_at FROM sessions ORDER BY started_at, rowid")
    .all()
    .map((r) => ({ id: String(r.id), members: [String(r.id)], started: toMs(r.started_at), cwd: typeof r.cwd === "string" ? r.cwd : "" }));
  const rows = h.db.prepare("SELECT id, role, content, timestamp, tool_calls FROM messages WHERE session_id = ? ORDER BY rowid");
  for (const c of choose(file, candidates, sel, true)) {
    const stats = emptyStats();
    const messages: Row[] = [];
    let last = c.started ?? 0;
    let n = 0;
    for (const row of rows.iterate(c.id)) {
      // Call ids from the row's place in the session: unique, and the same on every run.
      const at = n++;
      const [m, ...results] = memoryRow(row, last, stats, (i) => `hermes_${at}_${i}`);
      if (!m) continue;
      last = m.timestamp as number;
      const entryTime = typeof row.timestamp === "string" ? row.timestamp : undefined;
      messages.push({ message: m, entryId: typeof row.id === "string" ? row.id : undefined, entryTime });
      for (const r of results) messages.push({ message: r, entryTime });
    }
    const gaps = [
      "pi-hermes-memory keeps no tool results, tool arguments, thinking, parent links, usage or model: text and tool names only, in one linear chain",
      "message times are the entries' write times (pi's own message times are not stored)",
      ...statGaps(stats),
    ];
    yield { ...toSession(file, c, messages, gaps, true), notKept: statCounts(stats) };
  }
}

function* readAgent(h: OpenedHermes, file: string, sel: HermesSelection): Generator<SalvagedSession> {
  const rows = h.db.prepare("SELECT id, model, started_at, parent_session_id FROM sessions").all();
  const parent = new Map(rows.map((r) => [String(r.id), r.parent_session_id == null ? null : String(r.parent_session_id)]));
  const rootOf = (id: string) => {
    const seen = new Set<string>();
    let cur = id;
    // A chain that loops or names a missing parent ends where it breaks.
    while (parent.get(cur) && parent.has(parent.get(cur)!) && !seen.has(cur)) {
      seen.add(cur);
      cur = parent.get(cur)!;
    }
    return cur;
  };
  const groups = new Map<string, Candidate>();
  for (const r of rows) {
    const root = rootOf(String(r.id));
    const g = groups.get(root) ?? { id: root, members: [], started: undefined, cwd: sel.cwd ? resolve(sel.cwd) : "", model: undefined };
    g.members.push(String(r.id));
    if (String(r.id) === root) {
      g.started = toMs(r.started_at);
      g.model = typeof r.model === "string" ? r.model : undefined;
    }
    groups.set(root, g);
  }
  for (const c of choose(file, [...groups.values()], sel, false)) {
    const stats = emptyStats();
    const names = new Map<string, string>();
    const messages: Row[] = [];
    const q = h.db.prepare(
      `SELECT role, content, tool_call_id, tool_calls, tool_name, timestamp FROM messages WHERE session_id IN (${c.members.map(() => "?").join(",")}) ORDER BY id`,
    );
    for (const row of q.iterate(...c.members)) {
      const m = agentRow(row, c.model, names, stats);
      if (m) messages.push({ message: m });
    }
    answerEveryCall(messages, stats);
    const gaps = ["hermes-agent keeps no usage, provider, thinking or entry ids; tool results are text only"];
    if (!c.cwd) gaps.push("hermes-agent records no project dir (cwd)");
    if (c.members.length > 1) gaps.push(`${c.members.length} hermes sessions (a parent_session_id chain) joined into one`);
    gaps.push(...statGaps(stats));
    yield { ...toSession(file, c, messages, gaps, c.cwd !== ""), notKept: statCounts(stats) };
  }
}

/**
 * A state.db call whose `tool` row never came (a crash, an interrupted turn) gets a result marked
 * as not recorded, placed after the results that did come, so pi's context stays valid.
 */
function answerEveryCall(rows: Row[], stats: MapStats): void {
  for (let i = 0; i < rows.length; i++) {
    const m = rows[i].message;
    if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
    const calls = (m.content as { type?: string; id?: string; name?: string }[]).filter((b) => b?.type === "toolCall");
    if (calls.length === 0) continue;
    let end = i + 1;
    const answered = new Set<string>();
    for (; end < rows.length && rows[end].message.role === "toolResult"; end++) answered.add(String(rows[end].message.toolCallId));
    const missing = calls.filter((c) => !answered.has(String(c.id)));
    stats.unansweredCalls += missing.length;
    const t = typeof m.timestamp === "number" ? m.timestamp : 0;
    rows.splice(end, 0, ...missing.map((c) => ({ message: unrecordedResult(String(c.id), String(c.name), t, "hermes-agent") })));
    i = end + missing.length - 1;
  }
}

export interface HermesStream {
  source: SalvageSource;
  /** One session (or state.db chain) at a time, so a 1.6 GB database is never held whole. */
  sessions: Generator<SalvagedSession>;
  /** Complete once `sessions` is exhausted. */
  notes: string[];
  close(): Promise<void>;
}

export async function streamHermes(file: string, sel: HermesSelection = {}): Promise<HermesStream> {
  const h = await openHermes(file);
  const notes = [`schema: ${h.schema}${h.copied ? " (WAL-mode or live database: read from a private copy)" : ""}`];
  // Generators run on the first next(): a bad selection or a corrupt page surfaces there.
  const inner = h.schema === "pi-hermes-memory" ? readMemory(h, file, sel) : readAgent(h, file, sel);
  function* sessions(): Generator<SalvagedSession> {
    let empty = 0;
    try {
      for (const s of inner) {
        if (s.entries.length > 0) yield s;
        else empty++;
      }
    } catch (err) {
      throw sqliteError(file, err);
    }
    if (empty) notes.push(`${empty} selected session(s) hold no messages`);
  }
  return { source: { kind: "hermes", path: file }, sessions: sessions(), notes, close: () => h.close() };
}

/** All selected sessions at once; for small databases and tests. */
export async function salvageHermes(file: string, sel: HermesSelection = {}): Promise<SourceResult> {
  const stream = await streamHermes(file, sel);
  try {
    const sessions = [...stream.sessions];
    return { source: stream.source, sessions, notes: stream.notes };
  } finally {
    await stream.close();
  }
}
