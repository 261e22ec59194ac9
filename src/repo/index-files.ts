// Which index files a process has read, and what follows from a new listing of index/: the live
// set (readable, superseded by no readable file), what to add to the in-memory index, and whether
// it must be rebuilt because something it holds may have been deleted (docs/FORMAT.md §6).

import type { IndexFile } from "./format.js";

export interface IndexInfo {
  supersedes: string[];
  /**
   * `<pack id>/<blob entries>` for each pack the file names: a file that names a pack with fewer
   * entries (a repair that dropped some) does not cover one that named more.
   */
  packs: string[];
  blobs: number;
}

export interface IndexPlan {
  /** Readable files no readable file supersedes. */
  live: string[];
  /** Live files whose packs must be added to the in-memory index. */
  add: string[];
  /** Files in the in-memory index that are no longer live (their packs are named by live ones). */
  drop: string[];
  /** Start the in-memory index again: a file it holds is gone and not all of its packs live on. */
  rebuild: boolean;
  unreadable: { id: string; error: string }[];
}

/** Size tiers for consolidation: a tier holds files of [16^t, 16^(t+1)) blobs. */
export const CONSOLIDATE_FANOUT = 16;

export function tierOf(blobs: number): number {
  return Math.floor(Math.log(Math.max(1, blobs)) / Math.log(CONSOLIDATE_FANOUT));
}

export const packCoverKey = (id: string, blobs: number): string => `${id}/${blobs}`;

export function infoOf(index: IndexFile): IndexInfo {
  return { supersedes: index.supersedes, packs: index.packs.map((p) => packCoverKey(p.id, p.blobs.length)), blobs: index.packs.reduce((n, p) => n + p.blobs.length, 0) };
}

export class IndexFiles {
  /** Readable index files seen in the last listing (or written by this process since). */
  readonly known = new Map<string, IndexInfo>();
  /** Unreadable index files seen in the last listing, with the reason. */
  readonly bad = new Map<string, string>();

  rememberIndex(id: string, index: IndexFile): void {
    this.remember(id, infoOf(index));
  }

  remember(id: string, info: IndexInfo): void {
    this.known.set(id, { supersedes: info.supersedes, packs: info.packs, blobs: info.blobs });
    this.bad.delete(id);
  }

  clear(): void {
    this.known.clear();
    this.bad.clear();
  }

  /**
   * Reconcile with a fresh listing. `inMemory`: the files whose packs the in-memory index holds;
   * `recovered`: it also holds packs found by a pack scan (named by no file, so their fate cannot
   * be followed through the listing).
   */
  plan(listed: Set<string>, inMemory: Set<string>, opts: { loaded: boolean; recovered: boolean }): IndexPlan {
    const gone = new Map<string, IndexInfo>();
    for (const [id, info] of this.known) {
      if (listed.has(id)) continue;
      gone.set(id, info);
      this.known.delete(id);
    }
    for (const id of this.bad.keys()) if (!listed.has(id)) this.bad.delete(id);
    const superseded = new Set<string>();
    for (const info of this.known.values()) for (const s of info.supersedes) superseded.add(s);
    const live = [...this.known.keys()].filter((id) => !superseded.has(id));
    const liveSet = new Set(live);
    const drop = [...inMemory].filter((id) => !liveSet.has(id));
    let rebuild = !opts.loaded || (drop.length > 0 && opts.recovered);
    if (!rebuild && drop.length) {
      // A consolidation moves every pack of the files it replaces into the new file; anything
      // else that makes a file disappear (prune, repair) may have deleted its packs.
      const need = new Set<string>();
      for (const id of drop) {
        const info = this.known.get(id) ?? gone.get(id);
        if (!info) rebuild = true;
        else for (const p of info.packs) need.add(p);
      }
      for (const pass of [false, true]) {
        for (const id of live) if (inMemory.has(id) === pass) for (const p of this.known.get(id)!.packs) need.delete(p);
        if (!need.size) break;
      }
      if (need.size) rebuild = true;
    }
    const add = rebuild ? live : live.filter((id) => !inMemory.has(id));
    const unreadable = [...this.bad].filter(([id]) => !superseded.has(id)).map(([id, error]) => ({ id, error }));
    return { live, add, drop: rebuild ? [] : drop, rebuild, unreadable };
  }

  /** Live files of the lowest tier that holds CONSOLIDATE_FANOUT or more, or none. */
  consolidationGroup(live: string[]): string[] | undefined {
    const tiers = new Map<number, string[]>();
    for (const id of live) {
      const t = tierOf(this.known.get(id)!.blobs);
      tiers.set(t, [...(tiers.get(t) ?? []), id]);
    }
    const full = [...tiers].filter(([, ids]) => ids.length >= CONSOLIDATE_FANOUT).sort((a, b) => a[0] - b[0]);
    return full[0]?.[1].sort();
  }

  /**
   * Listed files that a readable file supersedes and whose packs it names, all of them: left by a
   * consolidation that was interrupted before it deleted them. Only those may be deleted.
   */
  coveredLeftovers(): string[] {
    const out: string[] = [];
    for (const [id, info] of this.known) {
      for (const [byId, by] of this.known) {
        if (byId === id || !by.supersedes.includes(id)) continue;
        const named = new Set(by.packs);
        if (info.packs.every((p) => named.has(p))) {
          out.push(id);
          break;
        }
      }
    }
    return out;
  }
}
