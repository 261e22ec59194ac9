/**
 * Finished packs being stored, at most `limit` at once: the writer builds the next pack while the
 * last ones are on the wire, and a slow storage holds back the writer instead of piling up
 * staging files. Each upload streams its pack from its staging file, so memory does not grow
 * with the number in flight.
 */
import { readConcurrency } from "./read-pipeline.js";
import type { Target } from "../targets/target.js";

/** Packs in flight at most, whatever the target's own limit: each is a staging file on disk. */
export const MAX_PACK_UPLOADS = 4;

/** Uploads at once for `target`: its concurrency limit (local disk: its reads), at most MAX_PACK_UPLOADS. */
export function packUploadLimit(target: Target): number {
  return Math.max(1, Math.min(readConcurrency(target), MAX_PACK_UPLOADS));
}

export class PackUploads {
  private readonly running = new Set<Promise<void>>();
  private failure: { error: unknown } | undefined;

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`upload limit must be a positive integer, not ${limit}`);
  }

  /** Uploads running now (for tests). */
  get inFlight(): number {
    return this.running.size;
  }

  /**
   * Start `upload`; resolves once fewer than `limit` are running, so the caller may go on.
   * Rejects with the first upload's failure (this one's or an earlier one's); no new upload starts
   * after a failure.
   */
  async start(upload: () => Promise<void>): Promise<void> {
    this.throwIfFailed();
    const p: Promise<void> = upload()
      .catch((error: unknown) => {
        this.failure ??= { error };
      })
      .finally(() => this.running.delete(p));
    this.running.add(p);
    while (this.running.size >= this.limit) await Promise.race(this.running);
    this.throwIfFailed();
  }

  /** Wait for every upload; rejects with the first failure. */
  async drain(): Promise<void> {
    await this.settle();
    this.throwIfFailed();
  }

  /** Wait until none is running, whatever their outcome. */
  async settle(): Promise<void> {
    while (this.running.size > 0) await Promise.race(this.running);
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }
}
