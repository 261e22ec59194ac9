// The entry tree of a version 3 session. pi stores no leaf pointer: the leaf is simply the last
// entry in the file. Walks here are cycle-safe because damaged or hand-edited files can loop,
// where pi's own walk would spin forever.

import type { CompactionEntry, LabelEntry, SessionEntry, SessionInfoEntry } from "./session.js";

export interface SessionTree {
  byId: Map<string, SessionEntry>;
  /** Children of each entry id in file order; key null holds the roots. */
  children: Map<string | null, SessionEntry[]>;
  /** Entries whose parentId names an entry that is not in the file; pi treats them as roots. */
  orphans: SessionEntry[];
  /** The last entry in file order, where pi resumes. */
  leafId: string | null;
}

export function buildTree(entries: readonly SessionEntry[]): SessionTree {
  const byId = new Map<string, SessionEntry>();
  for (const e of entries) if (typeof e.id === "string") byId.set(e.id, e);
  const children = new Map<string | null, SessionEntry[]>([[null, []]]);
  const orphans: SessionEntry[] = [];
  for (const e of entries) {
    const parent = e.parentId ?? null;
    // Like pi's getTree: a self-parent or a missing parent makes an entry a root.
    const known = parent !== null && parent !== e.id && byId.has(parent);
    if (parent !== null && !known) orphans.push(e);
    const key = known ? parent : null;
    const list = children.get(key);
    if (list) list.push(e);
    else children.set(key, [e]);
  }
  const last = entries[entries.length - 1];
  return { byId, children, orphans, leafId: last && typeof last.id === "string" ? last.id : null };
}

/** The leaf pi would resume from: the last entry in file order. */
export function leafEntry(entries: readonly SessionEntry[]): SessionEntry | undefined {
  return entries[entries.length - 1];
}

/** Entries from the root down to `leafId` (default: the tree's leaf). Empty if the id is unknown. */
export function pathTo(tree: SessionTree, leafId: string | null = tree.leafId): SessionEntry[] {
  const path: SessionEntry[] = [];
  const seen = new Set<string>();
  let current = leafId === null ? undefined : tree.byId.get(leafId);
  while (current && !seen.has(current.id)) {
    seen.add(current.id);
    path.push(current);
    current = current.parentId ? tree.byId.get(current.parentId) : undefined;
  }
  return path.reverse();
}

/** Entries with more than one child: the places where the conversation branched. */
export function branchPoints(tree: SessionTree): SessionEntry[] {
  const out: SessionEntry[] = [];
  for (const [id, kids] of tree.children) {
    if (id === null || kids.length < 2) continue;
    const entry = tree.byId.get(id);
    if (entry) out.push(entry);
  }
  return out;
}

/** Entries without children: the tip of every branch, in file order. */
export function leaves(tree: SessionTree): SessionEntry[] {
  const out: SessionEntry[] = [];
  for (const entry of tree.byId.values()) {
    if (!tree.children.get(entry.id)?.length) out.push(entry);
  }
  return out;
}

/** Current label per target id. Later label entries win; an empty label clears, as in pi. */
export function labels(entries: readonly SessionEntry[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of entries) {
    if (e.type !== "label") continue;
    const { targetId, label } = e as LabelEntry;
    if (typeof targetId !== "string") continue;
    if (typeof label === "string" && label) out.set(targetId, label);
    else out.delete(targetId);
  }
  return out;
}

/** The name from the latest session_info entry; an empty name clears it, as in pi. */
export function sessionName(entries: readonly SessionEntry[]): string | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (e.type === "session_info") {
      const name = (e as SessionInfoEntry).name;
      return typeof name === "string" ? name.trim() || undefined : undefined;
    }
  }
  return undefined;
}

export function compactions(entries: readonly SessionEntry[]): CompactionEntry[] {
  return entries.filter((e): e is CompactionEntry => e.type === "compaction");
}
