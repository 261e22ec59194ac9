// One session seen along one branch: the path from the root to the chosen leaf, plus the
// shape of the whole tree (branch points, leaves, labels, compactions) for navigation.

import { branchPoints, buildTree, compactions, labels, leaves, pathTo, sessionName, type SessionTree } from "../model/tree.js";
import { leadingSystemIds, systemSteps, type SystemStep } from "../agents/pi/system-prompt.js";
import { type ContextEditEntry, type SessionEntry, type SessionHeader } from "../model/session.js";
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
  /** pi 1.x: the edit pi applies on the path, for each edited entry id (appliedEdits: the latest in its context). */
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

/** What pi's context rule reads of an entry of the path (a SessionEntry, or a streamed export's record). */
export interface ContextItem {
  id: string | undefined;
  type: string;
  /** A message entry's role. */
  role?: string;
}

/**
 * The ids of the path's entries pi 1.x puts in the model's context (its buildContextEntries):
 * with a compaction on the path, the newest one, the entries from its `firstKeptEntryId` up to it
 * (system messages aside), and all after it; the whole path otherwise.
 */
function contextIds(path: readonly ContextItem[], firstKeptEntryId: unknown): Set<string | undefined> {
  let c = -1;
  path.forEach((e, i) => {
    if (e.type === "compaction") c = i;
  });
  if (c < 0) return new Set(path.map((e) => e.id));
  const ids = new Set<string | undefined>([path[c].id]);
  const first = path.findIndex((e, i) => i < c && e.id === firstKeptEntryId);
  if (first >= 0) for (let i = first; i < c; i++) if (!(path[i].type === "message" && path[i].role === "system")) ids.add(path[i].id);
  for (let i = c + 1; i < path.length; i++) ids.add(path[i].id);
  return ids;
}

/** pi replaces the content of these messages only (projectContextEntry); any entry can be omitted. */
const REPLACEABLE_ROLES = new Set(["user", "assistant", "toolResult"]);

/**
 * The context edit pi applies to each edited entry of the path, by target id, as pi 1.x's
 * buildSessionProjection does: only an edit in the context (contextIds) counts, the latest per
 * target wins, and it takes effect only on a target in the context whose kind it can change. An
 * edit made before a compaction that summarized it, or of an entry summarized away, is ignored.
 * `edits`: the path's context_edit entries, in path order; `firstKeptEntryId`: the newest
 * compaction's on the path.
 */
export function appliedEdits<E extends { id: string | undefined; targetId?: unknown; replacement?: unknown }>(path: readonly ContextItem[], firstKeptEntryId: unknown, edits: Iterable<E>): Map<string, E> {
  const ids = contextIds(path, firstKeptEntryId);
  const latest = new Map<string, E>();
  for (const e of edits) if (typeof e.targetId === "string" && ids.has(e.id)) latest.set(e.targetId, e);
  const byId = new Map(path.map((e) => [e.id, e]));
  for (const [target, e] of latest) {
    const t = byId.get(target);
    const applies = !!t && ids.has(target) && (e.replacement === null || t.type === "custom_message" || (t.type === "message" && REPLACEABLE_ROLES.has(t.role ?? "")));
    if (!applies) latest.delete(target);
  }
  return latest;
}

/** The context edit pi applies to each edited entry of `path` (a branch, in order): appliedEdits. */
export function contextEdits(path: readonly SessionEntry[]): Map<string, ContextEditEntry> {
  const items = path.map((e) => ({ id: e.id, type: e.type, role: e.type === "message" ? String((e as { message?: { role?: unknown } }).message?.role) : undefined }));
  const compaction = path.findLast((e) => e.type === "compaction") as { firstKeptEntryId?: unknown } | undefined;
  return appliedEdits(items, compaction?.firstKeptEntryId, path.filter((e): e is ContextEditEntry => e.type === "context_edit"));
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
