// Snapshot listing objects (docs/FORMAT.md §7a): the decoded bodies of many snapshot objects in
// one sealed, content-addressed object, so that a machine with an empty metadata cache reads a
// few objects instead of fetching and decrypting 100,000 (25 s at 100,000 on the bench machine).
//
// A listing is only ever a copy: snapshots/ alone says which snapshots exist. A reader takes an
// entry only for a name snapshots/ still lists, reads every listed snapshot no listing covers one
// by one, and ignores (with a warning) a listing that does not verify, so a listing written before
// a snapshot or a forget, or a damaged one, never changes what is listed.

import { ID_BYTES } from "./format.js";
import { RepoError } from "./errors.js";

export const LISTING_AAD = Buffer.from("pi-guard v2 listing");
export const listingKey = (id: string): string => `listing/${id}`;

const MAGIC = Buffer.from("PGSL");
const VERSION = 1;
const HEADER_BYTES = MAGIC.length + 1 + 4;
/** One snapshot object's JSON is a few hundred bytes; a bigger entry is not one pi-guard wrote. */
const MAX_BODY_BYTES = 1 << 20;

/**
 * A new listing is written once this many snapshots are listed that no listing covers (the cost
 * of a cold start grows with them: one fetch and decrypt each). PI_GUARD_TEST_LISTING_BATCH
 * lowers it, for tests only.
 */
export function listingBatch(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.PI_GUARD_TEST_LISTING_BATCH);
  return Number.isInteger(n) && n > 0 ? n : 256;
}

/** Beyond this many listing objects, the next one written merges them all (and drops dead entries). */
export const MAX_LISTINGS = 16;

export function encodeListing(entries: Iterable<[string, Buffer]>): Buffer {
  const parts: Buffer[] = [];
  let count = 0;
  for (const [id, body] of entries) {
    const head = Buffer.alloc(ID_BYTES + 4);
    Buffer.from(id, "hex").copy(head, 0);
    head.writeUInt32LE(body.length, ID_BYTES);
    parts.push(head, body);
    count++;
  }
  const header = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(header, 0);
  header[4] = VERSION;
  header.writeUInt32LE(count, 5);
  return Buffer.concat([header, ...parts]);
}

/** Every entry of a decoded listing, checked for structure: snapshot id (64 hex) -> snapshot JSON. */
export function decodeListing(buf: Buffer, what: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  // One piece: every body is a slice of `buf`, good for as long as it is.
  for (const [id, body] of listingEntries(() => [buf][Symbol.iterator](), what, buf.length)) out.set(id, body);
  return out;
}

/**
 * The entries of a decoded listing that arrives in pieces (compress.ts decodePieces), without
 * holding it whole: `pieces()` is read twice, first here, to check the structure (a malformed
 * listing throws before any entry is given, so it changes nothing), then as the result is
 * iterated. A body is valid only until the next entry is asked for.
 */
export function checkedListingEntries(pieces: () => Iterator<Buffer>, what: string): Iterable<[string, Buffer]> {
  for (const entry of listingEntries(pieces, what)) void entry;
  return listingEntries(pieces, what);
}

/** `size`, when known, bounds the count before anything is read. */
function* listingEntries(pieces: () => Iterator<Buffer>, what: string, size?: number): Generator<[string, Buffer]> {
  const bad = (why: string) => new RepoError(`${what} ${why}`, "corrupt");
  const r = new PieceReader(pieces());
  const header = r.take(HEADER_BYTES);
  if (header.length < HEADER_BYTES || !header.subarray(0, 4).equals(MAGIC)) throw bad("is not a snapshot listing");
  if (header[4] !== VERSION) throw bad(`has version ${header[4]}; this pi-guard reads version ${VERSION}`);
  const count = header.readUInt32LE(5);
  // Every entry takes at least its id and length.
  if (size !== undefined && count > (size - HEADER_BYTES) / (ID_BYTES + 4)) throw bad("is truncated");
  for (let i = 0; i < count; i++) {
    const head = r.take(ID_BYTES + 4);
    if (head.length < ID_BYTES + 4) throw bad("is truncated");
    const id = head.toString("hex", 0, ID_BYTES);
    const length = head.readUInt32LE(ID_BYTES);
    if (length > MAX_BODY_BYTES) throw bad("is truncated");
    const body = r.take(length);
    if (body.length < length) throw bad("is truncated");
    yield [id, body];
  }
  if (!r.atEnd()) throw bad("has trailing bytes");
}

/** Bytes taken from a run of pieces; what take() returns is valid until the next take. */
class PieceReader {
  private piece: Buffer = Buffer.alloc(0);
  private at = 0;

  constructor(private readonly pieces: Iterator<Buffer>) {}

  /** The next `n` bytes (fewer only at the end): a slice of one piece, or a copy across pieces. */
  take(n: number): Buffer {
    if (this.piece.length - this.at >= n) {
      this.at += n;
      return this.piece.subarray(this.at - n, this.at);
    }
    const out = Buffer.allocUnsafe(n);
    let o = 0;
    while (o < n && this.more()) {
      const k = Math.min(n - o, this.piece.length - this.at);
      this.piece.copy(out, o, this.at, this.at + k);
      o += k;
      this.at += k;
    }
    return out.subarray(0, o);
  }

  atEnd(): boolean {
    return !this.more();
  }

  /** False when every piece is used up. */
  private more(): boolean {
    while (this.at >= this.piece.length) {
      const next = this.pieces.next();
      if (next.done) return false;
      this.piece = next.value;
      this.at = 0;
    }
    return true;
  }
}
