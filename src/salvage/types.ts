// What every salvage source produces: best-effort pi sessions plus an honest account of what the
// source could not provide. Sources never write; output.ts does, after everything was read.

import type { SessionEntry, SessionHeader } from "../model/session.js";

export type SourceKind = "html" | "log" | "hermes" | "terminal" | "open-files" | "journal";

export interface SalvageSource {
  kind: SourceKind;
  path: string;
}

/** Where a session's id or cwd came from: a log line, or a flag given by hand. */
export interface IdentitySource {
  value: string;
  from: "line" | "flag";
  /** With from "line": the log, its line number and the start of that line. */
  path?: string;
  line?: number;
  text?: string;
  /** With from "flag": the line that named another value, which the flag replaced. */
  replaced?: { value: string; line: number; text: string };
}

export interface SessionIdentity {
  sessionId: IdentitySource | null;
  cwd: IdentitySource | null;
}

export interface SalvagedSession {
  header: SessionHeader;
  /** False when the source carried no session id and one was made up. */
  idKnown: boolean;
  /** False when the source carried no project dir; --install then needs --cwd. */
  cwdKnown: boolean;
  /** False when the entry times are made up (a terminal shows none): merge then ignores them. */
  timesKnown?: boolean;
  /** pi v3 entries in file order, parent links set. */
  entries: SessionEntry[];
  /** The entry pi should resume from, when it is not the last one (an exported branch). */
  leafId?: string | null;
  sources: SalvageSource[];
  /** Messages by role that each source gave for this session, before merging. */
  provided?: { source: SalvageSource; messages: Record<string, number>; notKept?: Record<string, number> }[];
  /** Facts this source held for the session but could not keep, counted ("system prompts": 1). */
  notKept?: Record<string, number>;
  /** For sessions from logs: which line (or flag) named the id and the cwd. */
  identity?: SessionIdentity;
  /** One sentence per thing a source could not give back (per session). */
  gaps: string[];
}

export interface SourceResult {
  source: SalvageSource;
  sessions: SalvagedSession[];
  /** How many sessions the source held, when they went to a sink instead of `sessions`. */
  sessionCount?: number;
  /** Remarks about the source as a whole (skipped lines, unreadable parts). */
  notes: string[];
  /** Source-wide facts not kept, counted ("plain text lines": 12). */
  notKept?: Record<string, number>;
}

export const PROVENANCE_TYPE = "pi-guard/salvage";
