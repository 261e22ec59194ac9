// The last step before writing: a provenance entry, and checks that the result is a tree pi can
// load (unique ids, parents that exist), so we never write a file pi would choke on.

import { serializeSession } from "../agents/pi/writer.js";
import { type CustomEntry, type SessionEntry } from "../model/session.js";
import { RepoError } from "../repo/errors.js";
import { VERSION } from "../version.js";
import { EntryIds } from "./ids.js";
import { PROVENANCE_TYPE, type SalvagedSession } from "./types.js";

/**
 * Append a `custom` entry naming where the session came from. pi skips custom entries when it
 * builds the model context, so this changes nothing the model sees. It hangs under the leaf pi
 * should resume from, which also restores an exported leaf that was not the last entry.
 */
export function withProvenance(session: SalvagedSession, now: Date = new Date()): SalvagedSession {
  const ids = new EntryIds(session.entries.map((e) => e.id));
  const last = session.entries[session.entries.length - 1];
  const leaf = session.leafId !== undefined && session.leafId !== null ? session.leafId : (last?.id ?? null);
  const entry: CustomEntry = {
    type: "custom",
    customType: PROVENANCE_TYPE,
    data: {
      tool: `pi-guard ${VERSION}`,
      salvagedAt: now.toISOString(),
      sources: session.sources,
      gaps: session.gaps,
      idInvented: !session.idKnown,
    },
    id: ids.make(`${session.header.id}:provenance`),
    parentId: leaf,
    timestamp: now.toISOString(),
  };
  return { ...session, entries: [...session.entries, entry], leafId: entry.id };
}

/** Throws when the entries would not form a tree pi can load. */
export function checkLoadable(session: SalvagedSession): void {
  const seen = new Set<string>();
  const all = new Set(session.entries.map((e) => e.id));
  for (const e of session.entries as SessionEntry[]) {
    if (typeof e.id !== "string" || e.id === "") throw new RepoError(`session ${session.header.id}: an entry has no id`, "input");
    if (seen.has(e.id)) throw new RepoError(`session ${session.header.id}: duplicate entry id ${e.id}`, "input");
    // A parent missing altogether is a root to pi; one that comes later would make a cycle-prone file.
    if (e.parentId !== null && !seen.has(e.parentId) && all.has(e.parentId)) {
      throw new RepoError(`session ${session.header.id}: entry ${e.id} comes before its parent ${e.parentId}`, "input");
    }
    seen.add(e.id);
  }
}

export function sessionText(session: SalvagedSession): string {
  checkLoadable(session);
  return serializeSession({ ...session.header, version: 3 }, session.entries);
}
