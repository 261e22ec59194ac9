import { blobId, decrypt, encrypt } from "./crypto.js";
import { decodeTransient, encode } from "./compress.js";
import { RepoError } from "./errors.js";
import { AAD } from "./format.js";

/** Compress then encrypt each frame, a [start, end) range of `buffer`; replies with the sealed frames. */
export interface SealRequest {
  op: "seal";
  job: number;
  key: Uint8Array;
  buffer: ArrayBuffer;
  frames: number[];
}

export interface WantedBlob {
  /** Index of the frame (in `frames`) that holds the blob. */
  frame: number;
  inFrame: number;
  rawLength: number;
  /** Expected blob id (hex): a mismatch is damage, never handed back. */
  id: string;
}

/** Decrypt + decompress sealed frames, then cut out and verify the wanted blobs. */
export interface OpenRequest {
  op: "open";
  job: number;
  key: Uint8Array;
  idKey: Uint8Array;
  buffer: ArrayBuffer;
  frames: number[];
  blobs: WantedBlob[];
}

export interface BatchReply {
  job: number;
  buffer: ArrayBuffer;
  lengths: number[];
}

const asBuffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

export function sealBatch(req: SealRequest): Buffer[] {
  const key = asBuffer(req.key);
  const src = Buffer.from(req.buffer);
  const parts: Buffer[] = [];
  for (let i = 0; i < req.frames.length; i += 2) parts.push(encrypt(key, encode(src.subarray(req.frames[i], req.frames[i + 1])), AAD.frame));
  return parts;
}

export function openBatch(req: OpenRequest): Buffer[] {
  const key = asBuffer(req.key);
  const idKey = asBuffer(req.idKey);
  const src = Buffer.from(req.buffer);
  // All wanted blobs land in one buffer: one allocation per batch, and a worker can transfer it as is.
  const out = Buffer.allocUnsafeSlow(req.blobs.reduce((n, b) => n + b.rawLength, 0));
  let o = 0;
  let frameIndex = -1;
  let frame: Buffer = out;
  return req.blobs.map((b) => {
    if (b.frame !== frameIndex) {
      frameIndex = b.frame;
      const what = `frame at ${req.frames[2 * b.frame]}`;
      frame = decodeTransient(decrypt(key, src.subarray(req.frames[2 * b.frame], req.frames[2 * b.frame + 1]), what, AAD.frame), what);
    }
    const what = `blob ${b.id.slice(0, 12)}`;
    if (b.inFrame + b.rawLength > frame.length) throw new RepoError(`${what} lies outside its frame (damaged index)`, "corrupt");
    const data = frame.subarray(b.inFrame, b.inFrame + b.rawLength);
    if (!blobId(idKey, data).equals(Buffer.from(b.id, "hex"))) throw new RepoError(`${what} does not match its id (damaged)`, "corrupt");
    data.copy(out, o);
    o += b.rawLength;
    return out.subarray(o - b.rawLength, o);
  });
}

/** Worker threads send a batch back as one transferable buffer (no copy on the way to the main thread). */
export function packReply(job: number, parts: Buffer[]): BatchReply {
  const lengths = parts.map((p) => p.length);
  // openBatch's parts already lie back to back in one buffer of their own: send that buffer.
  const first = parts[0];
  const total = lengths.reduce((a, b) => a + b, 0);
  if (first && first.byteOffset === 0 && first.buffer.byteLength === total && parts.every((p) => p.buffer === first.buffer)) {
    return { job, buffer: first.buffer as ArrayBuffer, lengths };
  }
  const all = Buffer.concat(parts);
  // A standalone ArrayBuffer, so it can be transferred without dragging a pool slab along.
  const buffer = all.byteOffset === 0 && all.buffer.byteLength === all.length ? all.buffer : all.buffer.slice(all.byteOffset, all.byteOffset + all.length);
  return { job, buffer: buffer as ArrayBuffer, lengths: parts.map((p) => p.length) };
}
