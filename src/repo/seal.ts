import { blobId, decrypt, encrypt } from "./crypto.js";
import { decode, encode } from "./compress.js";
import { RepoError } from "./errors.js";

/** Compress then encrypt each range of `buffer`; the reply holds the sealed blobs back to back. */
export interface SealRequest {
  op: "seal";
  job: number;
  key: Uint8Array;
  buffer: ArrayBuffer;
  /** [start, end) pairs into buffer. */
  ranges: number[];
}

export interface OpenRequest {
  op: "open";
  job: number;
  key: Uint8Array;
  idKey: Uint8Array;
  buffer: ArrayBuffer;
  /** [start, end) pairs of sealed blobs. */
  ranges: number[];
  /** Expected blob id (hex) of each plaintext: a mismatch is damage, never handed back. */
  ids: string[];
}

export interface BatchReply {
  job: number;
  buffer: ArrayBuffer;
  lengths: number[];
}

export function sealBatch(req: SealRequest): BatchReply {
  const key = Buffer.from(req.key.buffer, req.key.byteOffset, req.key.byteLength);
  const src = Buffer.from(req.buffer);
  const parts: Buffer[] = [];
  for (let i = 0; i < req.ranges.length; i += 2) {
    parts.push(encrypt(key, encode(src.subarray(req.ranges[i], req.ranges[i + 1]))));
  }
  return packReply(req.job, parts);
}

export function openBatch(req: OpenRequest): BatchReply {
  const key = Buffer.from(req.key.buffer, req.key.byteOffset, req.key.byteLength);
  const idKey = Buffer.from(req.idKey.buffer, req.idKey.byteOffset, req.idKey.byteLength);
  const src = Buffer.from(req.buffer);
  const parts: Buffer[] = [];
  for (let i = 0; i < req.ranges.length; i += 2) {
    const id = req.ids[i / 2];
    const what = `blob ${id.slice(0, 12)}`;
    const plain = decode(decrypt(key, src.subarray(req.ranges[i], req.ranges[i + 1]), what), what);
    if (!blobId(idKey, plain).equals(Buffer.from(id, "hex"))) {
      throw new RepoError(`${what} does not match its id (damaged)`, "corrupt");
    }
    parts.push(plain);
  }
  return packReply(req.job, parts);
}

function packReply(job: number, parts: Buffer[]): BatchReply {
  const all = Buffer.concat(parts);
  // Copy into a standalone ArrayBuffer so it can be transferred without dragging a pool slab along.
  const buffer = all.buffer.byteLength === all.length && all.byteOffset === 0 ? all.buffer : all.buffer.slice(all.byteOffset, all.byteOffset + all.length);
  return { job, buffer: buffer as ArrayBuffer, lengths: parts.map((p) => p.length) };
}
