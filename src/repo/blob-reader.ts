import { packKey, type BlobType } from "./format.js";
import { RepoError } from "./errors.js";
import type { Repository } from "./repository.js";
import type { SealPool } from "./seal-pool.js";

/** Reads of consecutive blobs in one pack are merged when the gap between them is at most this. */
const MERGE_GAP = 64 * 1024;
const MAX_READ = 8 * 1024 * 1024;

/**
 * Fetches blobs by id with ranged reads (one request per run of nearby blobs in a pack, which is
 * what keeps S3 cheap), then decrypts, decompresses and checks each against its id on the pool.
 * A blob whose bytes do not match its id is never returned.
 */
export class BlobReader {
  constructor(
    private readonly repo: Repository,
    private readonly pool: SealPool,
  ) {}

  rawLength(id: string): number {
    return this.repo.index.rawLengthOf(id);
  }

  typeOf(id: string): BlobType | undefined {
    return this.repo.index.get(id)?.type;
  }

  /**
   * Plaintexts of `ids` in order, fetched a batch at a time with the next batch already in flight,
   * so network or disk reads overlap with decryption and with the caller's writes. Memory stays
   * near two batches.
   */
  async *stream(ids: string[], batchBytes = 4 * 1024 * 1024): AsyncGenerator<Buffer> {
    for await (const batch of this.batches(ids, batchBytes)) yield* batch;
  }

  /** Like `stream`, a batch at a time: writers hand a batch to one writev instead of one write per blob. */
  async *batches(ids: string[], batchBytes = 4 * 1024 * 1024): AsyncGenerator<Buffer[]> {
    const batches: string[][] = [];
    let size = batchBytes;
    for (const id of ids) {
      if (size >= batchBytes) {
        batches.push([]);
        size = 0;
      }
      batches[batches.length - 1].push(id);
      size += this.rawLength(id);
    }
    const fetch = (i: number) => {
      const p = this.read(batches[i]);
      p.catch(() => undefined); // observed when awaited; avoids an unhandled rejection if the caller stops early
      return p;
    };
    let next = batches.length ? fetch(0) : undefined;
    for (let i = 0; i < batches.length; i++) {
      const current = next!;
      next = i + 1 < batches.length ? fetch(i + 1) : undefined;
      yield await current;
    }
  }

  /** Plaintexts of `ids`, in order. Memory is the sum of the frames asked for: callers batch. */
  async read(ids: string[]): Promise<Buffer[]> {
    const index = this.repo.index;
    interface Frame {
      pack: string;
      offset: number;
      length: number;
      wanted: { slot: number; blob: { inFrame: number; rawLength: number; id: string } }[];
    }
    const frames = new Map<string, Frame>();
    ids.forEach((id, slot) => {
      const loc = index.get(id);
      if (!loc) throw new RepoError(`blob ${id.slice(0, 12)} is missing from the index`, "corrupt");
      const key = `${loc.pack}:${loc.offset}`;
      let frame = frames.get(key);
      if (!frame) frames.set(key, (frame = { pack: loc.pack, offset: loc.offset, length: loc.length, wanted: [] }));
      frame.wanted.push({ slot, blob: { inFrame: loc.inFrame, rawLength: loc.rawLength, id } });
    });
    const sorted = [...frames.values()].sort((a, b) => a.pack.localeCompare(b.pack) || a.offset - b.offset);
    const out: Buffer[] = new Array(ids.length);
    const jobs: Promise<void>[] = [];
    for (let i = 0; i < sorted.length; ) {
      const first = sorted[i];
      let end = first.offset + first.length;
      let j = i + 1;
      while (
        j < sorted.length &&
        sorted[j].pack === first.pack &&
        sorted[j].offset <= end + MERGE_GAP &&
        sorted[j].offset + sorted[j].length - first.offset <= MAX_READ
      ) {
        end = Math.max(end, sorted[j].offset + sorted[j].length);
        j++;
      }
      const run = sorted.slice(i, j);
      jobs.push(
        this.readRun(first.pack, first.offset, end - first.offset, run).then((plains) => {
          let k = 0;
          for (const frame of run) for (const w of frame.wanted) out[w.slot] = plains[k++];
        }),
      );
      i = j;
    }
    await Promise.all(jobs);
    return out;
  }

  private async readRun(
    pack: string,
    start: number,
    length: number,
    frames: { offset: number; length: number; wanted: { blob: { inFrame: number; rawLength: number; id: string } }[] }[],
  ): Promise<Buffer[]> {
    let raw: Buffer;
    try {
      raw = await this.repo.target.getRange(packKey(pack), start, length);
    } catch (err) {
      throw new RepoError(`pack ${pack.slice(0, 12)} cannot be read: ${(err as Error).message}`, "corrupt");
    }
    if (raw.length < length) throw new RepoError(`pack ${pack.slice(0, 12)} is truncated`, "corrupt");
    // A large read owns its ArrayBuffer; only a pooled small one needs copying out before transfer.
    const owns = raw.byteOffset === 0 && raw.buffer.byteLength === raw.length;
    const buffer = (owns ? raw.buffer : raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length)) as ArrayBuffer;
    return this.pool.run({
      op: "open",
      key: this.repo.key.encryption,
      idKey: this.repo.key.id,
      buffer,
      frames: frames.flatMap((f) => [f.offset - start, f.offset - start + f.length]),
      blobs: frames.flatMap((f, frame) => f.wanted.map((w) => ({ frame, ...w.blob }))),
    });
  }
}
