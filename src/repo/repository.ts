import { createHash, randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import type { Target } from "../targets/target.js";
import { Chunker, DATA_CHUNKER, TREE_CHUNKER, gearTable, type ChunkerParams } from "./chunker.js";
import { blobId, decrypt, encrypt } from "./crypto.js";
import { decode, encode } from "./compress.js";
import { RepoError } from "./errors.js";
import { ObjectExists, ObjectNotFound } from "../targets/target.js";
import {
  AAD,
  CONFIG_KEY,
  FORMAT_VERSION,
  decodeIndex,
  encodeIndex,
  indexKey,
  snapshotKey,
  type IndexFile,
  type Snapshot,
} from "./format.js";
import { addKey, newMasterKey, unlock, type Credentials, type MasterKey } from "./keys.js";
import { MemoryIndex } from "./memory-index.js";
import { scanUnindexedPacks } from "./pack-scan.js";
import { CONFIG_BOUNDS, listSnapshotIds, readRepoConfig } from "./peek.js";

export interface RepoConfig {
  format: "pi-guard";
  version: number;
  id: string;
  created: string;
  chunker: { data: ChunkerParams; tree: ChunkerParams };
  /** Packs are closed once they reach this many bytes. */
  packSize: number;
}

export interface SnapshotRecord {
  id: string;
  snapshot: Snapshot;
}

export const DEFAULT_PACK_SIZE = 16 * 1024 * 1024;

export function sha256Hex(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

export class Repository {
  index = new MemoryIndex();
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
  /**
   * The local folder BlobWriter builds packs in. For a folder target, its tmp/ (same file system:
   * handing a pack over is a rename); for others a per-repository folder the engine sets in the
   * data dir (useLocalStaging in src/engine.ts).
   */
  stagingDir: string;
  private indexLoaded = false;

  private constructor(
    readonly target: Target,
    readonly config: RepoConfig,
    readonly key: MasterKey,
    readonly keyId: string,
  ) {
    const gear = gearTable(key.chunkerSeed);
    this.dataChunker = new Chunker(config.chunker.data, gear);
    this.treeChunker = new Chunker(config.chunker.tree, gear);
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
      chunker: { data: DATA_CHUNKER, tree: TREE_CHUNKER },
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

  static async open(target: Target, cred: Credentials): Promise<Repository> {
    const config = await readRepoConfig(target);
    if (config.version < FORMAT_VERSION) {
      throw new RepoError(
        `repository format ${config.version} is no longer supported; this pi-guard reads format ${FORMAT_VERSION} (make a new repository with \`pi-guard init\`)`,
        "corrupt",
      );
    }
    const { master, keyId } = await unlock(target, cred);
    return new Repository(target, config, master, keyId);
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
    await this.target.put(keyOf(id), sealed);
    return { id, size: sealed.length };
  }

  /**
   * Load every index file. One that cannot be read is skipped and reported, not fatal: the packs
   * no readable index names are then read from their own headers, so their blobs stay reachable.
   */
  async loadIndex(force = false): Promise<MemoryIndex> {
    if (this.indexLoaded && !force) return this.index;
    this.index = new MemoryIndex();
    this.recoveredPacks = new Set();
    this.unreadablePacks = [];
    const files: { id: string; index: IndexFile }[] = [];
    const bad: { id: string; error: string }[] = [];
    for await (const info of this.target.list("index")) {
      const id = info.key.slice("index/".length);
      try {
        files.push({ id, index: await this.readIndexFile(id) });
      } catch (err) {
        if (!(err instanceof RepoError) && !(err instanceof ObjectNotFound)) throw err;
        bad.push({ id, error: err.message });
      }
    }
    const superseded = new Set(files.flatMap((f) => f.index.supersedes));
    for (const f of files) {
      if (superseded.has(f.id)) continue;
      this.index.files.add(f.id);
      for (const pack of f.index.packs) this.index.addPack(pack);
    }
    this.unreadableIndexes = bad.filter((b) => !superseded.has(b.id));
    if (this.unreadableIndexes.length) {
      for (const b of this.unreadableIndexes) this.onWarning(`skipped ${b.error}; \`pi-guard repair index\` rebuilds the index`);
      await this.indexUnindexedPacks();
    }
    this.indexLoaded = true;
    return this.index;
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
    const raw = await this.getVerified(indexKey(id), id, what);
    return decodeIndex(this.unseal(raw, what, AAD.index), what);
  }

  async saveIndex(index: IndexFile): Promise<{ id: string; size: number }> {
    const saved = await this.putContentAddressed(indexKey, this.seal(encodeIndex(index), AAD.index));
    this.index.files.add(saved.id);
    for (const pack of index.packs) this.index.addPack(pack);
    return saved;
  }

  async saveSnapshot(snapshot: Snapshot): Promise<string> {
    return (await this.putContentAddressed(snapshotKey, this.seal(Buffer.from(JSON.stringify(snapshot)), AAD.snapshot))).id;
  }

  async loadSnapshot(id: string): Promise<Snapshot> {
    const what = `snapshot ${id.slice(0, 8)}`;
    const raw = await this.getVerified(snapshotKey(id), id, what);
    try {
      return JSON.parse(this.unseal(raw, what, AAD.snapshot).toString("utf8")) as Snapshot;
    } catch (err) {
      if (err instanceof RepoError) throw err;
      throw new RepoError(`${what} is not valid JSON`, "corrupt");
    }
  }

  /**
   * All readable snapshots, oldest first. A damaged snapshot object must not take the others down
   * with it: it is left out of the list and recorded in `unreadableSnapshots` (check reports it).
   */
  async listSnapshots(): Promise<SnapshotRecord[]> {
    const out: SnapshotRecord[] = [];
    this.unreadableSnapshots = [];
    for (const id of await listSnapshotIds(this.target)) {
      try {
        out.push({ id, snapshot: await this.loadSnapshot(id) });
      } catch (err) {
        if (!(err instanceof RepoError)) throw err;
        this.unreadableSnapshots.push({ id, error: err.message });
      }
    }
    out.sort((a, b) => a.snapshot.time.localeCompare(b.snapshot.time) || a.id.localeCompare(b.id));
    return out;
  }
}
