import { ObjectNotFound } from "../targets/target.js";
import { CRYPTO_OVERHEAD, decrypt } from "./crypto.js";
import { RepoError } from "./errors.js";
import { AAD, decodePackHeader, packKey, type PackEntry } from "./format.js";
import type { Repository } from "./repository.js";

/**
 * A pack's own description of itself, read from its end: the last 4 bytes give the sealed header's
 * length, the header lists every frame and blob. This is what lets a lost or damaged index be
 * rebuilt. Only the trailer and the header are fetched, never the frames.
 */
export async function readPackHeader(repo: Repository, id: string, size: number): Promise<PackEntry> {
  const short = id.slice(0, 12);
  const bad = (why: string) => new RepoError(`pack ${short}: ${why}`, "corrupt");
  if (size < 4 + CRYPTO_OVERHEAD) throw bad(`too small to be a pack (${size} bytes)`);
  const key = packKey(id);
  const trailer = await repo.target.getRange(key, size - 4, 4);
  if (trailer.length !== 4) throw bad("is truncated");
  const headerLength = trailer.readUInt32LE(0);
  if (headerLength < CRYPTO_OVERHEAD || headerLength > size - 4) throw bad(`header length ${headerLength} does not fit the pack (damaged trailer)`);
  const sealed = await repo.target.getRange(key, size - 4 - headerLength, headerLength);
  if (sealed.length !== headerLength) throw bad("is truncated");
  const what = `pack ${short} header`;
  const blobs = decodePackHeader(decrypt(repo.key.encryption, sealed, what, AAD.packHeader), what);
  // The frames must tile the space before the header exactly, or offsets would point elsewhere.
  const framesEnd = blobs.reduce((end, b) => Math.max(end, b.offset + b.length), 0);
  if (framesEnd !== size - 4 - headerLength) throw bad("header does not describe the pack's frames (damaged)");
  return { id, size, blobs };
}

export interface PackScan {
  /** Packs named by no index that were described by their own headers. */
  found: PackEntry[];
  /** Packs named by no index whose header could not be read. */
  unreadable: { id: string; key: string; size: number; error: string }[];
}

const HEX_ID = /^[0-9a-f]{64}$/;

/** Every pack in data/ that `known` does not name, read from its header. */
export async function scanUnindexedPacks(repo: Repository, known: (id: string) => boolean): Promise<PackScan> {
  const scan: PackScan = { found: [], unreadable: [] };
  for await (const obj of repo.target.list("data")) {
    const id = obj.key.split("/").pop()!;
    if (known(id)) continue;
    if (!HEX_ID.test(id) || obj.key !== packKey(id)) {
      scan.unreadable.push({ id, key: obj.key, size: obj.size, error: `${obj.key} is not a pack name` });
      continue;
    }
    try {
      scan.found.push(await readPackHeader(repo, id, obj.size));
    } catch (err) {
      if (!(err instanceof RepoError) && !(err instanceof ObjectNotFound)) throw err;
      scan.unreadable.push({ id, key: obj.key, size: obj.size, error: err.message });
    }
  }
  return scan;
}
