import { createHash, randomBytes } from "node:crypto";
import type { Target } from "../targets/target.js";
import { Chunker, DATA_CHUNKER, TREE_CHUNKER, gearTable, type ChunkerParams } from "./chunker.js";
import { blobId, decrypt, encrypt } from "./crypto.js";
import { decode, encode } from "./compress.js";
import { RepoError } from "./errors.js";
import {
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
  readonly index = new MemoryIndex();
  /** Snapshots the last listSnapshots() could not read. */
  unreadableSnapshots: { id: string; error: string }[] = [];
  readonly dataChunker: Chunker;
  readonly treeChunker: Chunker;
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
    await target.put(CONFIG_KEY, Buffer.from(JSON.stringify(config, null, 2) + "\n"));
    return new Repository(target, config, master, keyId);
  }

  static async open(target: Target, cred: Credentials): Promise<Repository> {
    const config = await readRepoConfig(target);
    const { master, keyId } = await unlock(target, cred);
    return new Repository(target, config, master, keyId);
  }

  /** Metadata objects (index, snapshots, locks): zstd, then AES-GCM. */
  seal(plain: Buffer): Buffer {
    return encrypt(this.key.encryption, encode(plain));
  }

  unseal(sealed: Buffer, what: string): Buffer {
    return decode(decrypt(this.key.encryption, sealed, what), what);
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

  async loadIndex(force = false): Promise<MemoryIndex> {
    if (this.indexLoaded && !force) return this.index;
    const files: { id: string; index: IndexFile }[] = [];
    for await (const info of this.target.list("index")) {
      const id = info.key.slice("index/".length);
      files.push({ id, index: await this.readIndexFile(id) });
    }
    const superseded = new Set(files.flatMap((f) => f.index.supersedes));
    for (const f of files) {
      if (superseded.has(f.id)) continue;
      this.index.files.add(f.id);
      for (const pack of f.index.packs) this.index.addPack(pack);
    }
    this.indexLoaded = true;
    return this.index;
  }

  async readIndexFile(id: string): Promise<IndexFile> {
    const what = `index ${id.slice(0, 12)}`;
    return decodeIndex(this.unseal(await this.target.get(indexKey(id)), what), what);
  }

  async saveIndex(index: IndexFile): Promise<{ id: string; size: number }> {
    const saved = await this.putContentAddressed(indexKey, this.seal(encodeIndex(index)));
    this.index.files.add(saved.id);
    for (const pack of index.packs) this.index.addPack(pack);
    return saved;
  }

  async saveSnapshot(snapshot: Snapshot): Promise<string> {
    return (await this.putContentAddressed(snapshotKey, this.seal(Buffer.from(JSON.stringify(snapshot))))).id;
  }

  async loadSnapshot(id: string): Promise<Snapshot> {
    const what = `snapshot ${id.slice(0, 8)}`;
    const raw = await this.target.get(snapshotKey(id));
    try {
      return JSON.parse(this.unseal(raw, what).toString("utf8")) as Snapshot;
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

