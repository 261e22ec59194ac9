import { encrypt } from "./crypto.js";
import { encodePackHeader, packKey, type BlobRef, type BlobType, type PackEntry, type PackedBlob } from "./format.js";
import type { Repository } from "./repository.js";
import { sha256Hex } from "./repository.js";
import type { SealPool } from "./seal-pool.js";

const MAX_INFLIGHT = 6;

/**
 * Turns new chunks into packs. Chunks already in the repository (or added earlier in this run) are
 * skipped; new ones are sealed on the pool and appended to the open pack, which is written whole
 * (temp + fsync + rename) once it is big enough. Nothing becomes visible to readers until `finish`
 * writes the index for the packs, and a snapshot references them after that.
 */
export class BlobWriter {
  private readonly added = new Set<string>();
  private readonly written: PackEntry[] = [];
  private open: { blobs: BlobRef[]; parts: Buffer[]; size: number } = { blobs: [], parts: [], size: 0 };
  private readonly inflight = new Set<Promise<void>>();
  private failure: Error | undefined;
  bytesNew = 0;
  bytesStored = 0;
  blobsNew = 0;

  constructor(
    private readonly repo: Repository,
    private readonly pool: SealPool,
  ) {}

  has(id: string): boolean {
    return this.added.has(id) || this.repo.index.has(id);
  }

  /**
   * Store the chunks of `buf` at `ranges` ([start, end) pairs) whose ids are not yet known.
   * Returns once the work is queued; `buf` may be reused by the caller right away.
   */
  async add(type: BlobType, buf: Buffer, ranges: number[], ids: string[]): Promise<void> {
    this.throwIfFailed();
    let size = 0;
    const fresh: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      if (this.has(ids[i])) continue;
      this.added.add(ids[i]);
      fresh.push(i);
      size += ranges[2 * i + 1] - ranges[2 * i];
    }
    if (fresh.length === 0) return;
    // Copy the new chunks out so the caller's read buffer can be reused while the pool works.
    const batch = new ArrayBuffer(size);
    const view = Buffer.from(batch);
    const batchRanges: number[] = [];
    let o = 0;
    for (const i of fresh) {
      const start = ranges[2 * i];
      const end = ranges[2 * i + 1];
      buf.copy(view, o, start, end);
      batchRanges.push(o, o + end - start);
      o += end - start;
    }
    const job = this.pool
      .run({ op: "seal", key: this.repo.key.encryption, buffer: batch, ranges: batchRanges })
      .then(async (sealed) => {
        for (let k = 0; k < fresh.length; k++) {
          const i = fresh[k];
          await this.append({ type, id: ids[i], length: sealed[k].length, rawLength: ranges[2 * i + 1] - ranges[2 * i] }, sealed[k]);
        }
      });
    await this.track(job);
  }

  private async track(job: Promise<void>): Promise<void> {
    const tracked = job.catch((err: Error) => {
      this.failure ??= err;
    });
    this.inflight.add(tracked);
    void tracked.finally(() => this.inflight.delete(tracked));
    while (this.inflight.size >= MAX_INFLIGHT) await Promise.race(this.inflight);
    this.throwIfFailed();
  }

  private async append(ref: BlobRef, sealed: Buffer): Promise<void> {
    this.open.blobs.push(ref);
    this.open.parts.push(sealed);
    this.open.size += sealed.length;
    this.bytesNew += ref.rawLength;
    this.blobsNew++;
    if (this.open.size >= this.repo.config.packSize) await this.flushPack();
  }

  private async flushPack(): Promise<void> {
    const { blobs, parts } = this.open;
    if (blobs.length === 0) return;
    this.open = { blobs: [], parts: [], size: 0 };
    // Pack layout: sealed blobs, then the sealed header, then the header's length (u32 LE).
    const header = encrypt(this.repo.key.encryption, encodePackHeader(blobs));
    const trailer = Buffer.alloc(4);
    trailer.writeUInt32LE(header.length);
    const pack = Buffer.concat([...parts, header, trailer]);
    const id = sha256Hex(pack);
    await this.repo.target.put(packKey(id), pack);
    let offset = 0;
    const placed: PackedBlob[] = blobs.map((b) => {
      const p = { ...b, offset };
      offset += b.length;
      return p;
    });
    this.written.push({ id, size: pack.length, blobs: placed });
    this.bytesStored += pack.length;
  }

  /** Wait for all sealing, write the last pack and one index file for everything written. */
  async finish(): Promise<{ indexId?: string; packs: number }> {
    while (this.inflight.size > 0) await Promise.race(this.inflight);
    this.throwIfFailed();
    await this.flushPack();
    if (this.written.length === 0) return { packs: 0 };
    const indexId = await this.repo.saveIndex({ supersedes: [], packs: this.written });
    const stored = await this.repo.target.head(`index/${indexId}`);
    this.bytesStored += stored?.size ?? 0;
    return { indexId, packs: this.written.length };
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }
}

export type { BlobType };
