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
  const bad = (why: string) => new RepoError(`${what} ${why}`, "corrupt");
  if (buf.length < HEADER_BYTES || !buf.subarray(0, 4).equals(MAGIC)) throw bad("is not a snapshot listing");
  if (buf[4] !== VERSION) throw bad(`has version ${buf[4]}; this pi-guard reads version ${VERSION}`);
  const count = buf.readUInt32LE(5);
  // Bounded before anything is allocated: every entry takes at least its id and length.
  if (count > (buf.length - HEADER_BYTES) / (ID_BYTES + 4)) throw bad("is truncated");
  const out = new Map<string, Buffer>();
  let o = HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    if (o + ID_BYTES + 4 > buf.length) throw bad("is truncated");
    const id = buf.toString("hex", o, o + ID_BYTES);
    const length = buf.readUInt32LE(o + ID_BYTES);
    o += ID_BYTES + 4;
    if (length > MAX_BODY_BYTES || o + length > buf.length) throw bad("is truncated");
    out.set(id, buf.subarray(o, o + length));
    o += length;
  }
  if (o !== buf.length) throw bad("has trailing bytes");
  return out;
}
