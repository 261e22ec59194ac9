import { createRequire } from "node:module";
import { RepoError } from "./errors.js";

// zstd-napi is a native addon; load it lazily so commands that never touch blob data start fast.
type Zstd = typeof import("zstd-napi");
let zstd: Zstd | undefined;
function lib(): Zstd {
  zstd ??= createRequire(import.meta.url)("zstd-napi") as Zstd;
  return zstd;
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
