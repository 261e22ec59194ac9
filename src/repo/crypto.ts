import { createCipheriv, createDecipheriv, createHmac, randomBytes, hkdfSync, scrypt as scryptCb } from "node:crypto";
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

export const DEFAULT_SCRYPT: ScryptParams = { N: 1 << 15, r: 8, p: 1 };

export async function deriveFromPassword(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
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
