// One session seen along one branch: the path from the root to the chosen leaf, plus the
// shape of the whole tree (branch points, leaves, labels, compactions) for navigation.

import { branchPoints, buildTree, compactions, labels, leadingSystemIds, leaves, pathTo, sessionName, systemSteps, type ContextEditEntry, type SessionEntry, type SessionHeader, type SessionTree, type SystemStep } from "../pi/index.js";
import { RepoError } from "../repo/errors.js";
import type { LoadedSession } from "./read.js";

export interface SessionView {
  header: SessionHeader;
  entries: SessionEntry[];
  tree: SessionTree;
  /** The entry the chosen path ends at (pi's leaf unless --branch picked another). */
  leafId: string | null;
  path: SessionEntry[];
  labels: Map<string, string>;
  branchPoints: SessionEntry[];
  leaves: SessionEntry[];
  compactions: SessionEntry[];
  name: string | undefined;
  /** pi 1.x system prompt entries on the path, each resolved against the state before it. */
  system: Map<string, SystemStep>;
  /** Ids of the system messages that start the prompt of their branch, over the whole tree. */
  leadingSystem: Set<string>;
  /** pi 1.x: the edit in force on the path for each edited entry id (the latest one, as in pi). */
  edits: Map<string, ContextEditEntry>;
  /** The loaded session's warnings (LoadedSession.warnings). */
  warnings: string[];
}

/** Resolve `--branch`: an entry id or a unique prefix of one; any entry, not only leaves. */
export function resolveEntry(tree: SessionTree, query: string): string {
  return resolveEntryId(tree.byId, query);
}

/** resolveEntry over any map keyed by entry id (the streaming export has no full tree). */
export function resolveEntryId(byId: ReadonlyMap<string, unknown>, query: string): string {
  const q = query.trim().toLowerCase();
  if (byId.has(q)) return q;
  const hits = [...byId.keys()].filter((id) => id.toLowerCase().startsWith(q));
  if (hits.length === 1) return hits[0];
  if (hits.length === 0) throw new RepoError(`no entry "${query}" in this session (see the leaves in \`pi-guard sessions show ID\`)`, "not-found");
  throw new RepoError(`entry id "${query}" is ambiguous: ${hits.length} entries match (${hits.slice(0, 4).join(", ")}); type more characters`, "usage");
}

/** The latest context edit of each target among `entries` (a branch's, in path order). */
export function contextEdits(entries: Iterable<SessionEntry>): Map<string, ContextEditEntry> {
  const out = new Map<string, ContextEditEntry>();
  for (const e of entries) if (e.type === "context_edit" && typeof e.targetId === "string") out.set(e.targetId, e as ContextEditEntry);
  return out;
}

export function sessionView(session: LoadedSession, branch?: string): SessionView {
  const tree = buildTree(session.entries);
  const leafId = branch ? resolveEntry(tree, branch) : tree.leafId;
  const path = pathTo(tree, leafId);
  return {
    header: session.header,
    entries: session.entries,
    tree,
    leafId,
    path,
    labels: labels(session.entries),
    branchPoints: branchPoints(tree),
    leaves: leaves(tree),
    compactions: compactions(session.entries),
    name: sessionName(session.entries),
    system: systemSteps(path),
    leadingSystem: leadingSystemIds(tree),
    edits: contextEdits(path),
    warnings: session.warnings,
  };
}
