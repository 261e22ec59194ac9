// Filtering the catalog and resolving what the user typed as a session id.

import { RepoError } from "../repo/errors.js";
import type { SessionRecord } from "./catalog.js";
import { shortIds } from "./short-id.js";

/** Candidates an ambiguous id names; the error stays one line. */
const MAX_CANDIDATES = 6;

export interface SessionFilter {
  /** Substring of the project path (header cwd). */
  project?: string;
  tag?: string;
  /** Sessions active at or after this time. */
  since?: Date;
  /** Sessions started at or before this time. */
  until?: Date;
  /** Only sessions that are in a snapshot but gone from disk. */
  deleted?: boolean;
  host?: string;
  /** The agent's registry name ("pi", "claude", ...). */
  agent?: string;
}

export function filterSessions(sessions: readonly SessionRecord[], f: SessionFilter): SessionRecord[] {
  return sessions.filter((s) => {
    if (f.project && !s.project.includes(f.project)) return false;
    if (f.tag && !s.tags.includes(f.tag)) return false;
    if (f.deleted && !s.deleted) return false;
    if (f.host && !s.hosts.includes(f.host)) return false;
    if (f.agent && s.agent !== f.agent) return false;
    if (f.since && (!s.lastActivity || Date.parse(s.lastActivity) < f.since.getTime())) return false;
    if (f.until && (!s.started || Date.parse(s.started) > f.until.getTime())) return false;
    return true;
  });
}

/** An exact id, else a unique prefix. Unknown -> not-found; several matches -> usage error. */
export function resolveSession(sessions: readonly SessionRecord[], query: string): SessionRecord {
  const q = query.trim();
  if (!q) throw new RepoError("no session id given (run `pi-guard sessions list` to see them)", "usage");
  const exact = sessions.find((s) => s.id === q);
  if (exact) return exact;
  const hits = sessions.filter((s) => s.id.toLowerCase().startsWith(q.toLowerCase()));
  if (hits.length === 1) return hits[0];
  if (hits.length === 0) throw new RepoError(`no session matches "${q}" (run \`pi-guard sessions list\` to see them)`, "not-found");
  // Each candidate by the prefix that tells it from the others (UUIDv7 ids started in the same
  // minute share their first 8 digits), with what the user may recognise it by.
  const short = shortIds(hits.map((s) => s.id));
  const shown = hits.slice(0, MAX_CANDIDATES).map((s) => `${short.get(s.id)} (${[s.name, s.started?.replace("T", " ").slice(0, 16)].filter(Boolean).join(", ") || s.project})`);
  throw new RepoError(
    `session id "${q}" is ambiguous: ${hits.length} sessions match: ${shown.join(", ")}${hits.length > MAX_CANDIDATES ? `, and ${hits.length - MAX_CANDIDATES} more` : ""}; type one of these ids or more characters`,
    "usage",
  );
}
