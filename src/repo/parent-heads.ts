// The few newest snapshots of each (host, roots), kept in the metadata cache so that a snapshot
// finds its parent without listing and reading 100,000 snapshot objects. Only a hint: the caller
// checks that a candidate still exists, and lists everything when no candidate is left. A snapshot
// made by a process with another data dir is missing here; the parent is then older than it could
// be, which costs reading more files, never a wrong snapshot.
//
// Beside them, the few newest of each (host, agent root), whatever the other roots: the last whole
// state the suspect-loss guard judges against when the roots changed (a sessions symlink or
// sessionDir that came or went), found the same way without a listing.

import { createHash } from "node:crypto";
import { isImport, SUSPECT_LOSS_TAG, type Snapshot } from "./format.js";
import type { MetaCache } from "./meta-cache.js";

const KEEP = 4;
/** Newest first, in plain code-unit order: ISO times sort so, and a process's first locale-aware compare costs ~80 ms (ICU). */
const newestFirst = (a: Head, b: Head): number => (a.time < b.time ? 1 : a.time > b.time ? -1 : a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
const NAME = "0".repeat(64);

interface Head {
  id: string;
  time: string;
}

const keys = new Map<string, string>();
function keyOf(host: string, roots: unknown): string {
  const plain = `${host}\0${JSON.stringify(roots)}`;
  let key = keys.get(plain);
  if (key === undefined) {
    key = createHash("sha256").update(plain).digest("hex");
    if (keys.size < 1024) keys.set(plain, key);
  }
  return key;
}

/** The path of root "agent" (the agent dir) in a snapshot's untrusted roots, if it has one. */
export function agentRootPath(roots: unknown): string | undefined {
  const found = Array.isArray(roots) ? roots.find((r) => r?.name === "agent") : undefined;
  return typeof found?.path === "string" ? found.path : undefined;
}

/** What a snapshot is recorded by. */
export type HeadSource = Pick<Snapshot, "time" | "host" | "roots" | "tags" | "imported">;

/** The keys a snapshot is recorded under: its roots, and its agent root alone. */
function keysOf(s: HeadSource): string[] {
  const agent = agentRootPath(s.roots);
  return agent === undefined ? [keyOf(s.host, s.roots)] : [keyOf(s.host, s.roots), keyOf(s.host, { agent })];
}

/** Snapshots that may be a parent: an import's time is a claim, and a suspect loss is no base. */
export function canBeParent(s: HeadSource): boolean {
  return typeof s.host === "string" && typeof s.time === "string" && !isImport(s) && !(Array.isArray(s.tags) && s.tags.includes(SUSPECT_LOSS_TAG));
}

export class ParentHeads {
  private map?: Map<string, Head[]>;

  constructor(private readonly cache: MetaCache | undefined) {}

  private async load(): Promise<Map<string, Head[]>> {
    if (this.map) return this.map;
    this.map = new Map();
    const body = await this.cache?.get("heads", NAME);
    if (body) {
      try {
        const parsed = JSON.parse(body.toString("utf8")) as Record<string, Head[]>;
        for (const [k, heads] of Object.entries(parsed)) {
          if (Array.isArray(heads)) this.map.set(k, heads.filter((h) => typeof h?.id === "string" && typeof h?.time === "string"));
        }
      } catch {
        // authentic but unparsable (another version): start again
      }
    }
    return this.map;
  }

  async candidates(host: string, roots: unknown): Promise<string[]> {
    // Read the file again: another process (a `pi-guard snapshot` beside a long-running watcher)
    // may have recorded a newer snapshot since; the file holds a few ids per key, so this is cheap.
    this.map = undefined;
    await this.cache?.release("heads");
    return ((await this.load()).get(keyOf(host, roots)) ?? []).map((h) => h.id);
  }

  /** Newest first, the snapshots of `host` whose agent root is `agentPath` newer than `after`; read with candidates(), not again. */
  async agentCandidates(host: string, agentPath: string, after = ""): Promise<string[]> {
    return ((await this.load()).get(keyOf(host, { agent: agentPath })) ?? []).filter((h) => h.time > after).map((h) => h.id);
  }

  async record(records: { id: string; snapshot: HeadSource }[]): Promise<void> {
    const map = await this.load();
    let changed = false;
    for (const { id, snapshot: s } of records) {
      if (!canBeParent(s)) continue;
      for (const k of keysOf(s)) {
        const heads = (map.get(k) ?? []).filter((h) => h.id !== id);
        heads.push({ id, time: s.time });
        heads.sort(newestFirst);
        map.set(k, heads.slice(0, KEEP));
      }
      changed = true;
    }
    if (changed) await this.save();
  }

  /** From a full listing (`built`): exactly what the repository holds now. */
  async rebuild(built: HeadsBuilder): Promise<void> {
    const before = JSON.stringify(Object.fromEntries(await this.load()));
    this.map = built.finish();
    if (JSON.stringify(Object.fromEntries(this.map)) !== before) await this.save();
  }

  private async save(): Promise<void> {
    await this.cache?.replace("heads", [[NAME, Buffer.from(JSON.stringify(Object.fromEntries(this.map ?? [])))]]);
  }
}

/**
 * The newest few snapshots of each key, from a full listing fed one snapshot at a time: what is
 * kept is a few ids per key, never a record per snapshot.
 */
export class HeadsBuilder {
  private readonly map = new Map<string, Head[]>();
  private finished = false;

  add(id: string, s: HeadSource): void {
    if (!canBeParent(s)) return;
    for (const k of keysOf(s)) {
      let heads = this.map.get(k);
      if (!heads) this.map.set(k, (heads = []));
      heads.push({ id, time: s.time });
      if (heads.length > 4 * KEEP) {
        heads.sort(newestFirst);
        heads.length = KEEP;
      }
    }
  }

  /** Each key's newest KEEP, newest first; nothing may be added after. */
  finish(): Map<string, Head[]> {
    if (!this.finished) {
      for (const heads of this.map.values()) {
        heads.sort(newestFirst);
        heads.length = Math.min(heads.length, KEEP);
      }
      this.finished = true;
    }
    return this.map;
  }

  /** The newest of `host` with exactly `roots`, and the newest of `host` with the agent root `agent` (the first when `agent` is undefined). */
  newest(host: string, roots: unknown, agent: string | undefined): { parent?: string; baseline?: string } {
    const first = (key: string) => this.finish().get(key)?.[0]?.id;
    const parent = first(keyOf(host, roots));
    return { parent, baseline: agent === undefined ? parent : first(keyOf(host, { agent })) };
  }
}
