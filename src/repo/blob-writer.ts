import { type BlobRef, type BlobType, packKey, type PackEntry } from "./format.js";
import type { Repository } from "./repository.js";
import { packUploadLimit, PackUploads } from "./pack-uploads.js";
import type { SealPool } from "./seal-pool.js";
import { sealedBound } from "./seal.js";
import { StagedPack } from "./staged-pack.js";

/** Consecutive new chunks are compressed together up to this many raw bytes: zstd needs context. */
export const FRAME_TARGET = 1024 * 1024;
/** Raw bytes handed to the pool and not yet written: bounds memory whatever the input. */
const MAX_INFLIGHT_BYTES = 6 * 1024 * 1024;
/** Batch buffers the workers gave back, kept for the next batches (about the in-flight budget's worth). */
const SPARE_BUFFERS = 6;
/** New batch buffers are at least this big, so that a spare one fits a usual batch (ContentChunker hands over at most 1 MiB plus a chunk). */
const SPARE_SIZE = 1024 * 1024 + 128 * 1024;

/** Buffers kept for reuse, at most SPARE_BUFFERS. */
class Spares {
  private readonly list: ArrayBuffer[] = [];

  /** A kept buffer of at least `size` bytes, if there is one. */
  take(size: number): ArrayBuffer | undefined {
    const i = this.list.findIndex((b) => b.byteLength >= size);
    return i >= 0 ? this.list.splice(i, 1)[0] : undefined;
  }

  /** Keep `ab` unless enough are kept; whether it was. */
  give(ab: ArrayBuffer): boolean {
    if (this.list.length >= SPARE_BUFFERS || ab.byteLength === 0) return false;
    this.list.push(ab);
    return true;
  }
}

/**
 * Turns new chunks into packs. Chunks already in the repository (or added earlier in this run) are
 * skipped; new ones are grouped into frames, sealed on the pool and appended to a pack file being
 * built in the repository's local staging folder, which is fsynced and handed to the target whole once big
 * enough; up to packUploadLimit packs are stored at once while the next is built. Nothing becomes visible to readers until `finish` writes the index for the packs, and a
 * snapshot references them only after that.
 */
export class BlobWriter {
  private readonly added = new Set<string>();
  private readonly written: PackEntry[] = [];
  /**
   * One open pack per blob type, as restic does: tree blobs (file lists) never share a pack with
   * file data, so damage to a data pack still leaves every snapshot's file list readable.
   */
  private readonly open = new Map<BlobType, StagedPack>();
  /** Pack appends happen strictly one after another, in the order frames come back sealed. */
  private appendChain: Promise<void> = Promise.resolve();
  private readonly inflight = new Set<Promise<void>>();
  private inflightBytes = 0;
  private failure: Error | undefined;
  private indexAttempted = false;
  private readonly uploads: PackUploads;
  /**
   * Batch buffers back from the pool, and the buffers sealed frames came in once they are written.
   * Fresh memory costs a page fault per 4 KiB on first touch: copying a gigabyte of new chunks into
   * new buffers took a sixth of the main thread's time, and sealing into new ones most of the
   * 440,000 page faults of a 1 GiB snapshot.
   */
  private readonly spare = new Spares();
  private readonly spareSealed = new Spares();
  bytesNew = 0;
  bytesStored = 0;
  blobsNew = 0;

  constructor(
    private readonly repo: Repository,
    private readonly pool: SealPool,
  ) {
    this.uploads = new PackUploads(packUploadLimit(repo.target));
  }

  has(id: string): boolean {
    return this.added.has(id) || this.repo.index.has(id);
  }

  /**
   * Store the chunks of `buf` at `ranges` ([start, end) pairs) whose ids are not yet known.
   * Returns once the work is queued; `buf` may be reused by the caller right away.
   */
  async add(type: BlobType, buf: Buffer, ranges: number[], ids: string[]): Promise<void> {
    this.throwIfFailed();
    const fresh: number[] = [];
    let size = 0;
    for (let i = 0; i < ids.length; i++) {
      if (this.has(ids[i])) continue;
      this.added.add(ids[i]);
      fresh.push(i);
      size += ranges[2 * i + 1] - ranges[2 * i];
    }
    if (fresh.length === 0) return;
    // Copy the new chunks out (the caller reuses buf) and group them into frames.
    const batch = this.batchBuffer(size);
    const frames: number[] = [];
    const frameBlobs: BlobRef[][] = [];
    let o = 0;
    for (const i of fresh) {
      const start = ranges[2 * i];
      const end = ranges[2 * i + 1];
      const last = frames.length - 2;
      if (last < 0 || o - frames[last] >= FRAME_TARGET) {
        frames.push(o, o);
        frameBlobs.push([]);
      }
      buf.copy(batch, o, start, end);
      o += end - start;
      frames[frames.length - 1] = o;
      frameBlobs[frameBlobs.length - 1].push({ type, id: ids[i], rawLength: end - start });
    }
    this.bytesNew += size;
    this.blobsNew += fresh.length;
    const input = batch.buffer as ArrayBuffer;
    const out = this.spareSealed.take(sealedBound(frames));
    const job = this.pool
      .run({ op: "seal", key: this.repo.key.encryption, buffer: input, frames, returnBuffer: true, out }, out ? [input, out] : [input], (back) => this.spare.give(back))
      .then((sealed) => this.queueAppend(type, sealed, frameBlobs));
    await this.track(job, size);
  }

  /** `size` bytes to copy chunks into: a spare buffer big enough, else a new one (of the usual batch size at least). */
  private batchBuffer(size: number): Buffer {
    return Buffer.from(this.spare.take(size) ?? new ArrayBuffer(Math.max(size, SPARE_SIZE)), 0, size);
  }

  private async track(job: Promise<void>, bytes: number): Promise<void> {
    this.inflightBytes += bytes;
    const tracked = job
      .catch((err: Error) => {
        this.failure ??= err;
      })
      .finally(() => {
        this.inflightBytes -= bytes;
        this.inflight.delete(tracked);
      });
    this.inflight.add(tracked);
    while (this.inflightBytes > MAX_INFLIGHT_BYTES && this.inflight.size > 0) await Promise.race(this.inflight);
    this.throwIfFailed();
  }

  private queueAppend(type: BlobType, sealed: Buffer[], frameBlobs: BlobRef[][]): Promise<void> {
    const next = this.appendChain.then(() => this.appendFrames(type, sealed, frameBlobs));
    this.appendChain = next.catch(() => undefined);
    return next;
  }

  private async appendFrames(type: BlobType, sealed: Buffer[], frameBlobs: BlobRef[][]): Promise<void> {
    for (let f = 0; f < sealed.length; f++) {
      let pack = this.open.get(type);
      if (!pack) this.open.set(type, (pack = await StagedPack.open(this.repo)));
      await pack.appendFrame(sealed[f], frameBlobs[f]);
      if (pack.full) await this.closePack(type);
    }
    // Written and hashed: the next batch may seal into the same memory.
    const ab = sealed[0]?.buffer;
    if (!(ab instanceof ArrayBuffer && this.spareSealed.give(ab))) this.pool.release(sealed);
  }

  /**
   * Pack layout: sealed frames, then the sealed header, then the header's length (u32 LE). The
   * pack is stored in the background; this returns once another upload may start.
   */
  private async closePack(type: BlobType): Promise<void> {
    const pack = this.open.get(type);
    if (!pack) return;
    this.open.delete(type);
    let started = false;
    try {
      await this.uploads.start(async () => {
        started = true;
        const stored = await pack.store();
        this.written.push(stored);
        this.bytesStored += stored.size;
      });
    } catch (err) {
      // An earlier upload failed, so this one never began: its staging file goes too.
      if (!started) await pack.discard();
      throw err;
    }
  }

  /** Wait for all sealing, close the last pack and write one index file for everything written. */
  async finish(): Promise<{ indexId?: string; packs: number }> {
    while (this.inflight.size > 0) await Promise.race(this.inflight);
    await this.appendChain;
    this.throwIfFailed();
    for (const type of [...this.open.keys()]) await this.closePack(type);
    await this.uploads.drain();
    if (this.written.length === 0) return { packs: 0 };
    this.indexAttempted = true;
    const { id: indexId, size } = await this.repo.saveIndex({ supersedes: [], packs: this.written });
    this.bytesStored += size;
    return { indexId, packs: this.written.length };
  }

  /**
   * Give up: remove the staging files, and the packs this run handed over as long as no index
   * can name them (the index is written only in `finish`; once its write was tried, the packs
   * stay, unindexed at worst, which is harmless).
   */
  async abort(): Promise<void> {
    // Let queued appends settle first (they record failures, never throw), so none opens a new
    // staging file after the cleanup below.
    while (this.inflight.size > 0) await Promise.race(this.inflight);
    await this.appendChain;
    for (const pack of this.open.values()) {
      await pack.discard();
    }
    this.open.clear();
    // Packs still on their way: once settled, each is stored (and deleted below) or never was.
    await this.uploads.settle();
    if (this.indexAttempted) return;
    for (const pack of this.written.splice(0)) await this.repo.target.delete(packKey(pack.id)).catch(() => undefined);
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }
}
