// `restore --session ID` across agents: which session of a snapshot an id (or a prefix of one)
// names, found the way each agent itself names its sessions (its SessionReader), over any
// FileReader, so that every engine resolves an id the same way.

import { RepoError } from "../repo/errors.js";
import type { AgentAdapter, FileReader, SessionMeta } from "./types.js";

export interface FoundSession {
  adapter: AgentAdapter;
  meta: SessionMeta;
}

const MAX_SHOWN = 300;

/** An id or path read from a snapshot, for a one-line message: no control character reaches the terminal, and no megabyte. */
export const shownName = (text: string): string => {
  const line = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, "?");
  return line.length > MAX_SHOWN ? `${line.slice(0, MAX_SHOWN)}...` : line;
};

/** How many sessions an ambiguity message names. */
const SHOWN = 4;

/**
 * The sessions of `files` whose id is `id` (case-insensitive), or else starts with it, among
 * `agents`' sessions; one per agent and id (an agent that lists one id from two files keeps the
 * first). A whole id wins over longer ids it is a prefix of.
 */
export async function findSessions(files: FileReader, id: string, agents: readonly AgentAdapter[]): Promise<FoundSession[]> {
  const want = id.toLowerCase();
  const found = new Map<string, FoundSession>();
  for (const adapter of agents) {
    for await (const meta of adapter.sessions.list(files)) {
      const key = `${adapter.name}\0${meta.id}`;
      if (meta.id.toLowerCase().startsWith(want) && !found.has(key)) found.set(key, { adapter, meta });
    }
  }
  const all = [...found.values()];
  const whole = all.filter((f) => f.meta.id.toLowerCase() === want);
  return whole.length ? whole : all;
}

/** The one session `id` names in `files`; undefined when none; a usage error listing them when several do. */
export async function resolveSession(files: FileReader, id: string, agents: readonly AgentAdapter[]): Promise<FoundSession | undefined> {
  const found = await findSessions(files, id, agents);
  if (found.length > 1) throw ambiguousSession(id, found);
  return found[0];
}

export function ambiguousSession(id: string, found: readonly FoundSession[]): RepoError {
  const agents = new Set(found.map((f) => f.adapter.name));
  const name = (f: FoundSession) => shownName(agents.size > 1 ? `${f.adapter.name} ${f.meta.id}` : f.meta.id);
  const shown = found.map(name).sort().slice(0, SHOWN);
  const narrow = agents.size > 1 ? `, or name the agent with --agent (${[...agents].sort().join(", ")})` : "";
  return new RepoError(
    `session id "${shownName(id)}" is ambiguous: ${found.length} sessions match (${shown.join(", ")}${found.length > SHOWN ? ", ..." : ""}); type more characters${narrow}`,
    "usage",
  );
}
