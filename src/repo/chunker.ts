import { createHash } from "node:crypto";

/**
 * Content-defined chunking in the FastCDC style: a gear rolling hash, cut points where the hash's
 * top bits are zero, a stricter mask before the average size and a looser one after it
 * ("normalized chunking") so chunk sizes cluster around the average.
 *
 * The hash restarts at zero at every cut, so where a chunk ends depends only on the bytes since the
 * previous cut. That is what makes append-aware snapshots exact: re-chunking a grown file from its
 * last content-defined cut gives the same chunks as re-chunking the whole file (docs/FORMAT.md §10).
 */
export interface ChunkerParams {
  min: number;
  avg: number;
  max: number;
}

/** For session data: small enough that an append rewrites ~32 KiB, not restic's ~1 MiB. */
export const DATA_CHUNKER: ChunkerParams = { min: 8 * 1024, avg: 32 * 1024, max: 128 * 1024 };
/**
 * Leaf tree blobs of new repositories: the file list's JSON lines, mostly hex ids, changed in a
 * few places per snapshot. An append-only snapshot stores about one new leaf per changed file, so
 * a small leaf is a small rewrite. Before the tree list (LIST_CHUNKER) the snapshot object named
 * every leaf, and 8 KiB was the best trade; now 2 KiB is (bench/README.md, "Appends").
 */
export const TREE_CHUNKER: ChunkerParams = { min: 512, avg: 2 * 1024, max: 8 * 1024 };
/**
 * Tree list blobs (docs/FORMAT.md §8): the leaf ids, 32 random-looking bytes each. A snapshot that
 * changes n leaves rewrites about n list blobs, and names every list blob in its object, so the
 * cost is about n·avg + leaves·32/avg·35 bytes: 512 is near the best for tens of changes in a
 * tree of about a thousand leaves (a 1 GiB agent dir), and fine an order of magnitude either way.
 */
export const LIST_CHUNKER: ChunkerParams = { min: 128, avg: 512, max: 2 * 1024 };
export function gearTable(seed: Buffer): Uint32Array {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    table[i] = createHash("sha256").update(seed).update(Buffer.of(i)).digest().readUInt32LE(0);
  }
  return table;
}

function topBitsMask(bits: number): number {
  return (((1 << bits) - 1) << (32 - bits)) | 0;
}

export class Chunker {
  private readonly maskStrict: number;
  private readonly maskLoose: number;

  constructor(
    readonly params: ChunkerParams,
    private readonly gear: Uint32Array,
  ) {
    const bits = Math.round(Math.log2(params.avg));
    this.maskStrict = topBitsMask(bits + 2);
    this.maskLoose = topBitsMask(bits - 2);
  }

  /**
   * End (exclusive) of the chunk that starts at `start`, looking at buf[start, end).
   * The caller must supply at least `max` bytes unless `end` is the end of the input; otherwise a
   * return value of `end` means "no cut found yet".
   */
  boundary(buf: Uint8Array, start: number, end: number): number {
    const { min, avg, max } = this.params;
    const available = end - start;
    if (available <= min) return end;
    const limit = start + Math.min(available, max);
    const normal = start + Math.min(available, avg);
    const gear = this.gear;
    const strict = this.maskStrict;
    const loose = this.maskLoose;
    let h = 0;
    let i = start + min;
    for (; i < normal; i++) {
      h = ((h << 1) + gear[buf[i]]) | 0;
      if ((h & strict) === 0) return i + 1;
    }
    for (; i < limit; i++) {
      h = ((h << 1) + gear[buf[i]]) | 0;
      if ((h & loose) === 0) return i + 1;
    }
    return limit;
  }

  /** All chunks of an in-memory buffer, as [start, end) pairs. */
  *split(buf: Uint8Array): Generator<[number, number]> {
    let start = 0;
    while (start < buf.length) {
      const end = this.boundary(buf, start, buf.length);
      yield [start, end];
      start = end;
    }
  }
}
