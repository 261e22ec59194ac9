// The JSON export: a stable, documented shape (docs/SESSIONS.md). `entries` is every entry in
// file order (the whole tree, pi's v3 form), so the file can be turned back into a session;
// `path` is the root-to-leaf list of ids for the chosen branch.

import { sessionStats, type SessionStats } from "../model/stats.js";
import { type SessionEntry, type SessionHeader } from "../model/session.js";
import type { SessionStream } from "./entry-stream.js";
import type { ExportInput } from "./model.js";

export const JSON_EXPORT_FORMAT = "pi-guard.session";
export const JSON_EXPORT_VERSION = 1;

interface DocFields {
  source: string;
  redacted: boolean;
  name: string | undefined;
  header: SessionHeader;
  leafId: string | null;
  path: (string | undefined)[];
  stats: SessionStats;
}

function doc(f: DocFields, now: Date, entries: SessionEntry[]) {
  return {
    format: JSON_EXPORT_FORMAT,
    version: JSON_EXPORT_VERSION,
    exportedAt: now.toISOString(),
    source: f.source,
    redacted: f.redacted,
    name: f.name ?? null,
    header: f.header,
    leafId: f.leafId,
    path: f.path,
    stats: f.stats,
    entries,
  };
}

export function renderJson(input: ExportInput, now = new Date()): string {
  const { view } = input;
  const fields = { source: input.source, redacted: input.redacted, name: view.name, header: view.header, leafId: view.leafId, path: view.path.map((e) => e.id), stats: sessionStats(view.entries) };
  return JSON.stringify(doc(fields, now, view.entries), null, 2) + "\n";
}

/**
 * The same text as renderJson, one entry at a time: everything before `entries` is small, so it
 * is stringified whole with an empty array, which is then opened and filled entry by entry with
 * the indentation JSON.stringify gives array items at that depth.
 */
export async function* streamJson(s: SessionStream, meta: { header: SessionHeader; source: string; redacted: boolean; redact: (text: string) => string }, now = new Date()): AsyncGenerator<string> {
  const ids = (id: string | undefined) => (id === undefined ? id : meta.redact(id));
  const fields = {
    source: meta.source,
    redacted: meta.redacted,
    name: s.name,
    header: meta.header,
    leafId: s.leafId === null ? null : meta.redact(s.leafId),
    path: s.branch.map((i) => ids(s.records[i].id)),
    stats: s.stats(),
  };
  const text = JSON.stringify(doc(fields, now, []), null, 2);
  const EMPTY = "[]\n}";
  if (s.records.length === 0) {
    yield text + "\n";
    return;
  }
  if (!text.endsWith(EMPTY)) throw new Error("the JSON export's head does not end in its entries array");
  yield `${text.slice(0, -EMPTY.length)}[\n`;
  let first = true;
  for await (const e of s.entries()) {
    const item = "    " + JSON.stringify(e, null, 2).replace(/\n/g, "\n    ");
    yield first ? item : `,\n${item}`;
    first = false;
  }
  yield "\n  ]\n}\n";
}
