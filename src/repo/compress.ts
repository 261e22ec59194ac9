import { createRequire } from "node:module";
import { RepoError } from "./errors.js";

// zstd-napi is a native addon; load it lazily so commands that never touch blob data start fast.
type Zstd = typeof import("zstd-napi");
// The package's low-level binding (zstd-napi/binding.js; no "exports" map, so the path resolves),
// typed by the subset used here.
interface ZstdBinding {
  CCtx: new () => {
    setParameter(param: number, value: number): void;
    compress2(dst: Uint8Array, src: Uint8Array): number;
  };
  CParameter: { compressionLevel: number };
  compressBound(size: number): number;
  DCtx: new () => {
    decompress(dst: Uint8Array, src: Uint8Array): number;
    /** [bytes the frame still needs (0: complete), bytes written to dst, bytes read from src] */
    decompressStream(dst: Uint8Array, src: Uint8Array): [number, number, number];
  };
  getFrameContentSize(frame: Uint8Array): number | null;
}
let zstd: Zstd | undefined;
let binding: ZstdBinding | undefined;
function lib(): Zstd {
  zstd ??= createRequire(import.meta.url)("zstd-napi") as Zstd;
  return zstd;
}
function raw(): ZstdBinding {
  binding ??= createRequire(import.meta.url)("zstd-napi/binding.js") as ZstdBinding;
  return binding;
}

/** First byte of every plaintext inside an encrypted object: how the rest is encoded. */
export const enum Encoding {
  Raw = 0,
  Zstd = 1,
}

let compressor: InstanceType<Zstd["Compressor"]> | undefined;
let decompressor: InstanceType<Zstd["Decompressor"]> | undefined;

export const ZSTD_LEVEL = 3;

/** Compress with zstd; keep the raw bytes when compression does not pay (base64 images, random data). */
export function encode(data: Uint8Array): Buffer {
  if (!compressor) {
    compressor = new (lib().Compressor)();
    compressor.setParameters({ compressionLevel: ZSTD_LEVEL });
  }
  const packed = compressor.compress(data);
  if (packed.length + 1 < data.length) return Buffer.concat([Buffer.of(Encoding.Zstd), packed]);
  return Buffer.concat([Buffer.of(Encoding.Raw), data]);
}

let cctx: InstanceType<ZstdBinding["CCtx"]> | undefined;

/** The most bytes `encodeInto` writes for `size` bytes of input. */
export function encodeBound(size: number): number {
  return 1 + raw().compressBound(size);
}

/**
 * What `encode` gives, written into `dest` (at least `encodeBound(data.length)` long); returns its
 * length. zstd writes straight into the caller's buffer: `encode` allocated a bound-sized buffer
 * per frame and copied the result twice, fresh memory a sealing thread paid for in page faults.
 */
export function encodeInto(data: Uint8Array, dest: Buffer): number {
  if (!cctx) {
    cctx = new (raw().CCtx)();
    cctx.setParameter(raw().CParameter.compressionLevel, ZSTD_LEVEL);
  }
  const packed = cctx.compress2(dest.subarray(1), data);
  if (packed + 1 < data.length) {
    dest[0] = Encoding.Zstd;
    return packed + 1;
  }
  dest[0] = Encoding.Raw;
  dest.set(data, 1);
  return data.length + 1;
}

export function decode(plain: Buffer, what: string): Buffer {
  const tag = plain[0];
  const body = plain.subarray(1);
  if (tag === Encoding.Raw) return body;
  if (tag === Encoding.Zstd) {
    decompressor ??= new (lib().Decompressor)();
    try {
      return decompressor.decompress(body);
    } catch {
      throw new RepoError(`${what} does not decompress`, "corrupt");
    }
  }
  throw new RepoError(`${what} has unknown encoding ${tag}`, "corrupt");
}

let dctx: InstanceType<ZstdBinding["DCtx"]> | undefined;
let scratch = Buffer.alloc(0);

/**
 * Like `decode`, but zstd output goes into a scratch buffer owned by this module and reused by the
 * next call: the hot restore path copies out what it needs instead of allocating a fresh buffer per
 * frame (a gigabyte of short-lived buffers is what made restores slow and memory-hungry).
 */
export function decodeTransient(plain: Buffer, what: string): Buffer {
  const tag = plain[0];
  const body = plain.subarray(1);
  if (tag === Encoding.Raw) return body;
  if (tag !== Encoding.Zstd) throw new RepoError(`${what} has unknown encoding ${tag}`, "corrupt");
  const z = raw();
  let size: number | null;
  try {
    size = z.getFrameContentSize(body);
  } catch {
    throw new RepoError(`${what} does not decompress`, "corrupt");
  }
  if (size === null || size > 64 * 1024 * 1024) return decode(plain, what);
  if (scratch.length < size) scratch = Buffer.allocUnsafeSlow(Math.max(size, 2 * 1024 * 1024));
  dctx ??= new z.DCtx();
  try {
    const n = dctx.decompress(scratch, body);
    return scratch.subarray(0, n);
  } catch {
    throw new RepoError(`${what} does not decompress`, "corrupt");
  }
}

/** The decoded size of a frame's plaintext, or null when its zstd header does not say (or says too much). */
export function decodedSize(plain: Buffer, what: string): number | null {
  const tag = plain[0];
  if (plain.length === 0) throw new RepoError(`${what} is empty`, "corrupt");
  if (tag === Encoding.Raw) return plain.length - 1;
  if (tag !== Encoding.Zstd) throw new RepoError(`${what} has unknown encoding ${tag}`, "corrupt");
  let size: number | null;
  try {
    size = raw().getFrameContentSize(plain.subarray(1));
  } catch {
    throw new RepoError(`${what} does not decompress`, "corrupt");
  }
  return size === null || size > 64 * 1024 * 1024 ? null : size;
}

/** Decode into `dest`, which is exactly `decodedSize` long; anything else is damage. */
export function decodeInto(plain: Buffer, dest: Buffer, what: string): Buffer {
  const body = plain.subarray(1);
  if (plain[0] === Encoding.Raw) {
    body.copy(dest);
    return dest;
  }
  dctx ??= new (raw().DCtx)();
  let n: number;
  try {
    n = dctx.decompress(dest, body);
  } catch {
    throw new RepoError(`${what} does not decompress`, "corrupt");
  }
  if (n !== dest.length) throw new RepoError(`${what} decodes to ${n} bytes, not the ${dest.length} its header declares`, "corrupt");
  return dest;
}

const PIECE_BYTES = 256 * 1024;

/**
 * What `decode` returns, a piece at a time: each piece is valid only until the next is asked for
 * (one buffer is reused). For objects decoded to tens of MB (a snapshot listing: 43 MB at 100,000
 * snapshots) that are read once, front to back.
 */
export function* decodePieces(plain: Buffer, what: string): Generator<Buffer> {
  const tag = plain[0];
  const body = plain.subarray(1);
  if (tag === Encoding.Raw) return yield body;
  if (tag !== Encoding.Zstd) throw new RepoError(`${what} has unknown encoding ${tag}`, "corrupt");
  const ctx = new (raw().DCtx)(); // its own: the shared one may be mid-frame in another generator
  const dst = Buffer.allocUnsafe(PIECE_BYTES);
  let at = 0;
  for (;;) {
    let left: number, written: number, read: number;
    try {
      [left, written, read] = ctx.decompressStream(dst, body.subarray(at));
    } catch {
      throw new RepoError(`${what} does not decompress`, "corrupt");
    }
    at += read;
    if (written) yield dst.subarray(0, written);
    // Done when every input byte is read, the frame is complete and nothing is left to flush.
    if (at === body.length && left === 0 && written < dst.length) return;
    if (!written && !read) throw new RepoError(`${what} is truncated`, "corrupt");
  }
}
