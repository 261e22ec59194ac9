// The JSON export: a stable, documented shape (docs/SESSIONS.md). `entries` is every entry in
// file order (the whole tree, pi's v3 form), so the file can be turned back into a session;
// `path` is the root-to-leaf list of ids for the chosen branch.

import { sessionStats } from "../pi/index.js";
import type { ExportInput } from "./model.js";

export const JSON_EXPORT_FORMAT = "pi-guard.session";
export const JSON_EXPORT_VERSION = 1;

export function renderJson(input: ExportInput, now = new Date()): string {
  const { view } = input;
  const stats = sessionStats(view.entries);
  const doc = {
    format: JSON_EXPORT_FORMAT,
    version: JSON_EXPORT_VERSION,
    exportedAt: now.toISOString(),
    source: input.source,
    redacted: input.redacted,
    name: view.name ?? null,
    header: view.header,
    leafId: view.leafId,
    path: view.path.map((e) => e.id),
    stats,
    entries: view.entries,
  };
  return JSON.stringify(doc, null, 2) + "\n";
}
