// The fidelity report: what came back, from where, and what each source could not give.

import type { SessionEntry } from "../model/session.js";
import { type Counts, sessionFacts } from "./facts.js";
import type { SalvagedSession, SessionIdentity, SourceResult } from "./types.js";

export function countRoles(entries: readonly SessionEntry[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of entries) {
    if (e.type !== "message") continue;
    const role = String((e.message as { role?: unknown }).role ?? "unknown");
    out[role] = (out[role] ?? 0) + 1;
  }
  return out;
}

export interface SessionReport {
  id: string;
  cwd: string;
  idInvented: boolean;
  cwdKnown: boolean;
  file: string | null;
  entries: number;
  messages: Record<string, number>;
  /** Facts of the written session (kept) and those it lacks (notKept), counted. */
  facts: { kept: Counts; notKept: Counts };
  /** Per source: messages it gave, and facts it held that could not be kept (notKept). */
  sources: { kind: string; path: string; messages: Record<string, number>; notKept: Counts }[];
  gaps: string[];
  /** Logs only: the line (or flag) that named the id and the cwd. */
  identity?: SessionIdentity;
}

export interface FidelityReport {
  sessions: SessionReport[];
  sources: { kind: string; path: string; sessions: number; notes: string[]; notKept: Counts }[];
}

/** One session's lines of the report; built as soon as it is written, so its entries can go. */
export function sessionReport(s: SalvagedSession, file: string | null): SessionReport {
  return {
    id: s.header.id,
    cwd: s.header.cwd,
    idInvented: !s.idKnown,
    cwdKnown: s.cwdKnown,
    file,
    entries: s.entries.length,
    messages: countRoles(s.entries),
    facts: sessionFacts(s.entries, s.timesKnown !== false),
    sources: (s.provided ?? []).map((p) => ({ kind: p.source.kind, path: p.source.path, messages: p.messages, notKept: p.notKept ?? {} })),
    gaps: s.gaps,
    ...(s.identity ? { identity: s.identity } : {}),
  };
}

export interface SourceSummary {
  source: SourceResult["source"];
  sessions: number;
  notes: string[];
  /** Source-wide facts not kept (log lines not understood), counted. */
  notKept?: Counts;
}

export function fidelityReport(sources: SourceSummary[], sessions: SessionReport[]): FidelityReport {
  return { sessions, sources: sources.map((r) => ({ kind: r.source.kind, path: r.source.path, sessions: r.sessions, notes: r.notes, notKept: r.notKept ?? {} })) };
}
