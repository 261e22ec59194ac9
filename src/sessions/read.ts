// Reading one session into the v3 model. Version 1 files have no entry ids; pi invents random
// ones on load. We derive them from the session id and the entry's position instead, so that
// `--branch` ids printed by `sessions show` stay valid on the next run and in exports.

import { createHash } from "node:crypto";
import { nestingWarnings, readSessionText, type ReadSessionResult } from "../agents/pi/parse.js";
import { type SessionEntry, type SessionHeader } from "../model/session.js";

export interface LoadedSession {
  header: SessionHeader;
  entries: SessionEntry[];
  /** 1-based line number each raw entry came from (parallel to `entries` when nothing was migrated). */
  entryLines: number[];
  fromVersion: number;
  /** Lines the tolerant parser skipped or repaired (never fatal). */
  issues: number;
  /** What a reader must tell the user: entries kept only in part (nesting too deep to walk). */
  warnings: string[];
}

export function stableIdGenerator(seed: string): (taken: ReadonlySet<string>, index: number) => string {
  return (taken, index) => {
    for (let attempt = 0; ; attempt++) {
      const id = createHash("sha256").update(`${seed}\0${index}\0${attempt}`).digest("hex").slice(0, 8);
      if (!taken.has(id)) return id;
    }
  };
}

/** A header for files that lost theirs: enough for display and export, never written back. */
export function placeholderHeader(fallbackId: string, result: Pick<ReadSessionResult, "headerFragment" | "entries">): SessionHeader {
  const fragment = result.headerFragment ?? {};
  const first = result.entries[0]?.timestamp;
  return {
    type: "session",
    version: 3,
    id: typeof fragment.id === "string" ? fragment.id : fallbackId,
    timestamp: typeof fragment.timestamp === "string" ? fragment.timestamp : typeof first === "string" ? first : new Date(0).toISOString(),
    cwd: typeof fragment.cwd === "string" ? fragment.cwd : "",
  };
}

/**
 * The seed of a v1 file's stable ids: the header's id, read cheaply from the first 64 KiB (the
 * seed must not depend on the parse), else the fallback id. `start` may be just those bytes.
 */
export function headerSeed(start: Uint8Array, fallbackId: string): string {
  const firstLine = Buffer.from(start.subarray(0, Math.min(start.length, 64 * 1024))).toString("utf8").split("\n", 1)[0];
  try {
    const h = JSON.parse(firstLine) as { type?: unknown; id?: unknown };
    if (h?.type === "session" && typeof h.id === "string") return h.id;
  } catch {
    // No usable header: the fallback id seeds the generator.
  }
  return fallbackId;
}

/** Parse bytes held in memory into a v3 session. Never throws on damaged content. */
export function loadSessionBytes(bytes: Uint8Array, fallbackId: string): LoadedSession {
  const result = readSessionText(bytes, { generateId: stableIdGenerator(headerSeed(bytes, fallbackId)) });
  return {
    header: result.header ?? placeholderHeader(fallbackId, result),
    entries: result.entries,
    entryLines: result.entryLines,
    fromVersion: result.fromVersion,
    issues: result.issues.length,
    warnings: nestingWarnings(result.issues),
  };
}
