import { closeSync, openSync, readSync } from "node:fs";
import path from "node:path";
import { outOfDescriptors } from "../fs-safe.js";
import { blobId, CRYPTO_OVERHEAD, decryptInto, encryptInPlace, NONCE_BYTES } from "./crypto.js";
import { decodedSize, decodeInto, decodeTransient, encodeBound, encodeInto } from "./compress.js";
import { RepoError } from "./errors.js";
import { type FileWrite, writePlaced } from "./blob-writes.js";
import { AAD } from "./format.js";

/** Compress then encrypt each frame, a [start, end) range of `buffer`; replies with the sealed frames. */
export interface SealRequest {
  op: "seal";
  job: number;
  key: Uint8Array;
  buffer: ArrayBuffer;
  frames: number[];
  /** Send `buffer` back with the reply (`input`): the snapshot copies its next chunks into it. */
  returnBuffer?: boolean;
  /** A buffer to seal into when it is big enough (the snapshot hands written ones back). */
  out?: ArrayBuffer;
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
  /** The sealed bytes; empty when `file` says where to read them. */
  buffer: ArrayBuffer;
  /**
   * A pack in a local repository: the thread reads `length` bytes at `position` itself, into a
   * buffer it reuses (no allocation, no transfer, no page faults on fresh memory per batch).
   */
  file?: { path: string; position: number; length: number };
  frames: number[];
  blobs: WantedBlob[];
  /** A buffer to decode into when it is big enough (restore hands written buffers back for reuse). */
  out?: ArrayBuffer;
  /** Send `buffer` back with the reply (`input`): the caller reuses it for the next sealed bytes. */
  returnBuffer?: boolean;
  /**
   * The thread writes the blobs itself, `places[i]` saying where blob i goes ([fd, pos, ...], on
   * descriptors the caller keeps open until the reply), and replies with what it wrote instead of
   * the bytes: nothing decoded crosses threads, and the decode buffer is the thread's own.
   */
  places?: number[][];
  /** With `places`: the files were created empty, so zero runs are left as holes. */
  holes?: boolean;
}

export interface BatchReply {
  job: number;
  buffer: ArrayBuffer;
  lengths: number[];
  /** Where each part starts in `buffer`; without it the parts lie back to back. */
  offsets?: number[];
  /** The request's input bytes, given back when it asked (`returnBuffer`). */
  input?: ArrayBuffer;
  /** An open with `places`: what was written (`buffer` is then empty). */
  written?: FileWrite[];
}

/** Where openBatch reads a local pack's bytes: grown to the largest read, reused by the next. */
let sealedScratch = Buffer.alloc(0);

function readSealed(file: { path: string; position: number; length: number }): Buffer {
  if (sealedScratch.length < file.length) sealedScratch = Buffer.allocUnsafeSlow(Math.max(file.length, 1024 * 1024));
  const pack = path.basename(file.path).slice(0, 12);
  let fd: number;
  try {
    fd = openSync(file.path, "r");
  } catch (err) {
    // Too many open files is this process's trouble (the caller waits and retries), not damage.
    const kind = outOfDescriptors(err) ? "io" : "corrupt";
    throw new RepoError(`pack ${pack} cannot be read: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "it does not exist" : (err as Error).message}`, kind);
  }
  try {
    let got = 0;
    while (got < file.length) {
      const n = readSync(fd, sealedScratch, got, file.length - got, file.position + got);
      if (n === 0) throw new RepoError(`pack ${pack} is truncated`, "corrupt");
      got += n;
    }
  } catch (err) {
    if (err instanceof RepoError) throw err;
    throw new RepoError(`pack ${pack} cannot be read: ${(err as Error).message}`, "corrupt");
  } finally {
    closeSync(fd);
  }
  return sealedScratch.subarray(0, file.length);
}

/** Where openBatch decrypts frames: grown to the largest batch, reused by the next. */
let plainScratch = Buffer.alloc(0);

/**
 * Where openBatch decodes a batch whose blobs it writes itself: its bytes are written before the
 * next batch starts, so one buffer serves them all (no allocation, no page faults, no garbage).
 */
let decodedScratch = Buffer.alloc(0);
/** A batch needing more than this (rare: large frames mostly unwanted) gets a buffer of its own rather than growing the scratch for good. */
const DECODED_SCRATCH_MAX = 16 * 1024 * 1024;

function decodeScratch(bytes: number): Buffer {
  if (bytes > DECODED_SCRATCH_MAX) return Buffer.allocUnsafeSlow(bytes);
  if (decodedScratch.length < bytes) decodedScratch = Buffer.allocUnsafeSlow(Math.max(bytes, 4 * 1024 * 1024));
  return decodedScratch.subarray(0, bytes);
}

/** Buffers openBatch allocated for its own output: never a shared pool slab, so safe to transfer. */
const ownBuffers = new WeakSet<ArrayBufferLike>();

const asBuffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

/** Bytes sealBatch may need for these frames: each one's bound, nonce and tag. */
export function sealedBound(frames: number[]): number {
  let n = 0;
  for (let i = 0; i < frames.length; i += 2) n += encodeBound(frames[i + 1] - frames[i]) + CRYPTO_OVERHEAD;
  return n;
}

/**
 * Each frame compressed and encrypted where it ends up, back to back in one buffer (`req.out` when
 * it is big enough: the snapshot hands written ones back), so sealing a gigabyte touches no fresh
 * memory. The parts are views of that buffer.
 */
export function sealBatch(req: SealRequest): Buffer[] {
  const key = asBuffer(req.key);
  const src = Buffer.from(req.buffer);
  const bound = sealedBound(req.frames);
  const out = req.out && req.out.byteLength >= bound ? Buffer.from(req.out) : Buffer.from(new ArrayBuffer(bound));
  ownBuffers.add(out.buffer);
  const parts: Buffer[] = [];
  let at = 0;
  for (let i = 0; i < req.frames.length; i += 2) {
    const room = out.subarray(at);
    const length = encodeInto(src.subarray(req.frames[i], req.frames[i + 1]), room.subarray(NONCE_BYTES));
    const sealed = encryptInPlace(key, room, length, AAD.frame);
    parts.push(sealed);
    at += sealed.length;
  }
  return parts;
}

export function openBatch(req: OpenRequest): Buffer[] {
  const key = asBuffer(req.key);
  const idKey = asBuffer(req.idKey);
  const src = req.file ? readSealed(req.file) : Buffer.from(req.buffer);
  // Every frame is decrypted first, so that its decoded size is known; then all of them are
  // decoded straight into one buffer (one allocation per batch, no copy of the wanted bytes, and a
  // worker transfers it as is). The wanted blobs are slices of it.
  // The plaintexts go into one scratch buffer of this thread, reused by every batch.
  const sealedBytes = req.frames.reduce((n, x, i) => (i % 2 ? n + x - req.frames[i - 1] : n), 0);
  if (plainScratch.length < sealedBytes) plainScratch = Buffer.allocUnsafeSlow(Math.max(sealedBytes, 1024 * 1024));
  const sealed: Buffer[] = [];
  let at = 0;
  for (let f = 0; f < req.frames.length / 2; f++) {
    const what = `frame at ${req.frames[2 * f]}`;
    const plain = decryptInto(key, src.subarray(req.frames[2 * f], req.frames[2 * f + 1]), plainScratch.subarray(at), what, AAD.frame);
    sealed.push(plain);
    at += plain.length;
  }
  const sizes = sealed.map((plain, f) => decodedSize(plain, `frame at ${req.frames[2 * f]}`));
  const total = sizes.reduce<number>((a, b) => a + (b ?? 0), 0);
  const wanted = req.blobs.reduce((n, b) => n + b.rawLength, 0);
  // Frames mostly hold what is asked for; when most of their bytes are not wanted (small files
  // sharing a frame), the wanted blobs are copied out instead of keeping whole frames alive. A
  // frame that does not declare its size is decoded the slow way, and copied out too.
  const compact = wanted * 2 < total || sizes.includes(null);
  // Fresh memory costs a page fault per 4 KiB on first touch; a reused buffer is already mapped.
  const reuse = !compact && req.out && req.out.byteLength >= total;
  const writes = req.places !== undefined;
  const decoded = compact ? undefined : writes ? decodeScratch(total) : reuse ? Buffer.from(req.out!, 0, total) : Buffer.allocUnsafeSlow(total);
  if (decoded && !writes) ownBuffers.add(decoded.buffer);
  const out = compact ? (writes ? decodeScratch(wanted) : Buffer.allocUnsafeSlow(wanted)) : undefined;
  const starts: number[] = [];
  let o = 0;
  for (const size of sizes) {
    starts.push(o);
    o += size ?? 0;
  }
  let frameIndex = -1;
  let frame: Buffer = Buffer.alloc(0);
  let w = 0;
  return req.blobs.map((b) => {
    if (b.frame !== frameIndex) {
      frameIndex = b.frame;
      const what = `frame at ${req.frames[2 * b.frame]}`;
      const plain = sealed[b.frame];
      frame = decoded
        ? decodeInto(plain, decoded.subarray(starts[b.frame], starts[b.frame] + sizes[b.frame]!), what)
        : decodeTransient(plain, what);
    }
    const what = `blob ${b.id.slice(0, 12)}`;
    if (b.inFrame + b.rawLength > frame.length) throw new RepoError(`${what} lies outside its frame (damaged index)`, "corrupt");
    const data = frame.subarray(b.inFrame, b.inFrame + b.rawLength);
    if (!blobId(idKey, data).equals(Buffer.from(b.id, "hex"))) throw new RepoError(`${what} does not match its id (damaged)`, "corrupt");
    if (!out) return data;
    data.copy(out, w);
    w += b.rawLength;
    return out.subarray(w - b.rawLength, w);
  });
}

/**
 * Open a batch and write its blobs where `req.places` says. Every blob is checked before the first
 * write: a batch that throws has written nothing.
 */
export function openAndWrite(req: OpenRequest): FileWrite[] {
  return writePlaced(openBatch(req), req.places ?? [], !!req.holes);
}

/** The bytes of a reply's parts. */
export function sealedBytes(reply: BatchReply): number {
  return reply.lengths.reduce((a, b) => a + b, 0);
}

/** Worker threads send a batch back as one transferable buffer (no copy on the way to the main thread). */
export function packReply(job: number, parts: Buffer[]): BatchReply {
  const lengths = parts.map((p) => p.length);
  // openBatch's parts already lie back to back, in order, in one buffer of their own: send that
  // buffer. Slices of decoded frames can fill an exact-size buffer too and still not be back to
  // back (a gap of unwanted bytes, a blob wanted twice): those need their offsets (below).
  const first = parts[0];
  const total = lengths.reduce((a, b) => a + b, 0);
  let at = 0;
  const backToBack = parts.every((p) => p.buffer === first?.buffer && p.byteOffset === at && ((at += p.length), true));
  if (first && backToBack && first.buffer.byteLength === total) {
    return { job, buffer: first.buffer as ArrayBuffer, lengths };
  }
  // Slices of the frames openBatch decoded in place: send the frames, and where each part starts.
  if (first && ownBuffers.has(first.buffer as ArrayBuffer) && parts.every((p) => p.buffer === first.buffer)) {
    return { job, buffer: first.buffer as ArrayBuffer, lengths, offsets: parts.map((p) => p.byteOffset) };
  }
  const all = Buffer.concat(parts);
  // A standalone ArrayBuffer, so it can be transferred without dragging a pool slab along.
  const buffer = all.byteOffset === 0 && all.buffer.byteLength === all.length ? all.buffer : all.buffer.slice(all.byteOffset, all.byteOffset + all.length);
  return { job, buffer: buffer as ArrayBuffer, lengths: parts.map((p) => p.length) };
}
