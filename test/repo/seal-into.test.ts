// sealBatch compresses and encrypts each frame where it ends up in one buffer (a reused one when
// the caller hands it back), instead of allocating and copying per frame. The bytes must be what
// the old path made: the same encoding byte and zstd stream under AES-GCM, so every reader of
// the format (restore, check, the independent reader) sees no difference.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { decode, encode } from "../../src/repo/compress.js";
import { decrypt } from "../../src/repo/crypto.js";
import { AAD } from "../../src/repo/format.js";
import { sealBatch, sealedBound } from "../../src/repo/seal.js";

const text = Buffer.from(Array.from({ length: 40_000 }, (_, i) => `{"line":${i},"text":"hello world ${i % 97}"}\n`).join(""));
// Compressible, incompressible (kept raw), one byte, and compressible again after them.
const input = Buffer.concat([text.subarray(0, 300_000), randomBytes(200_000), Buffer.of(7), text.subarray(300_000, 700_000)]);
const frames = [0, 300_000, 300_000, 500_000, 500_000, 500_001, 500_001, input.length];
const key = randomBytes(32);

function seal(out?: ArrayBuffer): Buffer[] {
  const buffer = input.buffer.slice(input.byteOffset, input.byteOffset + input.length) as ArrayBuffer;
  return sealBatch({ op: "seal", job: 0, key, buffer, frames, out });
}

function checkParts(parts: Buffer[]): void {
  expect(parts).toHaveLength(frames.length / 2);
  parts.forEach((part, f) => {
    const raw = input.subarray(frames[2 * f], frames[2 * f + 1]);
    const plain = decrypt(key, part, "frame", AAD.frame);
    expect(plain.equals(encode(raw))).toBe(true);
    expect(decode(plain, "frame").equals(raw)).toBe(true);
  });
}

describe("sealBatch", () => {
  it("seals each frame as encode + encrypt did, back to back in one buffer", () => {
    const parts = seal();
    checkParts(parts);
    expect(new Set(parts.map((p) => p.buffer)).size).toBe(1);
    for (let f = 1; f < parts.length; f++) expect(parts[f].byteOffset).toBe(parts[f - 1].byteOffset + parts[f - 1].length);
    // The random frame did not compress: kept raw, one tag byte more than its bytes.
    expect(decrypt(key, parts[1], "frame", AAD.frame)[0]).toBe(0);
    expect(decrypt(key, parts[0], "frame", AAD.frame)[0]).toBe(1);
  });

  it("seals into a buffer handed back, whatever it held, and only when it is big enough", () => {
    const reused = new ArrayBuffer(sealedBound(frames) + 100);
    new Uint8Array(reused).fill(0xa5);
    const parts = seal(reused);
    checkParts(parts);
    expect(parts[0].buffer).toBe(reused);
    const small = new ArrayBuffer(sealedBound(frames) - 1);
    const fresh = seal(small);
    checkParts(fresh);
    expect(fresh[0].buffer).not.toBe(small);
  });
});
