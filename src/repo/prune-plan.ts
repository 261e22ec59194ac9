import { BlobReader } from "./blob-reader.js";
import { RepoError } from "./errors.js";
import { packKey, type BlobType, type IndexFile, type PackEntry, type PackedBlob, type TreeNode } from "./format.js";
import { sha256Hex, type Repository, type SnapshotRecord } from "./repository.js";
import { SealPool } from "./seal-pool.js";
import { treeLeaves, type TreeBlobSource } from "../snapshot/tree.js";

/**
 * What prune will do, decided from what is in the repository (read only). Separate from the
 * writing and deleting in prune.ts so that a dry run shows exactly the plan a real run follows.
 */

export interface PackPlan {
  id: string;
  size: number;
  /** Blobs of the pack that some snapshot uses and that the index locates in this pack. */
  used: PackedBlob[];
  blobs: number;
  /** Estimated bytes of the pack that hold no used blob (a frame partly used counts by share). */
  unusedBytes: number;
  type: BlobType | undefined;
  /** The pack's full index entry. */
  entry: PackEntry;
}

export interface PrunePlan {
  /** Every index file found (readable); a new index, if written, supersedes them all. */
  indexFiles: string[];
  /** Index files some other readable index file supersedes: left over, deletable as they are. */
  supersededIndexFiles: string[];
  packsBefore: number;
  bytesBefore: number;
  usedBlobs: number;
  /** Every used blob id: the new index must still locate each one that is not missing. */
  used: Set<string>;
  /** Used blobs no index locates, or whose pack is gone. */
  missing: string[];
  /** Packs with no used blob, and objects in data/ that no index names. */
  remove: { id: string; key: string; size: number; blobs: number }[];
  /** Packs whose used blobs move to new packs (mostly unused, or small ones compacted). */
  repack: PackPlan[];
  /** Packs left as they are, with their index entries. */
  keep: PackEntry[];
  /** Packs with used blobs that are damaged (size differs from the index): kept, never repacked. */
  damagedPacks: string[];
}

export interface PlanOptions {
  /** After prune, at most this share of the kept packs' bytes may be unused (default 0.1). */
  maxUnusedFraction?: number;
}

/** Packs smaller than this share of the pack size are compacted together, per blob type. */
const SMALL_PACK_SHARE = 4;

/** What prune keeps of the tree list blobs it read (listCache). */
const LIST_CACHE_BYTES = 64 * 1024 * 1024;

/**
 * The ids of every blob the snapshots use: their tree blobs and every content blob of every file.
 * A snapshot whose file list cannot be read makes prune refuse: it cannot know what that snapshot
 * still needs.
 *
 * Thousands of snapshots share almost all their tree blobs, so each tree blob is read once per
 * distinct state it is entered in: the bytes of the line left unfinished by the blobs before it.
 * (The same blob after the same unfinished line yields the same nodes and leaves the same rest.)
 */
export async function usedBlobs(repo: Repository, snapshots: SnapshotRecord[], listCacheBytes = LIST_CACHE_BYTES): Promise<Set<string>> {
  const used = new Set<string>();
  const reader = new BlobReader(repo, new SealPool(0));
  /** sha256(carry) + tree blob id -> the carry after that blob. */
  const seen = new Map<string, Buffer>();
  const everRead = new Set<string>();
  const addLine = (line: Buffer) => {
    if (line.length === 0) return;
    const node = JSON.parse(line.toString("utf8")) as TreeNode;
    if (typeof node !== "object" || node === null) throw new RepoError("a tree line is not a node", "corrupt");
    if (node.type !== "file" || node.content === undefined) return;
    if (!Array.isArray(node.content)) throw new RepoError(`${node.path}: content is not a list`, "corrupt");
    for (const c of node.content) used.add(String(c).toLowerCase());
  };
  const lists = listCache(reader, listCacheBytes);
  for (const { id, snapshot } of snapshots) {
    try {
      for (const t of snapshot.treeList ?? []) used.add(t);
      const leaves = await treeLeaves(lists, snapshot);
      // Tree blobs never read before are fetched in batches (one ranged read per run of them).
      const fresh = [...new Set(leaves.filter((t) => !everRead.has(t)))];
      const fetched = new Map<string, Buffer>();
      for (let i = 0; i < fresh.length; i += 16) {
        const batch = fresh.slice(i, i + 16);
        (await reader.read(batch)).forEach((b, k) => fetched.set(batch[k], b));
      }
      let carry: Buffer = Buffer.alloc(0);
      for (const t of leaves) {
        used.add(t.toLowerCase());
        const key = `${sha256Hex(carry)}:${t}`;
        const known = seen.get(key);
        if (known) {
          carry = known;
          continue;
        }
        const blob = fetched.get(t) ?? (await reader.read([t]))[0];
        everRead.add(t);
        // "\n" never occurs inside a multi-byte UTF-8 sequence: cutting at it is safe.
        const bytes = Buffer.concat([carry, blob]);
        let start = 0;
        for (let nl = bytes.indexOf(10); nl >= 0; nl = bytes.indexOf(10, start)) {
          addLine(bytes.subarray(start, nl));
          start = nl + 1;
        }
        carry = Buffer.from(bytes.subarray(start));
        seen.set(key, carry);
      }
      addLine(carry);
    } catch (err) {
      if (!(err instanceof RepoError) && !(err instanceof SyntaxError)) throw err;
      throw new RepoError(
        `snapshot ${id.slice(0, 8)} cannot be read (${err.message}), so prune cannot tell which data it needs; nothing was deleted (run \`pi-guard check --read-data\`; \`pi-guard forget ${id.slice(0, 8)}\` gives it up)`,
        "corrupt",
      );
    }
  }
  return used;
}

/**
 * The tree list blobs (docs/FORMAT.md §8) through a cache: snapshots in time order share most of
 * them, so each is read about once. Bounded: emptied once it holds `bound` bytes.
 */
function listCache(reader: BlobReader, bound: number): TreeBlobSource {
  const cache = new Map<string, Buffer>();
  let bytes = 0;
  return {
    typeOf: (id) => reader.typeOf(id),
    async *batches(ids) {
      // Emptied before, never during, a snapshot's read: every id asked for is then in it.
      if (bytes > bound) {
        cache.clear();
        bytes = 0;
      }
      const missing = [...new Set(ids.filter((id) => !cache.has(id)))];
      for (let i = 0; i < missing.length; i += 64) {
        const batch = missing.slice(i, i + 64);
        (await reader.read(batch)).forEach((b, k) => {
          cache.set(batch[k], b);
          bytes += b.length;
        });
      }
      yield ids.map((id) => cache.get(id)!);
    },
  };
}

/** Read every index file; one that cannot be read and is not superseded stops prune. */
export async function readIndexFiles(repo: Repository): Promise<{ files: { id: string; index: IndexFile }[]; superseded: Set<string> }> {
  const files: { id: string; index: IndexFile }[] = [];
  const unreadable: { id: string; error: string }[] = [];
  for await (const info of repo.target.list("index")) {
    const id = info.key.slice("index/".length);
    try {
      files.push({ id, index: await repo.readIndexFile(id) });
    } catch (err) {
      if (!(err instanceof RepoError)) throw err;
      unreadable.push({ id, error: err.message });
    }
  }
  const superseded = new Set(files.flatMap((f) => f.index.supersedes));
  const bad = unreadable.filter((u) => !superseded.has(u.id));
  if (bad.length) {
    throw new RepoError(`${bad[0].error}${bad.length > 1 ? ` (and ${bad.length - 1} more index files)` : ""}; nothing was deleted: run \`pi-guard repair index\` first`, "corrupt");
  }
  for (const u of unreadable) superseded.add(u.id);
  return { files, superseded };
}

export async function planPrune(repo: Repository, snapshots: SnapshotRecord[], opts: PlanOptions = {}): Promise<PrunePlan> {
  const { files, superseded } = await readIndexFiles(repo);
  const present = new Map<string, { key: string; size: number }>();
  for await (const obj of repo.target.list("data")) {
    const id = obj.key.split("/").pop()!;
    // Only names this format makes: anything else in data/ is not ours to delete.
    if (/^[0-9a-f]{64}$/.test(id) && packKey(id) === obj.key) present.set(id, { key: obj.key, size: obj.size });
  }
  const used = await usedBlobs(repo, snapshots);
  const index = repo.index;

  const packs = new Map<string, PackEntry>();
  for (const f of files) {
    if (superseded.has(f.id)) continue;
    for (const p of f.index.packs) if (!packs.has(p.id)) packs.set(p.id, p);
  }
  const missing = [...used].filter((id) => {
    const loc = index.get(id);
    return !loc || !present.has(loc.pack);
  });
  // The in-memory index must agree with the index files read here: a used blob located in a
  // pack they do not name would make that pack look unused.
  for (const id of used) {
    const loc = index.get(id);
    if (loc && present.has(loc.pack) && !packs.has(loc.pack)) {
      throw new RepoError(`blob ${id.slice(0, 12)} is in pack ${loc.pack.slice(0, 12)}, which no index file names; nothing was deleted: run \`pi-guard repair index\` first`, "corrupt");
    }
  }

  const plan: PrunePlan = {
    indexFiles: files.map((f) => f.id),
    supersededIndexFiles: files.map((f) => f.id).filter((id) => superseded.has(id)),
    packsBefore: present.size,
    bytesBefore: [...present.values()].reduce((n, p) => n + p.size, 0),
    usedBlobs: used.size,
    used,
    missing,
    remove: [],
    repack: [],
    keep: [],
    damagedPacks: [],
  };
  for (const [id, obj] of present) {
    if (!packs.has(id)) plan.remove.push({ id, key: obj.key, size: obj.size, blobs: 0 });
  }
  const partly: PackPlan[] = [];
  const whole: PackPlan[] = [];
  for (const pack of packs.values()) {
    const obj = present.get(pack.id);
    if (!obj) continue; // its blobs are counted as missing if used
    const usedHere = pack.blobs.filter((b) => used.has(b.id) && index.get(b.id)?.pack === pack.id);
    if (usedHere.length === 0) {
      plan.remove.push({ id: pack.id, key: obj.key, size: obj.size, blobs: pack.blobs.length });
      continue;
    }
    if (obj.size !== pack.size) {
      plan.damagedPacks.push(pack.id);
      plan.keep.push(pack);
      continue;
    }
    const p: PackPlan = { id: pack.id, size: pack.size, used: usedHere, blobs: pack.blobs.length, unusedBytes: unusedBytes(pack, used, index), type: pack.blobs[0]?.type, entry: pack };
    (usedHere.length === pack.blobs.length ? whole : partly).push(p);
  }

  // Repack the most wasteful partly used packs until what stays unused is within the limit.
  const fraction = opts.maxUnusedFraction ?? 0.1;
  partly.sort((a, b) => b.unusedBytes - a.unusedBytes || a.id.localeCompare(b.id));
  let kept = [...partly, ...whole].reduce((n, p) => n + p.size, 0);
  let unused = partly.reduce((n, p) => n + p.unusedBytes, 0);
  const stay: PackPlan[] = [...whole];
  for (const p of partly) {
    if (unused > fraction * kept) {
      plan.repack.push(p);
      unused -= p.unusedBytes;
      kept -= p.unusedBytes;
    } else stay.push(p);
  }
  // Compact small packs of one blob type when there are at least two, counting the new pack that
  // repacking writes anyway: one pack instead of many, and a second prune has nothing left to do.
  const small = repo.config.packSize / SMALL_PACK_SHARE;
  const byType = new Map<BlobType | undefined, PackPlan[]>();
  for (const p of stay) {
    if (p.size >= small) continue;
    const list = byType.get(p.type) ?? [];
    list.push(p);
    byType.set(p.type, list);
  }
  const compacted = new Set<string>();
  for (const [type, list] of byType) {
    const repackedOfType = plan.repack.some((p) => p.type === type) ? 1 : 0;
    if (list.length + repackedOfType < 2) continue;
    for (const p of list) compacted.add(p.id);
    plan.repack.push(...list);
  }
  for (const p of stay) if (!compacted.has(p.id)) plan.keep.push(p.entry);
  plan.repack.sort((a, b) => a.id.localeCompare(b.id));
  plan.remove.sort((a, b) => a.id.localeCompare(b.id));
  return plan;
}

/** Bytes of frames holding no used blob, plus the unused share (by raw length) of mixed frames. */
function unusedBytes(pack: PackEntry, used: Set<string>, index: Repository["index"]): number {
  const frames = new Map<number, { length: number; raw: number; usedRaw: number }>();
  for (const b of pack.blobs) {
    let f = frames.get(b.offset);
    if (!f) frames.set(b.offset, (f = { length: b.length, raw: 0, usedRaw: 0 }));
    f.raw += b.rawLength;
    if (used.has(b.id) && index.get(b.id)?.pack === pack.id) f.usedRaw += b.rawLength;
  }
  let framed = 0;
  let unused = 0;
  for (const f of frames.values()) {
    framed += f.length;
    unused += f.raw === 0 ? f.length : f.length * (1 - f.usedRaw / f.raw);
  }
  // The pack header shrinks with the blobs: counted by the same share as the frames.
  const header = pack.size - framed;
  return Math.round(unused + (framed > 0 ? (header * unused) / framed : 0));
}
