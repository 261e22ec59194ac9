import type { BlobType, PackEntry } from "./format.js";
import { ID_BYTES, INDEX_BLOB_BYTES, walkEncodedIndex, type EncodedIndexInfo } from "./format.js";

export interface BlobLocation {
  pack: string;
  type: BlobType;
  offset: number;
  length: number;
  inFrame: number;
  rawLength: number;
}

const EMPTY = 0;

/**
 * Every blob the repository holds, merged from all index files, kept in flat typed arrays with an
 * open-addressing hash table over the ids. A Map of objects keyed by hex strings cost about 650
 * bytes per blob (18 MB for a 1 GiB tree); this costs about 60, so memory stays small as the
 * repository grows. Blob ids are HMACs, so their first bytes are already a uniform hash.
 */
export class MemoryIndex {
  /** Pack id (hex) -> size in bytes. */
  readonly packs = new Map<string, number>();
  /** Index files loaded, by id; consolidation replaces them. */
  readonly files = new Set<string>();

  private packIds: string[] = [];
  private packNumbers = new Map<string, number>();
  private count = 0;
  private ids = new Uint8Array(ID_BYTES * 1024);
  private pack = new Uint32Array(1024);
  private type = new Uint8Array(1024);
  private offset = new Uint32Array(1024);
  private length = new Uint32Array(1024);
  private inFrame = new Uint32Array(1024);
  private rawLength = new Uint32Array(1024);
  /** Slot -> blob number + 1 (0: empty). Kept at most half full. */
  private table = new Uint32Array(2048);

  get size(): number {
    return this.count;
  }

  /** Record a pack and its size; its number in `packIds`. */
  private notePack(id: string, size: number): number {
    this.packs.set(id, size);
    let packNo = this.packNumbers.get(id);
    if (packNo === undefined) {
      packNo = this.packIds.length;
      this.packIds.push(id);
      this.packNumbers.set(id, packNo);
    }
    return packNo;
  }

  addPack(pack: PackEntry): void {
    const packNo = this.notePack(pack.id, pack.size);
    for (const b of pack.blobs) {
      const id = Buffer.from(b.id, "hex");
      // A blob can sit in two packs after two hosts uploaded it concurrently; either copy will do.
      if (this.find(id) >= 0) continue;
      if (this.count === this.pack.length) this.grow();
      const n = this.count++;
      this.ids.set(id, n * ID_BYTES);
      this.pack[n] = packNo;
      this.type[n] = b.type;
      this.offset[n] = b.offset;
      this.length[n] = b.length;
      this.inFrame[n] = b.inFrame;
      this.rawLength[n] = b.rawLength;
      if (this.count * 2 > this.table.length) this.rehash(this.table.length * 2);
      else this.place(n);
    }
  }

  /**
   * Add every blob of a decoded index file (docs/FORMAT.md §6) straight from its bytes, after
   * checking its structure: going through objects and hex strings cost about 3 µs a blob, which at
   * 100,000 snapshots was most of a snapshot's time.
   */
  addEncodedIndex(buf: Buffer, what: string): EncodedIndexInfo {
    const info = walkEncodedIndex(buf, what);
    this.reserve(this.count + info.blobs);
    for (const pack of info.layout) {
      const packNo = this.notePack(pack.id, pack.size);
      for (let i = 0, o = pack.blobsAt; i < pack.count; i++, o += INDEX_BLOB_BYTES) {
        const id = buf.subarray(o + 1, o + 1 + ID_BYTES);
        if (this.find(id) >= 0) continue;
        if (this.count === this.pack.length) this.grow();
        const n = this.count++;
        this.ids.set(id, n * ID_BYTES);
        this.pack[n] = packNo;
        this.type[n] = buf[o];
        this.offset[n] = buf.readUInt32LE(o + 1 + ID_BYTES);
        this.length[n] = buf.readUInt32LE(o + 5 + ID_BYTES);
        this.inFrame[n] = buf.readUInt32LE(o + 9 + ID_BYTES);
        this.rawLength[n] = buf.readUInt32LE(o + 13 + ID_BYTES);
        if (this.count * 2 > this.table.length) this.rehash(this.table.length * 2);
        else this.place(n);
      }
    }
    return info;
  }

  has(id: string): boolean {
    return this.find(this.parse(id)) >= 0;
  }

  get(id: string): BlobLocation | undefined {
    const n = this.find(this.parse(id));
    return n < 0 ? undefined : this.location(n);
  }

  /** The plaintext length of a blob, 0 if unknown; allocation-free, for per-blob loops. */
  rawLengthOf(id: string): number {
    const n = this.find(this.parse(id));
    return n < 0 ? 0 : this.rawLength[n];
  }

  /**
   * Hex id into a reused scratch buffer: lookups run per blob (an append checks every blob of the
   * file), so they must not allocate. Buffer's native hex decoder takes a third of a JS loop's time;
   * it stops at the first pair that is not hex, and such an id is unknown.
   */
  private readonly scratch = Buffer.alloc(ID_BYTES);
  private parse(id: string): Uint8Array {
    const out = this.scratch;
    if (id.length !== ID_BYTES * 2 || out.write(id, 0, ID_BYTES, "hex") !== ID_BYTES) {
      out.fill(0);
      out[0] = 1; // no real id matches an all-but-one-zero pattern by chance; treat as unknown
    }
    return out;
  }

  /** Every blob as [id, location]; allocates per entry, for `check` rather than hot paths. */
  *entries(): IterableIterator<[string, BlobLocation]> {
    for (let n = 0; n < this.count; n++) {
      yield [Buffer.from(this.ids.buffer, this.ids.byteOffset + n * ID_BYTES, ID_BYTES).toString("hex"), this.location(n)];
    }
  }

  private location(n: number): BlobLocation {
    return {
      pack: this.packIds[this.pack[n]],
      type: this.type[n] as BlobType,
      offset: this.offset[n],
      length: this.length[n],
      inFrame: this.inFrame[n],
      rawLength: this.rawLength[n],
    };
  }

  private slotOf(id: Uint8Array): number {
    return ((id[0] | (id[1] << 8) | (id[2] << 16) | (id[3] << 24)) >>> 0) & (this.table.length - 1);
  }

  private find(id: Uint8Array): number {
    const mask = this.table.length - 1;
    for (let slot = this.slotOf(id); ; slot = (slot + 1) & mask) {
      const entry = this.table[slot];
      if (entry === EMPTY) return -1;
      if (this.sameId(entry - 1, id)) return entry - 1;
    }
  }

  private sameId(n: number, id: Uint8Array): boolean {
    const base = n * ID_BYTES;
    for (let i = 0; i < ID_BYTES; i++) if (this.ids[base + i] !== id[i]) return false;
    return true;
  }

  private place(n: number): void {
    const mask = this.table.length - 1;
    const id = this.ids.subarray(n * ID_BYTES, (n + 1) * ID_BYTES);
    let slot = this.slotOf(id);
    while (this.table[slot] !== EMPTY) slot = (slot + 1) & mask;
    this.table[slot] = n + 1;
  }

  private rehash(size: number): void {
    this.table = new Uint32Array(size);
    for (let n = 0; n < this.count; n++) this.place(n);
  }

  /** Room for `n` blobs at once: growing and rehashing step by step cost more than the inserts. */
  reserve(n: number): void {
    if (this.pack.length < n) {
      let cap = this.pack.length;
      while (cap < n) cap *= 2;
      this.grow(cap);
    }
    let size = this.table.length;
    while (n * 2 > size) size *= 2;
    if (size !== this.table.length) this.rehash(size);
  }

  private grow(cap = this.pack.length * 2): void {
    const grown = <T extends Uint8Array | Uint32Array>(a: T, per = 1): T => {
      const b = new (a.constructor as new (n: number) => T)(cap * per);
      b.set(a);
      return b;
    };
    this.ids = grown(this.ids, ID_BYTES);
    this.pack = grown(this.pack);
    this.type = grown(this.type);
    this.offset = grown(this.offset);
    this.length = grown(this.length);
    this.inFrame = grown(this.inFrame);
    this.rawLength = grown(this.rawLength);
  }
}
