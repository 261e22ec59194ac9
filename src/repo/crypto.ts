import { createCipheriv, createDecipheriv, createHmac, randomBytes, randomFillSync, hkdfSync, scrypt as scryptCb } from "node:crypto";
import { promisify } from "node:util";
import { RepoError } from "./errors.js";

const scryptAsync = promisify(scryptCb) as (pw: Buffer, salt: Buffer, len: number, opts: object) => Promise<Buffer>;

export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;
/** Bytes an encrypted object has on top of its plaintext: nonce + GCM tag. */
export const CRYPTO_OVERHEAD = NONCE_BYTES + TAG_BYTES;

/** AES-256-GCM: nonce(12) || ciphertext || tag(16). A fresh random nonce per object. */
export function encrypt(key: Buffer, plaintext: Buffer, aad?: Buffer): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  if (aad) cipher.setAAD(aad);
  const body = cipher.update(plaintext);
  const tail = cipher.final();
  return Buffer.concat([nonce, body, tail, cipher.getAuthTag()]);
}

export function decrypt(key: Buffer, sealed: Buffer, what: string, aad?: Buffer): Buffer {
  if (sealed.length < CRYPTO_OVERHEAD) throw new RepoError(`${what} is truncated (${sealed.length} bytes)`, "corrupt");
  const nonce = sealed.subarray(0, NONCE_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const decipher = createDecipheriv("aes-256-gcm", key, nonce);
  if (aad) decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  try {
    const body = decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES));
    const tail = decipher.final();
    return tail.length ? Buffer.concat([body, tail]) : body;
  } catch {
    throw new RepoError(`${what} failed authentication (damaged or wrong key)`, "corrupt");
  }
}

/** Slices this small come out of the C library's heap, which reuses freed memory at once. */
const SLICE = 128 * 1024;

/**
 * `encrypt` without new memory: `buf` holds the plaintext at [NONCE_BYTES, NONCE_BYTES + length)
 * and room for the tag after it; the nonce, the ciphertext (in place) and the tag are written
 * around it. Returns the sealed object, `buf`'s first length + CRYPTO_OVERHEAD bytes. Node's cipher
 * returns a fresh buffer per call; slices keep those in reused heap memory (see decryptInto).
 */
export function encryptInPlace(key: Buffer, buf: Buffer, length: number, aad?: Buffer): Buffer {
  if (buf.length < length + CRYPTO_OVERHEAD) throw new RangeError("encryptInPlace: no room for nonce and tag");
  const nonce = randomFillSync(buf.subarray(0, NONCE_BYTES));
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  if (aad) cipher.setAAD(aad);
  const end = NONCE_BYTES + length;
  // GCM is a stream: each slice's ciphertext is as long as its plaintext, so it goes back where that was.
  let o = NONCE_BYTES;
  for (let i = NONCE_BYTES; i < end; i += SLICE) o += cipher.update(buf.subarray(i, Math.min(i + SLICE, end))).copy(buf, o);
  o += cipher.final().copy(buf, o);
  o += cipher.getAuthTag().copy(buf, o);
  return buf.subarray(0, o);
}

/**
 * Like `decrypt`, but the plaintext goes into `dest` (at least the ciphertext's length; the
 * plaintext is its start). Node's decipher allocates a fresh buffer per call: for a whole frame
 * (hundreds of KB) that is a fresh mapping and a page fault per 4 KiB, which restore paid for every
 * frame; slices below the allocator's mapping threshold reuse heap memory instead. Nothing in
 * `dest` may be used when this throws.
 */
export function decryptInto(key: Buffer, sealed: Buffer, dest: Buffer, what: string, aad?: Buffer): Buffer {
  if (sealed.length < CRYPTO_OVERHEAD) throw new RepoError(`${what} is truncated (${sealed.length} bytes)`, "corrupt");
  const body = sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES);
  if (dest.length < body.length) throw new RangeError("decryptInto: destination too small");
  const decipher = createDecipheriv("aes-256-gcm", key, sealed.subarray(0, NONCE_BYTES));
  if (aad) decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  try {
    let o = 0;
    for (let i = 0; i < body.length; i += SLICE) o += decipher.update(body.subarray(i, i + SLICE)).copy(dest, o);
    o += decipher.final().copy(dest, o);
    return dest.subarray(0, o);
  } catch {
    throw new RepoError(`${what} failed authentication (damaged or wrong key)`, "corrupt");
  }
}

/** Blob ids are keyed (HMAC-SHA-256) so that the ids in a repository reveal nothing about content to
 * someone without the key, while hosts sharing the repository key still deduplicate across each other. */
export function blobId(idKey: Buffer, data: Uint8Array): Buffer {
  return createHmac("sha256", idKey).update(data).digest();
}

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/** The parameters of keys made before calibration; still accepted when read. */
export const DEFAULT_SCRYPT: ScryptParams = { N: 1 << 15, r: 8, p: 1 };

/**
 * New keys, as restic does: fix the memory (128·N·r = 64 MiB) and raise p, which costs time but no
 * memory, until one derivation takes about half a second on this machine.
 */
export const CALIBRATION = { N: 1 << 16, r: 8, targetMs: 500, maxP: 16 };

/**
 * Bounds for parameters read from a key object, which anyone with write access to the repository
 * can plant: a huge N is a malloc failure, a huge p an unlock that never ends.
 */
export const SCRYPT_BOUNDS = { minLogN: 10, maxLogN: 20, maxR: 32, maxP: 64, maxMemory: 256 * 1024 * 1024, maxWork: (1 << 16) * 8 * 64 };

const scryptMemory = (params: ScryptParams): number => 128 * params.N * params.r;

/** Why these parameters must not be used, or undefined when they are within bounds. */
export function scryptParamsProblem(params: ScryptParams): string | undefined {
  const { N, r, p } = params;
  const b = SCRYPT_BOUNDS;
  if (![N, r, p].every(Number.isSafeInteger)) return "scrypt parameters are not integers";
  if (N < 2 ** b.minLogN || N > 2 ** b.maxLogN || (N & (N - 1)) !== 0) return `scrypt N=${N} is not a power of two from 2^${b.minLogN} to 2^${b.maxLogN}`;
  if (r < 1 || r > b.maxR) return `scrypt r=${r} is not within 1..${b.maxR}`;
  if (p < 1 || p > b.maxP) return `scrypt p=${p} is not within 1..${b.maxP}`;
  if (scryptMemory(params) > b.maxMemory) return `scrypt N=${N}, r=${r} needs ${scryptMemory(params) >> 20} MiB, more than ${b.maxMemory >> 20} MiB`;
  if (N * r * p > b.maxWork) return `scrypt N=${N}, r=${r}, p=${p} is more work than pi-guard ever asks for`;
  return undefined;
}

/** Parameters for a new password key on this machine: 64 MiB, about half a second. */
export async function calibrateScrypt(): Promise<ScryptParams> {
  const { N, r, targetMs, maxP } = CALIBRATION;
  const started = performance.now();
  await deriveFromPassword("calibration", randomBytes(16), { N, r, p: 1 });
  const ms = Math.max(1, performance.now() - started);
  return { N, r, p: Math.min(maxP, Math.max(1, Math.round(targetMs / ms))) };
}

export async function deriveFromPassword(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  const problem = scryptParamsProblem(params);
  if (problem) throw new RepoError(problem, "corrupt");
  return scryptAsync(Buffer.from(password, "utf8"), salt, 32, {
    N: params.N,
    r: params.r,
    p: params.p,
    maxmem: 256 * params.N * params.r + 1024 * 1024,
  });
}

/** Key files hold 32 random bytes, so stretching them is pointless: HKDF is enough and keeps start-up fast. */
export function deriveFromKeyFile(secret: Buffer, salt: Buffer): Buffer {
  return Buffer.from(hkdfSync("sha256", secret, salt, "pi-guard key file v1", 32));
}

export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString("hex");
}
