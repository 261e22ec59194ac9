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

/**
 * The gear scan of `Chunker.boundary` in WebAssembly, 3.3 times the speed of the JS loop on session
 * data (52 against 170-200 ms for 128 MiB; the JS loop was a quarter of a snapshot's main thread).
 * It reads the gear table at address 0 and the bytes at their addresses in its memory:
 * scan(i, normal, limit, strict, loose) runs the two loops of `boundary` and returns their result.
 * Hand-assembled (two loops of 25 instructions, no toolchain needed); a test checks it cuts where
 * the JS loop does.
 */
const SCAN_LOOP = (end: number, mask: number) => [
  ...[0x02, 0x40, 0x03, 0x40], // block, loop
  ...[0x20, 0x00, 0x20, end, 0x4f, 0x0d, 0x01], // i >= end: leave
  ...[0x20, 0x05, 0x41, 0x01, 0x74], // h << 1
  ...[0x20, 0x00, 0x2d, 0x00, 0x00, 0x41, 0x02, 0x74, 0x28, 0x02, 0x00], // gear[mem[i]]
  ...[0x6a, 0x22, 0x05], // h = sum
  ...[0x20, mask, 0x71, 0x45], // (h & mask) == 0
  ...[0x20, 0x00, 0x41, 0x01, 0x6a, 0x21, 0x00], // i++
  ...[0x04, 0x40, 0x20, 0x00, 0x0f, 0x0b], // if so: return i
  ...[0x0c, 0x00, 0x0b, 0x0b], // next byte; end loop, block
];
const SCAN_BODY = [0x01, 0x01, 0x7f, ...SCAN_LOOP(1, 3), ...SCAN_LOOP(2, 4), 0x20, 0x02, 0x0b];
const section = (id: number, bytes: number[]) => [id, bytes.length, ...bytes]; // every section here is under 128 bytes
const SCAN_MODULE = new Uint8Array([
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
  ...section(1, [0x01, 0x60, 0x05, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x7f]), // (i32 x5) -> i32
  ...section(2, [0x01, 0x01, 0x65, 0x01, 0x6d, 0x02, 0x00, 0x01]), // import memory "e" "m"
  ...section(3, [0x01, 0x00]),
  ...section(7, [0x01, 0x01, 0x62, 0x00, 0x00]), // export "b"
  ...section(10, [0x01, SCAN_BODY.length, ...SCAN_BODY]),
]);
const GEAR_BYTES = 256 * 4;
type Scan = (i: number, normal: number, limit: number, strict: number, loose: number) => number;
/** The scan that reads each work buffer's memory, by that memory's ArrayBuffer. */
const scans = new WeakMap<ArrayBufferLike, Scan>();
let scanModule: WebAssembly.Module | undefined;

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
    const scan = scans.get(buf.buffer);
    if (scan) {
      const at = buf.byteOffset;
      return (scan(at + start + min, at + normal, at + limit, this.maskStrict, this.maskLoose) >>> 0) - at;
    }
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

  /**
   * A buffer of `size` bytes that `boundary` scans in WebAssembly: bytes to be chunked in bulk
   * should be read into one. A plain Buffer where WebAssembly memory cannot be had (a low `ulimit
   * -v`: each memory reserves address space), scanned by the JS loop, with the same cuts.
   */
  workBuffer(size: number): Buffer {
    let memory: WebAssembly.Memory;
    try {
      const pages = Math.ceil((GEAR_BYTES + size) / 65536);
      memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
      scanModule ??= new WebAssembly.Module(SCAN_MODULE);
      const scan = new WebAssembly.Instance(scanModule, { e: { m: memory } }).exports.b as Scan;
      new Uint32Array(memory.buffer, 0, 256).set(this.gear);
      scans.set(memory.buffer, scan);
    } catch {
      return Buffer.allocUnsafe(size);
    }
    return Buffer.from(memory.buffer, GEAR_BYTES, size);
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
