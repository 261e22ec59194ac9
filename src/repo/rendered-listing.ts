// The whole of `snapshots --json`, rendered once and kept in the metadata cache (snapshots.json.bin,
// docs/FORMAT.md §13) under a fingerprint of the names snapshots/ listed: at 100,000 snapshots,
// picking 100,000 rows out of rows.log, sorting them and joining them again cost about a second
// (mostly garbage collection of 100,000 small buffers); printing from this file is copying bytes
// and inserting the local times (which depend on the reader's TZ, so they are not stored).
//
// The file is a cache of a cache: it is used only when snapshots/ lists exactly the names it was
// made for, and only after its authentication tag verified over every byte. It is never appended
// to, only replaced whole (temp file + rename), so the bytes an open descriptor verified are the
// bytes it then reads again to print: the 73 MB are never held in memory at once.

import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { promises as fs, readSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { readExactly, writeFully } from "../fs-safe.js";
import type { MetaCache } from "./meta-cache.js";
import { ROW_VERSION, type SnapshotRow } from "./snapshot-rows.js";

/** What `snapshots --json` prints, with the local times left out. */
export interface RenderedListing {
  count: number;
  /** Where in the text each record's local time goes, ascending. */
  cuts: Uint32Array;
  /** Each record's time (ms since the epoch; NaN for a time that does not parse). */
  times: Float64Array;
  textLength: number;
  /** The text, a piece at a time; a piece is good until the next one is asked for. */
  text(): AsyncIterable<Buffer>;
}

const FILE = "snapshots.json.bin";
const MAGIC = Buffer.from("PGRJ");
const VERSION = 1;
const NONCE_BYTES = 12;
const FINGERPRINT_BYTES = 32;
const HEADER_BYTES = MAGIC.length + 1 + NONCE_BYTES + FINGERPRINT_BYTES + 4 + 4;
const TAG_BYTES = 16;
const CHUNK = 1 << 20;
const ROWS_PER_PIECE = 2000;

/** Which names the listing was made for (in any order), and how rows were rendered. */
export function listFingerprint(names: readonly string[]): Buffer {
  return createHash("sha256").update(`pi-guard-rows v${ROW_VERSION}\n`).update([...names].sort().join("\n")).digest();
}

/** Rows in the order they are printed. */
export interface RowSource {
  count: number;
  id(i: number): string;
  time(i: number): string;
  /** Where in row i's text its local time goes. */
  cut(i: number): number;
  length(i: number): number;
  /** Row i's text: valid until the next call. */
  text(i: number): Buffer;
}

/** Rows held in memory (from rows.log), sorted as they are to be printed. */
export function rowsInMemory(rows: readonly SnapshotRow[]): RowSource {
  return {
    count: rows.length,
    id: (i) => rows[i].id,
    time: (i) => rows[i].time,
    cut: (i) => rows[i].cut,
    length: (i) => rows[i].text.length,
    text: (i) => rows[i].text,
  };
}

/** The listing of `rows`; its text is read from them again each time it is iterated. */
export function renderRows(rows: RowSource): RenderedListing {
  const cuts = new Uint32Array(rows.count);
  const times = new Float64Array(rows.count);
  let pos = 0;
  for (let i = 0; i < rows.count; i++) {
    cuts[i] = pos + 2 + rows.cut(i); // after "[\n" or ",\n"
    pos += 2 + rows.length(i);
    times[i] = new Date(rows.time(i)).getTime();
  }
  return {
    count: rows.count,
    cuts,
    times,
    textLength: rows.count ? pos + 3 : 3, // "\n]\n", or "[]\n"
    async *text() {
      // The bytes JSON.stringify(records, null, 2) + "\n" would print, local times left out.
      if (!rows.count) return yield Buffer.from("[]\n");
      for (let start = 0; start < rows.count; start += ROWS_PER_PIECE) {
        const end = Math.min(rows.count, start + ROWS_PER_PIECE);
        let size = 0;
        for (let i = start; i < end; i++) size += 2 + rows.length(i);
        const piece = Buffer.allocUnsafe(size);
        let o = 0;
        for (let i = start; i < end; i++) {
          o += piece.write(i === 0 ? "[\n" : ",\n", o, "latin1");
          o += rows.text(i).copy(piece, o); // copied at once: a spooled row's bytes are reused
        }
        yield piece;
      }
      yield Buffer.from("\n]\n");
    },
  };
}

/**
 * "PGRJ" | version u8 | nonce (12) | fingerprint (32) | count u32 | textLength u32 |
 * count × cut u32 | count × time f64 | text | tag (16): GMAC of everything before it.
 */
export async function writeRendered(cache: MetaCache, fingerprint: Buffer, listing: RenderedListing): Promise<void> {
  if (listing.textLength > 0xffffffff) return; // beyond the format: listed the slow way
  const nonce = randomBytes(NONCE_BYTES);
  const header = Buffer.alloc(HEADER_BYTES);
  let o = MAGIC.copy(header, 0);
  o = header.writeUInt8(VERSION, o);
  o += nonce.copy(header, o);
  o += fingerprint.copy(header, o);
  o = header.writeUInt32LE(listing.count, o);
  header.writeUInt32LE(listing.textLength, o);
  const tables = Buffer.alloc(listing.count * 12);
  for (let i = 0; i < listing.count; i++) {
    tables.writeUInt32LE(listing.cuts[i], i * 4);
    tables.writeDoubleLE(listing.times[i], listing.count * 4 + i * 8);
  }
  const mac = cache.authenticator(nonce);
  await cache.replaceFile(cache.path(FILE), async (handle) => {
    let at = 0;
    for await (const part of (async function* () {
      yield header;
      yield tables;
      yield* listing.text();
    })()) {
      mac.update(part);
      at = await writeFully(handle, part, at);
    }
    if (at !== HEADER_BYTES + tables.length + listing.textLength) throw Object.assign(new Error("rendered listing length mismatch"), { code: "EINVAL" });
    await writeFully(handle, mac.tag(), at);
  });
}

/**
 * The cached listing made for `fingerprint`, verified; undefined when there is none, it was made
 * for other names, or it is damaged (then a warning, and the caller's rebuild replaces it).
 */
export async function readRendered(cache: MetaCache, fingerprint: Buffer): Promise<RenderedListing | undefined> {
  if (cache.unusable) return undefined;
  const file = cache.path(FILE);
  let handle: FileHandle;
  try {
    handle = await fs.open(file, "r");
  } catch {
    return undefined;
  }
  let keep = false;
  try {
    const size = (await handle.stat()).size;
    const header = await readExactly(handle, 0, Math.min(size, HEADER_BYTES));
    if (header.length < HEADER_BYTES || !header.subarray(0, 4).equals(MAGIC)) return damaged(cache, file);
    if (header[4] !== VERSION) return undefined; // another version's: replaced by this one's
    const nonce = header.subarray(5, 5 + NONCE_BYTES);
    if (!header.subarray(5 + NONCE_BYTES, 5 + NONCE_BYTES + FINGERPRINT_BYTES).equals(fingerprint)) return undefined; // stale
    const count = header.readUInt32LE(HEADER_BYTES - 8);
    const textLength = header.readUInt32LE(HEADER_BYTES - 4);
    const textAt = HEADER_BYTES + count * 12;
    if (textAt + textLength + TAG_BYTES !== size) return damaged(cache, file);
    const tables = await readExactly(handle, HEADER_BYTES, count * 12);
    const mac = cache.authenticator(Buffer.from(nonce));
    mac.update(header);
    mac.update(tables);
    // Read synchronously, twice (to verify, then to print), into one buffer: a CLI process has
    // nothing to do meanwhile, and 70 round trips through libuv's pool, or 70 MB of fresh
    // buffers (which make V8 collect its heap), cost more than the reads.
    const chunk = Buffer.allocUnsafe(Math.min(CHUNK, textLength));
    for (let at = textAt; at < textAt + textLength; ) {
      const bytesRead = readSync(handle.fd, chunk, 0, Math.min(CHUNK, textAt + textLength - at), at);
      if (bytesRead <= 0) return damaged(cache, file);
      mac.update(chunk.subarray(0, bytesRead));
      at += bytesRead;
    }
    const tag = await readExactly(handle, textAt + textLength, TAG_BYTES);
    if (tag.length !== TAG_BYTES || !timingSafeEqual(tag, mac.tag())) return damaged(cache, file);
    const cuts = new Uint32Array(count);
    const times = new Float64Array(count);
    for (let i = 0; i < count; i++) {
      cuts[i] = tables.readUInt32LE(i * 4);
      times[i] = tables.readDoubleLE(count * 4 + i * 8);
      // Authentic but not what this version writes: rebuilt, never printed.
      if (cuts[i] > textLength || (i > 0 && cuts[i] < cuts[i - 1])) return damaged(cache, file);
    }
    keep = true;
    return {
      count,
      cuts,
      times,
      textLength,
      async *text() {
        try {
          for (let at = textAt; at < textAt + textLength; ) {
            const bytesRead = readSync(handle.fd, chunk, 0, Math.min(CHUNK, textAt + textLength - at), at);
            if (bytesRead <= 0) throw new Error(`${file} shrank while it was read`);
            yield chunk.subarray(0, bytesRead);
            at += bytesRead;
          }
        } finally {
          await handle.close();
        }
      },
    };
  } finally {
    if (!keep) await handle.close();
  }
}

function damaged(cache: MetaCache, file: string): undefined {
  cache.noteDamage(file);
  return undefined;
}
