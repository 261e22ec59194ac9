import { createHash, randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import type { Target } from "../targets/target.js";
import { Chunker, DATA_CHUNKER, LIST_CHUNKER, TREE_CHUNKER, gearTable, type ChunkerParams } from "./chunker.js";
import { blobId, decrypt, encrypt } from "./crypto.js";
import { decode, decodePieces, encode } from "./compress.js";
import { holds, int, object, ShapeProblem, string } from "./shape.js";
import { RepoError } from "./errors.js";
import { listNames, ObjectExists, ObjectNotFound } from "../targets/target.js";
import { IndexFiles } from "./index-files.js";
import { BatchBuilder, MetaCache } from "./meta-cache.js";
import { collectGrown } from "./collect.js";
import { agentRootPath, HeadsBuilder, ParentHeads } from "./parent-heads.js";
import {
  AAD,
  CONFIG_KEY,
  FORMAT_VERSION,
  MAX_TREE_LISTS,
  SNAPSHOT_VERSION,
  decodeIndex,
  encodeIndex,
  walkEncodedIndex,

  indexKey,
  snapshotKey,
  type IndexFile,
  type PackEntry,
  type Snapshot,
} from "./format.js";
import { addKey, newMasterKey, unlock, type Credentials, type MasterKey } from "./keys.js";
import { MemoryIndex } from "./memory-index.js";
import { scanUnindexedPacks } from "./pack-scan.js";
import { CONFIG_BOUNDS, listSnapshotIds, readRepoConfig } from "./peek.js";
import { decodeRow, encodeRow, rowLayout, type SnapshotRow } from "./snapshot-rows.js";
import { RowSpool } from "./row-spool.js";
import { NameSlots } from "./name-slots.js";
import { listFingerprint, readRendered, renderRows, rowsInMemory, writeRendered, type RenderedListing, type RowSource } from "./rendered-listing.js";
import { checkedListingEntries, decodeListing, encodeListing, LISTING_AAD, listingBatch, listingKey, MAX_LISTINGS } from "./snapshot-listing.js";

export interface RepoConfig {
  format: "pi-guard";
  version: number;
  id: string;
  created: string;
  /** `list` cuts the tree list (docs/FORMAT.md §2, §8); configs written before it lack it and use LIST_CHUNKER. */
  chunker: { data: ChunkerParams; tree: ChunkerParams; list?: ChunkerParams };
  /** Packs are closed once they reach this many bytes. */
  packSize: number;
}

export interface SnapshotRecord {
  id: string;
  snapshot: Snapshot;
}

/**
 * What choosing a snapshot by time, id or "latest" needs of it, and what the `snapshots` table
 * shows (docs/FORMAT.md §13, briefs.log). The sizes are null for a snapshot without a summary.
 */
export type SnapshotBrief = Pick<Snapshot, "time" | "host" | "tags" | "imported"> & {
  files: number | null;
  bytesTotal: number | null;
  bytesStored: number | null;
};

export interface SnapshotBriefRecord {
  id: string;
  snapshot: SnapshotBrief;
}

/**
 * Snapshot bodies read from the repository, on their way to the metadata cache: appended a bounded
 * batch at a time, each oldest first (so that the next listing finds them nearly sorted).
 */
class FreshBodies {
  private readonly batch: BatchBuilder;
  private times: string[] = [];

  constructor(cache: MetaCache | undefined) {
    this.batch = new BatchBuilder(cache, "snapshots");
  }

  /** `body` is copied. */
  add(id: string, body: Buffer, time: string): void {
    if (!ID_HEX.test(id)) return;
    this.batch.add(id, body);
    this.times.push(String(time));
  }

  get full(): boolean {
    return this.batch.full;
  }

  async flush(): Promise<void> {
    const times = this.times;
    this.times = [];
    await this.batch.put((count) => Int32Array.from({ length: count }, (_, i) => i).sort((a, b) => (times[a] < times[b] ? -1 : times[a] > times[b] ? 1 : 0)));
  }
}

/**
 * One shared copy of equal values (by their JSON): 100,000 snapshots of one machine carry the
 * same host, roots and tags, and a copy each was a third of a cold listing's heap.
 */
function interner(): <T>(value: T) => T {
  const seen = new Map<string, unknown>();
  return <T>(value: T): T => {
    const key = JSON.stringify(value) ?? "undefined";
    const got = seen.get(key);
    if (got !== undefined) return got as T;
    seen.set(key, value);
    return value;
  };
}

const countOrNull = (n: unknown): number | null => (typeof n === "number" && Number.isFinite(n) ? n : null);

function briefOf(s: Snapshot): SnapshotBrief {
  const sum = s.summary as Partial<Snapshot["summary"]> | undefined;
  const brief: SnapshotBrief = { time: s.time, host: s.host, tags: s.tags, files: countOrNull(sum?.files), bytesTotal: countOrNull(sum?.bytesTotal), bytesStored: countOrNull(sum?.bytesStored) };
  if (s.imported !== undefined) brief.imported = s.imported;
  return brief;
}

/** A cached brief, checked field by field: an authentic but odd record is rebuilt, not trusted. */
function parseBrief(body: Buffer): SnapshotBrief | undefined {
  try {
    const b = JSON.parse(body.toString("utf8")) as Partial<SnapshotBrief> | null;
    if (!b || typeof b !== "object" || typeof b.time !== "string" || typeof b.host !== "string") return undefined;
    if (!Array.isArray(b.tags) || !b.tags.every((t) => typeof t === "string")) return undefined;
    if (b.imported !== undefined && typeof b.imported !== "string") return undefined;
    // A brief without the sizes was written by an earlier build: rebuilt, not shown as unknown.
    for (const k of ["files", "bytesTotal", "bytesStored"] as const) if (b[k] !== null && (typeof b[k] !== "number" || !Number.isFinite(b[k]))) return undefined;
    return b as SnapshotBrief;
  } catch {
    return undefined;
  }
}

/** Plain code-unit order: the times are ISO strings, and localeCompare cost 0.8 s for 100,000. */
function byTime(a: { id: string; snapshot: { time: string } }, b: { id: string; snapshot: { time: string } }): number {
  const x = String(a.snapshot.time);
  const y = String(b.snapshot.time);
  return x < y ? -1 : x > y ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

export const DEFAULT_PACK_SIZE = 16 * 1024 * 1024;

/** The metadata cache's one record of kind "listing": what `uncoveredCount` reads. */
const LISTING_STATE = "0".repeat(64);

/** Test hook: PI_GUARD_TEST_LISTING_PAUSE=<phase> stops there, holding the writer's lock, until killed. */
async function pauseForTest(phase: string): Promise<void> {
  if (process.env.PI_GUARD_TEST_LISTING_PAUSE !== phase) return;
  process.stderr.write(`pi-guard: paused at ${phase}\n`);
  await new Promise(() => setInterval(() => undefined, 1 << 30));
}

/** Names of content-addressed objects; only these are cached (a foreign name is read, never kept). */
const ID_HEX = /^[0-9a-f]{64}$/;

function parseSnapshot(body: Buffer, id: string): Snapshot {
  let raw: unknown;
  try {
    raw = JSON.parse(body.toString("utf8"));
  } catch {
    throw new RepoError(`snapshot ${id.slice(0, 8)} is not valid JSON`, "corrupt");
  }
  const wrong = snapshotShapeError(raw);
  if (wrong) throw new RepoError(`snapshot ${id.slice(0, 8)} is malformed: ${wrong}`, "corrupt");
  return raw as Snapshot;
}

/**
 * What is wrong with a snapshot object's shape (docs/FORMAT.md §7), or undefined. An authentic
 * object is still hostile input (a bug of another writer, an old one): every reader after this
 * relies on these fields' types, so a snapshot that lacks them is unreadable, not a crash later.
 */
export function snapshotShapeError(raw: unknown): string | undefined {
  try {
    const s = object(raw, []);
    const version = int(s.version, ["version"]);
    // A newer form could hold its file list elsewhere: reading it as this one would misread it.
    holds(version <= SNAPSHOT_VERSION, ["version"], `${version} is newer than this pi-guard reads (${SNAPSHOT_VERSION}); upgrade pi-guard`);
    holds(Number.isFinite(Date.parse(string(s.time, ["time"]))), ["time"], "not an ISO time");
    string(s.host, ["host"]);
    const list = (v: unknown, path: string[]) => {
      holds(Array.isArray(v), path, "not a list");
      return v as unknown[];
    };
    list(s.tags, ["tags"]).forEach((t, i) => string(t, ["tags", String(i)]));
    list(s.roots, ["roots"]).forEach((r, i) => {
      const o = object(r, ["roots", String(i)]);
      string(o.name, ["roots", String(i), "name"]);
      string(o.path, ["roots", String(i), "path"]);
    });
    if (version >= 2) {
      holds(s.tree === undefined, ["tree"], "not allowed in version 2 (the file list is in treeList)");
      const lists = list(s.treeList, ["treeList"]);
      holds(lists.length <= MAX_TREE_LISTS, ["treeList"], `more than ${MAX_TREE_LISTS} ids`);
      lists.forEach((t, i) => string(t, ["treeList", String(i)], ID_HEX, "not a blob id"));
    } else list(s.tree, ["tree"]).forEach((t, i) => string(t, ["tree", String(i)]));
    object(s.summary, ["summary"]);
    for (const k of ["parent", "imported", "user", "program"]) if (s[k] !== undefined) string(s[k], [k]);
    if (s.agents !== undefined) for (const [k, v] of Object.entries(object(s.agents, ["agents"]))) string(v, ["agents", k]);
    for (const k of ["skipped", "changedWhileRead", "special"]) if (s[k] !== undefined) list(s[k], [k]);
    return undefined;
  } catch (err) {
    if (err instanceof ShapeProblem) return err.describe("snapshot");
    throw err;
  }
}

export function sha256Hex(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

export class Repository {
  index = new MemoryIndex();
  /** Listing objects (docs/FORMAT.md §7a) the last read of listing/ could not use. */
  unreadableListings: { id: string; error: string }[] = [];
  /** Snapshots the last listSnapshots() could not read. */
  unreadableSnapshots: { id: string; error: string }[] = [];
  /** Index files the last loadIndex() could not read (and no readable index supersedes). */
  unreadableIndexes: { id: string; error: string }[] = [];
  /** Packs in no readable index, found by the last loadIndex() from their own headers. */
  recoveredPacks = new Set<string>();
  /** Packs in no readable index whose header could not be read either. */
  unreadablePacks: { id: string; key: string; size: number; error: string }[] = [];
  /** Where the engine reports what it skipped and carried on without (the CLI prints to stderr). */
  onWarning: (message: string) => void = () => undefined;
  readonly dataChunker: Chunker;
  readonly treeChunker: Chunker;
  readonly listChunker: Chunker;
  /**
   * The local folder BlobWriter builds packs in. For a folder target, its tmp/ (same file system:
   * handing a pack over is a rename); for others a per-repository folder the engine sets in the
   * data dir (useLocalStaging in src/engine.ts).
   */
  stagingDir: string;
  /** The local metadata cache, when the repository was opened with a data dir. */
  cache?: MetaCache;
  private readonly meta = new IndexFiles();
  private indexLoaded = false;
  private heads = new ParentHeads(undefined);

  private constructor(
    readonly target: Target,
    readonly config: RepoConfig,
    readonly key: MasterKey,
    readonly keyId: string,
  ) {
    const gear = gearTable(key.chunkerSeed);
    this.dataChunker = new Chunker(config.chunker.data, gear);
    this.treeChunker = new Chunker(config.chunker.tree, gear);
    this.listChunker = new Chunker(config.chunker.list ?? LIST_CHUNKER, gear);
    this.stagingDir = target.localPath ? path.join(target.localPath, "tmp") : path.join(os.tmpdir(), `pi-guard-staging-${config.id}`);
  }

  /** Create a repository. The key is written before the config, so a crash leaves no half-made repo. */
  static async init(target: Target, cred: Credentials, opts: { packSize?: number } = {}): Promise<Repository> {
    if (await target.head(CONFIG_KEY)) {
      throw new RepoError(`a repository already exists at ${target.location}`, "exists");
    }
    const packSize = opts.packSize ?? DEFAULT_PACK_SIZE;
    if (packSize < CONFIG_BOUNDS.packMin || packSize > CONFIG_BOUNDS.packMax) throw new RepoError(`pack size ${packSize} is outside ${CONFIG_BOUNDS.packMin}..${CONFIG_BOUNDS.packMax}`, "usage");
    const master = newMasterKey();
    const keyId = await addKey(target, master, cred);
    const config: RepoConfig = {
      format: "pi-guard",
      version: FORMAT_VERSION,
      // Random, not derived from a key: the id is plaintext and names caches, so it must say nothing about the keys.
      id: randomBytes(16).toString("hex"),
      created: new Date().toISOString(),
      chunker: { data: DATA_CHUNKER, tree: TREE_CHUNKER, list: LIST_CHUNKER },
      packSize,
    };
    try {
      // Conditional: of two racing inits only one may write config (the loser's key is unused).
      await target.put(CONFIG_KEY, Buffer.from(JSON.stringify(config, null, 2) + "\n"), { ifAbsent: true });
    } catch (err) {
      if (err instanceof ObjectExists) throw new RepoError(`a repository already exists at ${target.location}`, "exists");
      throw err;
    }
    return new Repository(target, config, master, keyId);
  }

  /** `dataDir`: where the metadata cache lives (`<dataDir>/cache/<repo id>/`); without it, none. */
  static async open(target: Target, cred: Credentials, opts: { dataDir?: string } = {}): Promise<Repository> {
    const config = await readRepoConfig(target);
    if (config.version < FORMAT_VERSION) {
      throw new RepoError(
        `repository format ${config.version} is no longer supported; this pi-guard reads format ${FORMAT_VERSION} (make a new repository with \`pi-guard init\`)`,
        "corrupt",
      );
    }
    const { master, keyId } = await unlock(target, cred);
    const repo = new Repository(target, config, master, keyId);
    if (opts.dataDir) {
      // Per location too: a copy of a repository shares its id but may since have diverged (or be damaged).
      const where = createHash("sha256").update(target.location).digest("hex").slice(0, 16);
      repo.cache = new MetaCache(path.join(opts.dataDir, "cache", config.id, where), master.encryption, config.id, (m) => repo.onWarning(m));
    }
    repo.heads = new ParentHeads(repo.cache);
    return repo;
  }

  /**
   * This repository at another target that holds a byte-identical copy of its `config` and key
   * objects (a mirror, docs/FORMAT.md §14): the same master key, but its own index, packs, locks and
   * metadata cache. The caller checks that `target` is such a copy (src/repo/replicate.ts).
   */
  atTarget(target: Target, opts: { dataDir?: string } = {}): Repository {
    const repo = new Repository(target, this.config, this.key, this.keyId);
    if (opts.dataDir) {
      const where = createHash("sha256").update(target.location).digest("hex").slice(0, 16);
      repo.cache = new MetaCache(path.join(opts.dataDir, "cache", this.config.id, where), this.key.encryption, this.config.id, (m) => repo.onWarning(m));
      if (!target.localPath) repo.stagingDir = path.join(opts.dataDir, "staging", this.config.id);
    }
    repo.heads = new ParentHeads(repo.cache);
    repo.onWarning = this.onWarning;
    return repo;
  }

  /** Metadata objects (index, snapshots, locks): zstd, then AES-GCM with the object's type as associated data. */
  seal(plain: Buffer, aad: Buffer): Buffer {
    return encrypt(this.key.encryption, encode(plain), aad);
  }

  unseal(sealed: Buffer, what: string, aad: Buffer): Buffer {
    return decode(decrypt(this.key.encryption, sealed, what, aad), what);
  }

  /**
   * The bytes of a content-addressed object, checked against its name: a copy of another object
   * under this name, or an older one put back, authenticates fine but is not this object.
   */
  async getVerified(key: string, id: string, what: string): Promise<Buffer> {
    const raw = await this.target.get(key);
    if (sha256Hex(raw) !== id) throw new RepoError(`${what}: content does not match its name (damaged or replaced)`, "corrupt");
    return raw;
  }

  blobId(data: Uint8Array): string {
    return blobId(this.key.id, data).toString("hex");
  }

  /** Objects are named by the SHA-256 of their stored bytes, so anyone can verify them without the key. */
  async putContentAddressed(keyOf: (id: string) => string, sealed: Buffer): Promise<{ id: string; size: number }> {
    const id = sha256Hex(sealed);
    await this.target.put(keyOf(id), sealed, { sha256: id });
    return { id, size: sealed.length };
  }

  /**
   * The in-memory index, loaded once (`loadIndex()`), or brought up to date (`loadIndex(true)`,
   * which is `refreshIndex()`). `{ fromTarget: true }` forgets what was read and reads every index
   * file from the target, bypassing the metadata cache: `check` verifies the repository itself.
   */
  async loadIndex(opts: boolean | { fromTarget?: boolean } = false): Promise<MemoryIndex> {
    const fromTarget = typeof opts === "object" && !!opts.fromTarget;
    if (fromTarget) {
      this.meta.clear();
      this.indexLoaded = false;
    }
    if (this.indexLoaded && opts === false) return this.index;
    if (opts === false) {
      // Concurrent first loads share one refresh.
      await this.refreshIndex();
      return this.index;
    }
    return this.refreshIndex({ fromTarget });
  }

  /**
   * List index/ and read only the files not seen before (from the metadata cache when it has
   * them). When a file whose packs the in-memory index holds is gone and a live file does not name
   * all of those packs (prune or repair deleted some), the in-memory index is rebuilt from scratch:
   * a deleted pack must never stay deduplicable. One that cannot be read is skipped and reported,
   * not fatal: the packs no readable index names are then read from their own headers.
   */
  refreshIndex(opts: { fromTarget?: boolean } = {}): Promise<MemoryIndex> {
    // One at a time: two interleaved refreshes would each plan against the other's half-done work.
    const run = this.refreshing.then(() => this.refreshOnce(!!opts.fromTarget));
    this.refreshing = run.catch(() => undefined);
    return run;
  }

  private refreshing: Promise<unknown> = Promise.resolve();
  /** The index files the metadata cache was last told to keep (refreshOnce). */
  private indexRetained?: Set<string>;

  private async refreshOnce(fromTarget: boolean): Promise<MemoryIndex> {
    const { listed, fresh, newBad } = await this.readIndexListing(fromTarget);
    const plan = this.meta.plan(listed, this.index.files, { loaded: this.indexLoaded, recovered: this.recoveredPacks.size > 0 });
    if (plan.rebuild) {
      this.index = new MemoryIndex();
      this.recoveredPacks = new Set();
      this.unreadablePacks = [];
    }
    for (const id of plan.drop) this.index.files.delete(id);
    // Room for every new blob at once: growing file by file left each smaller copy as garbage.
    this.index.reserve(plan.add.reduce((n, id) => n + (this.meta.known.get(id)?.blobs ?? 0), this.index.size));
    for (const id of plan.add) {
      this.index.addEncodedIndex(fresh.get(id) ?? (await this.indexBody(id, fromTarget)), `index ${id.slice(0, 12)}`);
      this.index.files.add(id);
    }
    this.unreadableIndexes = plan.unreadable;
    if (this.unreadableIndexes.length && (plan.rebuild || newBad)) {
      for (const b of this.unreadableIndexes) this.onWarning(`skipped ${b.error}; \`pi-guard repair index\` rebuilds the index`);
      await this.indexUnindexedPacks();
    }
    // Only when a file retained before is gone: retaining loads the whole cached index (5 MB at
    // 100,000 snapshots), which is then dropped from memory, as the in-memory index has it all.
    if (!this.indexRetained || [...this.indexRetained].some((id) => !listed.has(id))) {
      await this.cache?.retain("index", listed, { rewriteWhenDead: "most" });
      this.indexRetained = listed;
    }
    await this.cache?.release("index");
    this.indexLoaded = true;
    return this.index;
  }

  /** The decoded bytes of one index file, structurally checked; from the cache if it has it. */
  private async indexBody(id: string, fromTarget: boolean): Promise<Buffer> {
    const what = `index ${id.slice(0, 12)}`;
    const cached = fromTarget || !ID_HEX.test(id) ? undefined : await this.cache?.get("index", id);
    if (cached) {
      try {
        walkEncodedIndex(cached, what);
        return cached;
      } catch {
        // authentic but not an index this version reads: fetch it again
      }
    }
    const body = await this.fetchIndexBody(id);
    walkEncodedIndex(body, what);
    if (ID_HEX.test(id)) await this.cache?.put("index", [[id, body]], { owned: true });
    return body;
  }

  /**
   * Read the files of index/ not seen before. A file that vanishes between the listing and the
   * read was replaced by a consolidation (or removed by prune): list again, rather than take it
   * for damage and scan every pack.
   */
  private async readIndexListing(fromTarget: boolean): Promise<{ listed: Set<string>; fresh: Map<string, Buffer>; newBad: boolean }> {
    const fresh = new Map<string, Buffer>();
    let newBad = false;
    for (let attempt = 0; ; attempt++) {
      const names = await listNames(this.target, "index");
      const vanished = new Set<string>();
      for (const id of names) {
        if (this.meta.known.has(id) || this.meta.bad.has(id)) continue;
        try {
          const body = await this.indexBody(id, fromTarget);
          this.meta.remember(id, walkEncodedIndex(body, `index ${id.slice(0, 12)}`));
          fresh.set(id, body);
        } catch (err) {
          if (err instanceof ObjectNotFound) {
            vanished.add(id);
            continue;
          }
          if (!(err instanceof RepoError)) throw err;
          this.meta.bad.set(id, err.message);
          newBad = true;
        }
      }
      if (!vanished.size || attempt >= 4) return { listed: new Set(names.filter((n) => !vanished.has(n))), fresh, newBad };
    }
  }

  /**
   * Keep index/ small (docs/FORMAT.md §6): delete files left over from an interrupted
   * consolidation, and when CONSOLIDATE_FANOUT live files share a size tier, write one file that
   * supersedes them, read it back, and only then delete them. Safe with other writers doing the
   * same at once: two files may then name the same packs, which readers accept.
   * `listed`: index/ was listed moments ago (a snapshot lists it when it starts, then adds its own
   * file): when the files known since make no group and leave nothing to delete, there is no
   * listing (one request less per snapshot); what other writers added meanwhile is seen by the
   * next run, which lists index/ when it starts.
   */
  async consolidateIndex(opts: { listed?: boolean } = {}): Promise<{ written?: string; deleted: string[] }> {
    const live = () => [...this.index.files].filter((id) => this.meta.known.has(id));
    if (opts.listed && this.meta.coveredLeftovers().length === 0 && !this.meta.consolidationGroup(live())) return { deleted: [] };
    await this.refreshIndex();
    const deleted: string[] = [];
    for (const id of this.meta.coveredLeftovers()) {
      await this.target.delete(indexKey(id));
      deleted.push(id);
    }
    const group = this.meta.consolidationGroup(live());
    if (!group) return { deleted };
    const packs = new Map<string, PackEntry>();
    try {
      for (const id of group) for (const pack of decodeIndex(await this.indexBody(id, false), `index ${id.slice(0, 12)}`).packs) if (!packs.has(pack.id)) packs.set(pack.id, pack);
    } catch (err) {
      // Another writer consolidated these first and deleted one: its file stands in for ours.
      if (err instanceof ObjectNotFound) return { deleted };
      throw err;
    }
    const merged: IndexFile = { supersedes: group, packs: [...packs.values()] };
    const body = encodeIndex(merged);
    const saved = await this.putContentAddressed(indexKey, this.seal(body, AAD.index));
    const back = decodeIndex(await this.fetchIndexBody(saved.id), `index ${saved.id.slice(0, 12)}`);
    const named = new Set(back.packs.map((p) => p.id));
    if (![...packs.keys()].every((p) => named.has(p))) throw new RepoError(`index ${saved.id.slice(0, 12)} does not read back as written`, "corrupt");
    this.meta.rememberIndex(saved.id, back);
    await this.cache?.put("index", [[saved.id, body]], { owned: true });
    this.index.files.add(saved.id);
    for (const id of group) {
      await this.target.delete(indexKey(id));
      this.index.files.delete(id);
      this.meta.known.delete(id);
      deleted.push(id);
    }
    return { written: saved.id, deleted };
  }

  /** Add every pack that no loaded index names, from its own header. */
  async indexUnindexedPacks(): Promise<void> {
    const scan = await scanUnindexedPacks(this, (id) => this.index.packs.has(id));
    for (const pack of scan.found) {
      this.index.addPack(pack);
      this.recoveredPacks.add(pack.id);
    }
    this.unreadablePacks = scan.unreadable;
    if (scan.found.length) this.onWarning(`read ${scan.found.length} pack(s) that no readable index names from their own headers`);
    for (const p of scan.unreadable) this.onWarning(`skipped ${p.error}`);
  }

  async readIndexFile(id: string): Promise<IndexFile> {
    const what = `index ${id.slice(0, 12)}`;
    return decodeIndex(await this.fetchIndexBody(id), what);
  }

  /** The decoded payload of an index file, from the target, checked against its name. */
  private async fetchIndexBody(id: string): Promise<Buffer> {
    const what = `index ${id.slice(0, 12)}`;
    const raw = await this.getVerified(indexKey(id), id, what);
    return this.unseal(raw, what, AAD.index);
  }

  async saveIndex(index: IndexFile): Promise<{ id: string; size: number }> {
    const body = encodeIndex(index);
    const saved = await this.putContentAddressed(indexKey, this.seal(body, AAD.index));
    this.index.files.add(saved.id);
    for (const pack of index.packs) this.index.addPack(pack);
    this.meta.rememberIndex(saved.id, index);
    await this.cache?.put("index", [[saved.id, body]], { owned: true });
    return saved;
  }

  async saveSnapshot(snapshot: Snapshot): Promise<string> {
    const body = Buffer.from(JSON.stringify(snapshot));
    const id = (await this.putContentAddressed(snapshotKey, this.seal(body, AAD.snapshot))).id;
    await this.cache?.put("snapshots", [[id, body]]);
    await this.cache?.put("briefs", [[id, Buffer.from(JSON.stringify(briefOf(snapshot)))]]);
    await this.cache?.put("rows", [[id, encodeRow(id, snapshot)]]);
    await this.heads.record([{ id, snapshot }]);
    await this.noteUncovered();
    return id;
  }

  async loadSnapshot(id: string): Promise<Snapshot> {
    const cached = await this.cachedSnapshot(id);
    if (cached) return cached;
    const body = await this.fetchSnapshotBody(id);
    const snapshot = parseSnapshot(body, id);
    if (ID_HEX.test(id)) await this.cache?.put("snapshots", [[id, body]]);
    return snapshot;
  }

  private async cachedSnapshot(id: string): Promise<Snapshot | undefined> {
    const body = await this.cache?.get("snapshots", id);
    if (!body) return undefined;
    try {
      return parseSnapshot(body, id);
    } catch {
      return undefined; // authentic but unparsable: fetch it again
    }
  }

  private async fetchSnapshotBody(id: string): Promise<Buffer> {
    const what = `snapshot ${id.slice(0, 8)}`;
    return this.unseal(await this.getVerified(snapshotKey(id), id, what), what, AAD.snapshot);
  }

  /**
   * The newest snapshot of `host` with these roots that is no import and no suspect loss, from
   * what this machine's processes recorded (the metadata cache), without listing snapshots/; each
   * candidate is checked to still exist. `null`: nothing recorded, list them all instead.
   */
  async latestSnapshotFor(host: string, roots: unknown): Promise<SnapshotRecord | null> {
    return this.firstLiveHead(await this.heads.candidates(host, roots), (s) => s.host === host && JSON.stringify(s.roots) === JSON.stringify(roots));
  }

  /**
   * As latestSnapshotFor, the newest snapshot of `host` whose agent root is `agentPath`, whatever
   * its other roots, if it is newer than `than` (snapshot/snapshotter.ts findBases); null when
   * none is recorded. Call it after latestSnapshotFor, which read the record: nothing is read
   * again, and no snapshot either unless a newer one is recorded.
   */
  async newerSnapshotOfAgent(host: string, agentPath: string, than: SnapshotRecord): Promise<SnapshotRecord | null> {
    const ids = await this.heads.agentCandidates(host, agentPath, than.snapshot.time);
    return this.firstLiveHead(ids, (s) => s.host === host && agentRootPath(s.roots) === agentPath && s.time > than.snapshot.time);
  }

  private async firstLiveHead(ids: string[], fits: (s: Snapshot) => boolean): Promise<SnapshotRecord | null> {
    for (const id of ids) {
      try {
        // From the target, not the cache: one read proves it still exists (not forgotten since),
        // and loading the cached snapshots would cost more than it saves here.
        const snapshot = parseSnapshot(await this.fetchSnapshotBody(id), id);
        if (fits(snapshot)) return { id, snapshot };
      } catch (err) {
        if (!(err instanceof RepoError) && !(err instanceof ObjectNotFound)) throw err;
      }
    }
    return null;
  }

  /**
   * All readable snapshots, oldest first. A damaged snapshot object must not take the others down
   * with it: it is left out of the list and recorded in `unreadableSnapshots` (check reports it).
   */
  async listSnapshots(opts: { fromTarget?: boolean } = {}): Promise<SnapshotRecord[]> {
    return this.listProjected(opts, (id, snapshot) => ({ id, snapshot }));
  }

  /**
   * From a full listing, the newest snapshots of each host and roots, recorded for
   * latestSnapshotFor (parent-heads.ts); and of those, the ids of the newest of `host` with exactly
   * `roots` (the parent) and with the agent root `agent` (the baseline), which are no import and no
   * suspect loss. Each snapshot is folded in as it is parsed: a cold first snapshot at 100,000
   * keeps nothing per snapshot.
   */
  async listParentHeads(host: string, roots: unknown, agent: string | undefined): Promise<{ parent?: string; baseline?: string }> {
    const heads = new HeadsBuilder();
    await this.listEach({ unordered: true }, (id, snapshot) => heads.add(id, snapshot));
    await this.heads.rebuild(heads);
    return heads.newest(host, roots, agent);
  }

  /**
   * listSnapshots, each snapshot turned into what the caller keeps as soon as it is parsed
   * (listEach), then put in time order.
   */
  private async listProjected<R>(opts: { fromTarget?: boolean; listed?: string[] }, project: (id: string, snapshot: Snapshot) => R): Promise<R[]> {
    const found: R[] = [];
    const { order } = await this.listEach(opts, (id, snapshot) => void found.push(project(id, snapshot)));
    return Array.from(order, (k) => found[k]);
  }

  /**
   * Every readable snapshot, each given to `visit` once, as soon as it is parsed (the k-th call is
   * snapshot k), and read as a stream: the cache one batch at a time, the listing objects one at a
   * time, and what was fetched recorded in the cache in bounded batches as it comes. What is kept
   * per snapshot is its name and time (for `order`: k of each, oldest first), unless `unordered`,
   * and what `visit` keeps: at 100,000 snapshots, an object or two per snapshot were most of a cold
   * listing's heap.
   */
  private async listEach(
    opts: { fromTarget?: boolean; listed?: string[]; unordered?: boolean },
    visit: (id: string, snapshot: Snapshot) => void,
  ): Promise<{ order: Int32Array; ids: string[]; times: string[] }> {
    this.unreadableSnapshots = [];
    // `listed`: what snapshots/ listed moments ago (a second copy of 100,000 names is 10 MB).
    const names = opts.listed ?? (await listSnapshotIds(this.target));
    const live = new NameSlots(names);
    // seen[i]: names[i] was read. ids[k] and times[k]: the k-th read (the listed name, not the
    // cache's or a listing's copy of it).
    const seen = new Uint8Array(names.length);
    const ids: string[] = [];
    const times: string[] = [];
    let visited = 0;
    const use = (i: number, snapshot: Snapshot): void => {
      seen[i] = 1;
      if (!opts.unordered) {
        ids.push(names[i]);
        times.push(String(snapshot.time));
      }
      visited++;
      visit(names[i], snapshot);
    };
    const take = (i: number, body: Buffer): Snapshot | undefined => {
      let snapshot: Snapshot;
      try {
        snapshot = parseSnapshot(body, names[i]);
      } catch {
        return undefined; // authentic but unparsable: read the object itself
      }
      use(i, snapshot);
      return snapshot;
    };
    let dead = false;
    let untidy = false;
    if (this.cache && !opts.fromTarget) {
      // Written oldest first, so the sort below has little to do. A name may come twice (the same
      // bytes: names are content hashes); the first that parses counts.
      ({ untidy } = await this.cache.scan("snapshots", (name, body) => {
        const i = live.get(name);
        if (i === undefined) dead = true;
        else if (!seen[i]) take(i, body);
      }));
    }
    const fresh = new FreshBodies(this.cache);
    // Many not cached (a new machine, a deleted cache): the listing objects hold most of them (§7a).
    const listed = !opts.fromTarget && names.length - visited >= listingBatch();
    if (listed) {
      await this.eachListing(async (entries) => {
        for (const [id, body] of entries) {
          const i = live.get(id);
          if (i === undefined || seen[i]) continue;
          const snapshot = take(i, body);
          if (snapshot) fresh.add(names[i], body, snapshot.time);
          if (fresh.full) await fresh.flush();
        }
      });
    }
    let fetchedOneByOne = 0;
    for (let i = 0; i < names.length; i++) {
      if (seen[i]) continue;
      const id = names[i];
      try {
        fetchedOneByOne++;
        const body = await this.fetchSnapshotBody(id);
        const snapshot = parseSnapshot(body, id);
        use(i, snapshot);
        fresh.add(id, body, snapshot.time);
        if (fresh.full) await fresh.flush();
      } catch (err) {
        if (err instanceof ObjectNotFound) continue; // deleted (forget) between the listing and the read
        if (!(err instanceof RepoError)) throw err;
        this.unreadableSnapshots.push({ id, error: err.message });
      }
    }
    await fresh.flush();
    // Plain code-unit order, as byTime: the times are ISO strings, and localeCompare cost 0.8 s for 100,000.
    const order = Int32Array.from(times, (_, k) => k).sort((a, b) => (times[a] < times[b] ? -1 : times[a] > times[b] ? 1 : ids[a] < ids[b] ? -1 : ids[a] > ids[b] ? 1 : 0));
    // What the caller builds next (rows, briefs, heads) starts without the listing's garbage: the
    // last listing object and cache batch are 12 MB off the heap, which no heap growth makes V8 collect.
    collectGrown(0);
    if (listed) await this.setUncovered(fetchedOneByOne);
    // Not known yet (a new cache): no more than all of them are outside a listing. An upper bound
    // only brings the next real count (consolidateListing) sooner, and spares a snapshot that
    // follows the two listings it would make to find fewer than listingBatch() (§7a).
    else if (!opts.fromTarget && (await this.uncoveredCount()) === undefined) await this.setUncovered(names.length);
    if (this.cache) {
      // Rewritten only when it holds what is gone, or damage: loading it whole costs what the scan saved.
      if (opts.fromTarget || dead || untidy) await this.cache.retain("snapshots", live, { rewriteWhenDead: "any" });
      await this.cache.release("snapshots");
    }
    return { order, ids, times };
  }

  /**
   * Like listSnapshots, but only what choosing and listing snapshots needs (SnapshotBrief), from
   * the cache's briefs: 100,000 of them parse in a fraction of the time of the full objects. Any
   * snapshot without a trusted brief makes this a full listing, which records the missing briefs.
   * Load the chosen one in full with `loadSnapshotFromTarget`.
   */
  async listSnapshotBriefs(): Promise<SnapshotBriefRecord[]> {
    if (!this.cache) return (await this.listSnapshots()).map((r) => ({ id: r.id, snapshot: briefOf(r.snapshot) }));
    this.unreadableSnapshots = [];
    const names = await listSnapshotIds(this.target);
    // Records keep the listed name (the scan's copy is dropped: 8 MB at 100,000), and slot[i] is
    // where names[i]'s brief is in `found` (-1: none yet). A name may come twice (two processes
    // filled the cache): the later record counts, as in the cache's own loading.
    const live = new NameSlots(names);
    const liveCount = live.size;
    const slot = new Int32Array(names.length).fill(-1);
    const found: (SnapshotBriefRecord | undefined)[] = [];
    let dead = false;
    // Scanned, not loaded: a restore at 100,000 snapshots must not hold every cached record too.
    const { untidy } = await this.cache.scan("briefs", (name, body) => {
      const i = live.get(name);
      if (i === undefined) dead = true;
      else {
        const brief = parseBrief(body);
        const record = brief && { id: names[i], snapshot: brief };
        if (slot[i] < 0) slot[i] = found.push(record) - 1;
        else found[slot[i]] = record;
      }
    });
    let out = found.filter((r) => r !== undefined).sort(byTime);
    if (out.length < liveCount) {
      // Which names have a trusted brief, by position: a Set of 100,000 ids is 11 MB of heap.
      const have = Uint8Array.from(slot, (at) => (at >= 0 && found[at] ? 1 : 0));
      found.length = 0;
      const same = interner();
      out = await this.listProjected({ listed: names }, (id, snapshot) => {
        const brief = briefOf(snapshot);
        brief.host = same(brief.host);
        brief.tags = same(brief.tags);
        return { id, snapshot: brief };
      });
      // Recorded oldest first, a bounded batch at a time: 100,000 buffers at once were 28 MB.
      const batch = new BatchBuilder(this.cache, "briefs");
      for (const r of out) {
        const i = live.get(r.id);
        if ((i !== undefined && have[i]) || !ID_HEX.test(r.id)) continue;
        batch.add(r.id, Buffer.from(JSON.stringify(r.snapshot)));
        if (batch.full) await batch.put();
      }
      await batch.put();
    }
    if (dead || untidy) await this.cache.retain("briefs", live, { rewriteWhenDead: "any" });
    await this.cache.release("briefs");
    return out;
  }

  /**
   * Every listing object that verifies (its name, its authentication, its structure), by id; the
   * others are skipped and recorded in `unreadableListings` (check reports them,
   * `repair index` replaces them). One deleted since the listing was superseded: its entries are
   * in the listing that replaced it, or are read one by one.
   */
  async readListings(): Promise<Map<string, Map<string, Buffer>>> {
    const out = new Map<string, Map<string, Buffer>>();
    await this.forEachListing((id, plain, what) => void out.set(id, decodeListing(decode(plain, what), what)));
    return out;
  }

  /**
   * Each listing object whose name and authentication verify, decrypted but not decoded, one at a
   * time. A RepoError from `use` (its structure) makes it unreadable too; `use` must not have
   * applied anything of it then.
   */
  private async forEachListing(use: (id: string, plain: Buffer, what: string) => void | Promise<void>): Promise<void> {
    this.unreadableListings = [];
    for (const id of await listNames(this.target, "listing")) {
      const what = `snapshot listing ${id.slice(0, 12)}`;
      try {
        await use(id, decrypt(this.key.encryption, await this.getVerified(listingKey(id), id, what), what, LISTING_AAD), what);
      } catch (err) {
        if (err instanceof ObjectNotFound) continue;
        if (!(err instanceof RepoError)) throw err;
        this.unreadableListings.push({ id, error: err.message });
      }
    }
  }

  private warnUnreadableListings(): void {
    for (const bad of this.unreadableListings) this.onWarning(`skipped ${bad.error}; its snapshots are read one by one (\`pi-guard repair index\` rebuilds the listing)`);
  }

  /** readListings, each one skipped named in a warning. */
  private async readListingsWarned(): Promise<Map<string, Map<string, Buffer>>> {
    const out = await this.readListings();
    this.warnUnreadableListings();
    return out;
  }

  /**
   * Each readable listing object's entries, decoded as a stream and checked for structure first
   * (a body is valid only until the next entry is asked for), one object at a time; each one
   * skipped is named in a warning.
   */
  private async eachListing(use: (entries: Iterable<[string, Buffer]>) => Promise<void>): Promise<void> {
    await this.forEachListing((_, plain, what) => use(checkedListingEntries(() => decodePieces(plain, what), what)));
    this.warnUnreadableListings();
  }

  /** How many listed snapshots no listing covers, as this machine last counted; undefined: not known. */
  private async uncoveredCount(): Promise<number | undefined> {
    const body = await this.cache?.get("listing", LISTING_STATE);
    if (!body) return undefined;
    try {
      const n = (JSON.parse(body.toString("utf8")) as { uncovered?: unknown }).uncovered;
      return typeof n === "number" && Number.isInteger(n) && n >= 0 ? n : undefined;
    } catch {
      return undefined;
    }
  }

  private async setUncovered(n: number): Promise<void> {
    await this.cache?.replace("listing", [[LISTING_STATE, Buffer.from(JSON.stringify({ uncovered: n }))]]);
  }

  /** One more snapshot no listing covers; an unknown count stays unknown (the next consolidation counts). */
  private async noteUncovered(): Promise<void> {
    const n = await this.uncoveredCount();
    if (n !== undefined) await this.setUncovered(n + 1);
  }

  /**
   * Keep a cold start cheap (docs/FORMAT.md §7a): once `listingBatch()` listed snapshots are in no
   * listing object, write one that holds them; when there would be more than MAX_LISTINGS, or
   * the listings hold more forgotten snapshots than live ones, or `merge` (repair index), write
   * one that holds every live snapshot and then delete the listings it replaces. Called with the
   * writer's lock held (snapshot: shared; forget and repair index: exclusive), after the
   * snapshot or forget is committed. The new object is read back before anything is deleted,
   * and only listings this process read are deleted.
   */
  async consolidateListing(opts: { after: "snapshot" | "forget" | "repair" }): Promise<{ written?: string; deleted: string[] }> {
    const batch = listingBatch();
    if (opts.after === "snapshot") {
      const known = await this.uncoveredCount();
      if (known !== undefined && known < batch) return { deleted: [] };
    }
    const [names, listings] = await Promise.all([listSnapshotIds(this.target), this.readListingsWarned()]);
    const live = new Set(names);
    const covered = new Map<string, Buffer>();
    let dead = 0;
    for (const entries of listings.values()) {
      for (const [id, body] of entries) {
        if (live.has(id)) covered.set(id, body);
        else dead++;
      }
    }
    const uncovered = names.filter((id) => !covered.has(id) && ID_HEX.test(id));
    const merge = opts.after === "repair" || listings.size >= MAX_LISTINGS || dead > covered.size;
    if (!merge && uncovered.length < batch) {
      await this.setUncovered(uncovered.length);
      return { deleted: [] };
    }
    const entries = new Map<string, Buffer>(merge ? covered : []);
    const cached = uncovered.length && this.cache ? await this.cache.entries("snapshots") : new Map<string, Buffer>();
    for (const id of uncovered) {
      try {
        const body = cached.get(id) ?? (await this.fetchSnapshotBody(id));
        parseSnapshot(body, id);
        entries.set(id, body);
      } catch (err) {
        // Gone (forgotten meanwhile) or unreadable (check reports it): read one by one, as now.
        if (!(err instanceof RepoError) && !(err instanceof ObjectNotFound)) throw err;
      }
    }
    if (this.cache && uncovered.length) await this.cache.release("snapshots");
    let written: string | undefined;
    if (entries.size) {
      const saved = await this.putContentAddressed(listingKey, this.seal(encodeListing(entries), LISTING_AAD));
      const what = `snapshot listing ${saved.id.slice(0, 12)}`;
      const back = decodeListing(this.unseal(await this.getVerified(listingKey(saved.id), saved.id, what), what, LISTING_AAD), what);
      if ([...entries.keys()].some((id) => !back.has(id))) throw new RepoError(`${what} does not read back as written`, "corrupt");
      written = saved.id;
    }
    await pauseForTest("listing-written");
    const deleted: string[] = [];
    // The listings read (a merge holds all their live entries), and on repair the unreadable ones too.
    const replaced = merge ? [...listings.keys(), ...(opts.after === "repair" ? this.unreadableListings.map((u) => u.id) : [])] : [];
    for (const id of replaced) {
      if (id === written) continue;
      await this.target.delete(listingKey(id));
      deleted.push(id);
    }
    await this.setUncovered(uncovered.length - (entries.size - (merge ? covered.size : 0)));
    return { written, deleted };
  }

  /**
   * Every readable snapshot as the record `snapshots --json` prints (snapshot-rows.ts), oldest
   * first, from the cache's rows: no snapshot is parsed. Any snapshot without a trusted row makes
   * this a full listing, which spools the rows (row-spool.ts) and records the missing ones in
   * rows.log. `listed`: what snapshots/ listed just now. Call `close` when done with the rows.
   */
  async listSnapshotRows(listed?: string[]): Promise<RowSource & { close(): void }> {
    this.unreadableSnapshots = [];
    const names = listed ?? (await listSnapshotIds(this.target));
    const live = new NameSlots(names);
    let rows: SnapshotRow[] = [];
    let dead = false;
    const scan = this.cache ? await this.cache.scan("rows", (id, body) => {
      if (!live.has(id)) dead = true;
      else rows.push(decodeRow(id, Buffer.from(body))!); // the scan's bytes are reused
    }) : { untidy: false };
    rows = rows.filter((r) => r !== undefined);
    const byId = new Map(rows.map((r) => [r.id, r])); // a name may come twice; the later counts
    let source: RowSource & { close(): void };
    if (byId.size < live.size) {
      rows = [];
      source = await this.spoolRows(names, new Set(byId.keys()));
    } else {
      const sorted = [...byId.values()].sort((a, b) => byTime({ id: a.id, snapshot: a }, { id: b.id, snapshot: b }));
      source = { ...rowsInMemory(sorted), close: () => undefined };
    }
    if (this.cache) {
      if (dead || scan.untidy) await this.cache.retain("rows", live, { rewriteWhenDead: "any" });
      await this.cache.release("rows");
    }
    return source;
  }

  /**
   * A full listing rendered to rows as each snapshot is parsed: the rows go to a spool, and what is
   * kept per snapshot is where its row is. The rows `have` (rows.log holds them) are not recorded again.
   */
  private async spoolRows(names: string[], have: Set<string>): Promise<RowSource & { close(): void }> {
    const spool = await RowSpool.open(this.cache);
    // Where each row is (by the order listEach read them): numbers in arrays, not an object a row.
    const at: number[] = [];
    const length: number[] = [];
    const textAt: number[] = [];
    const cut: number[] = [];
    const { order, ids, times } = await this.listEach({ listed: names }, (id, snapshot) => {
      const body = encodeRow(id, snapshot);
      const layout = rowLayout(body);
      at.push(spool.append(body));
      length.push(body.length);
      textAt.push(layout.textAt);
      cut.push(layout.cut);
    });
    // Into rows.log oldest first, a bounded batch at a time.
    const batch = new BatchBuilder(this.cache, "rows");
    for (const k of order) {
      if (have.has(ids[k]) || !ID_HEX.test(ids[k])) continue;
      batch.add(ids[k], spool.read(at[k], length[k]));
      if (batch.full) await batch.put();
    }
    await batch.put();
    return {
      count: order.length,
      id: (i) => ids[order[i]],
      time: (i) => times[order[i]],
      cut: (i) => cut[order[i]],
      length: (i) => length[order[i]] - textAt[order[i]],
      text: (i) => spool.read(at[order[i]] + textAt[order[i]], length[order[i]] - textAt[order[i]]),
      close: () => spool.close(),
    };
  }

  /**
   * What `snapshots --json` prints, local times left out (rendered-listing.ts): from the cache's
   * rendered listing when it was made for exactly the names snapshots/ lists now, so a snapshot
   * written or forgotten by any process since is never missed; else from the rows, which are then
   * rendered and recorded for the next time.
   */
  async renderedSnapshots(): Promise<RenderedListing> {
    this.unreadableSnapshots = [];
    const names = await listSnapshotIds(this.target);
    const fingerprint = listFingerprint(names);
    const cached = this.cache && (await readRendered(this.cache, fingerprint));
    if (cached) return cached;
    const rows = await this.listSnapshotRows(names);
    const rendered = renderRows(rows);
    // Recorded only when it is the whole truth about these names: every one of them read (a full
    // listing lists again, and may have seen a snapshot written since), none unreadable (whose
    // warning every listing must print).
    const listed = new NameSlots(names);
    let whole = this.cache && !this.unreadableSnapshots.length && rows.count === listed.size;
    for (let i = 0; whole && i < rows.count; i++) whole = listed.has(rows.id(i));
    if (whole) {
      await writeRendered(this.cache!, fingerprint, rendered);
      // Printed from the file just written (verified again), so the rows can go now.
      const back = await readRendered(this.cache!, fingerprint);
      if (back) {
        rows.close();
        return back;
      }
    }
    return {
      ...rendered,
      async *text() {
        try {
          yield* rendered.text();
        } finally {
          rows.close();
        }
      },
    };
  }

  /** One snapshot, read and verified from the repository itself (which also proves it still exists). */
  async loadSnapshotFromTarget(id: string): Promise<Snapshot> {
    return parseSnapshot(await this.fetchSnapshotBody(id), id);
  }
}
