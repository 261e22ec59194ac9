// The fidelity report: what came back, from where, and what each source could not give.

import type { SessionEntry } from "../model/session.js";
import { type Counts, formatCounts, sessionFacts } from "./facts.js";
import type { IdentitySource, SalvagedSession, SessionIdentity, SourceResult } from "./types.js";

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

const roleList = (m: Record<string, number>) =>
  Object.entries(m)
    .map(([role, n]) => `${n} ${role}`)
    .join(", ") || "no messages";

/** Short human form: one block per session, then source notes. */
export function formatReport(report: FidelityReport): string {
  const out: string[] = [];
  for (const s of report.sessions) {
    out.push(`session ${s.id}${s.idInvented ? " (id invented)" : ""}  ${s.cwd || "(cwd unknown)"}`);
    out.push(`  recovered  ${roleList(s.messages)} (${s.entries} entries)`);
    out.push(`  kept       ${formatCounts(s.facts.kept)}`);
    out.push(`  not kept   ${formatCounts(s.facts.notKept)}`);
    for (const line of identityLines(s.identity)) out.push(`  ${line}`);
    for (const src of s.sources) {
      out.push(`  from ${src.kind.padEnd(5)} ${roleList(src.messages)}  ${src.path}`);
      if (Object.keys(src.notKept).length) out.push(`             it held, not kept: ${formatCounts(src.notKept)}`);
    }
    for (const g of s.gaps) out.push(`  missing    ${g}`);
    if (s.file) out.push(`  written    ${s.file}`);
  }
  for (const src of report.sources) {
    if (Object.keys(src.notKept).length) out.push(`source ${src.kind} ${src.path}: not kept ${formatCounts(src.notKept)}`);
    for (const n of src.notes) out.push(`note (${src.kind} ${src.path}): ${n}`);
  }
  return out.join("\n");
}

function identityLine(what: string, src: IdentitySource | null): string | undefined {
  if (!src) return undefined;
  if (src.from === "line") return `${what.padEnd(10)} from line ${src.line}: ${src.text}`;
  const over = src.replaced ? `, over line ${src.replaced.line} (${src.replaced.value}): ${src.replaced.text}` : "";
  return `${what.padEnd(10)} from ${what === "id" ? "--session-id" : "--cwd"}${over}`;
}

function identityLines(identity: SessionIdentity | undefined): string[] {
  if (!identity) return [];
  return [identityLine("id", identity.sessionId), identityLine("cwd", identity.cwd)].filter((l): l is string => l !== undefined);
}
