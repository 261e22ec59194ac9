// The local metadata cache (docs/FORMAT.md §13): decrypted index and snapshot objects, so that a
// process does not fetch and decrypt every one of them again. It is only a cache: everything in
// it is also in the repository, every batch carries an HMAC under a key derived from the master
// key, and anything that fails the check, or cannot be parsed, is dropped and fetched again.
//
// One append-only file per kind rather than one file per object or an SQLite table: 100,000
// snapshot objects load with one read and a handful of HMACs (measured: a table of 100,000 rows
// took 0.43 s to select and 0.32 s to check row by row on the bench machine).

import { createCipheriv, createHmac, hkdfSync } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import { makeDirs, readExactly, writeFully } from "../fs-safe.js";
import { ID_BYTES } from "./format.js";
import { collectGrown } from "./collect.js";

export type CacheKind = "index" | "snapshots" | "heads" | "briefs" | "listing" | "rows";

const MAGIC = Buffer.from("PGMC");
const VERSION = 1;
const HEADER_BYTES = MAGIC.length + 1 + 4 + 4;
const MAC_BYTES = 32;
const KIND_BYTE: Record<CacheKind, number> = { index: 1, snapshots: 2, heads: 3, briefs: 4, listing: 5, rows: 6 };
/** Beyond this many batches (one per write), a load rewrites the file. */
const MAX_BATCHES = 256;
/**
 * A batch holds at most this many payload bytes (more records are split over several batches), so
 * that writing or scanning 100,000 snapshots never holds the whole file at once: one batch of a
 * cold listing's 43 MB of snapshots, and its copy, were most of the 290-390 MB those peaked at.
 */
export const BATCH_BYTES = 4 << 20;

interface Loaded {
  entries: Map<string, Buffer>;
  batches: number;
  damaged: boolean;
}

/** A running authenticator over bytes fed to it in order (see MetaCache.authenticator). */
export interface Authenticator {
  update(bytes: Buffer): void;
  tag(): Buffer;
}

export class MetaCache {
  private readonly macKey: Buffer;
  private readonly gmacKey: Buffer;
  private readonly loaded = new Map<CacheKind, Loaded>();
  private readonly loading = new Map<CacheKind, Promise<Loaded>>();
  /** Writes to one file run one after another: a rewrite must not race an append of this process. */
  private readonly queue = new Map<CacheKind, Promise<unknown>>();
  private warned = false;
  /** Set when the cache folder cannot be used (read-only, not ours): the repository works without it. */
  private disabled = false;

  constructor(
    readonly dir: string,
    encryptionKey: Uint8Array,
    repoId: string,
    private readonly onWarning: (message: string) => void,
  ) {
    this.macKey = Buffer.from(hkdfSync("sha256", encryptionKey, Buffer.from(repoId, "utf8"), "pi-guard:metadata-cache:v1", 32));
    this.gmacKey = Buffer.from(hkdfSync("sha256", this.macKey, Buffer.alloc(0), "pi-guard:metadata-cache:gmac", 32));
  }

  /**
   * GMAC (AES-256-GCM over associated data only) under a key of this cache, for files too big to
   * HMAC on every read: 73 MB take ~15 ms against ~95 ms for HMAC-SHA-256 on the bench machine.
   * `nonce` (12 bytes) must be fresh for every file written: each file draws a random one.
   */
  authenticator(nonce: Buffer): Authenticator {
    const gcm = createCipheriv("aes-256-gcm", this.gmacKey, nonce);
    return {
      update: (bytes) => void gcm.setAAD(bytes),
      tag: () => {
        gcm.final();
        return gcm.getAuthTag();
      },
    };
  }

  /** Where this cache keeps a file of its own format (rendered-listing.ts). */
  path(name: string): string {
    return path.join(this.dir, name);
  }

  /** The cache folder, made if need be (private, as ensureDir makes it); undefined when it cannot be used. */
  async ready(): Promise<string | undefined> {
    if (this.disabled) return undefined;
    try {
      await this.ensureDir();
      return this.dir;
    } catch (err) {
      this.disable(`cannot use ${this.dir} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
      return undefined;
    }
  }

  /** True when the cache folder cannot be used: nothing is read from or written to it. */
  get unusable(): boolean {
    return this.disabled;
  }

  /** Say once that a cache file was damaged and is rebuilt. */
  noteDamage(file: string): void {
    this.warnOnce(`metadata cache ${file} was damaged; the damaged part is fetched from the repository again`);
  }

  private file(kind: CacheKind): string {
    return path.join(this.dir, `${kind}.log`);
  }

  private mac(kind: CacheKind, header: Buffer, payload: Buffer): Buffer {
    return createHmac("sha256", this.macKey).update(Buffer.of(KIND_BYTE[kind])).update(header).update(payload).digest();
  }

  private warnOnce(message: string): void {
    if (this.warned) return;
    this.warned = true;
    this.onWarning(message);
  }

  /** Every trusted entry of `kind`: name (64 hex) -> decrypted bytes. */
  async entries(kind: CacheKind): Promise<Map<string, Buffer>> {
    return (await this.load(kind)).entries;
  }

  async get(kind: CacheKind, name: string): Promise<Buffer | undefined> {
    return (await this.load(kind)).entries.get(name);
  }

  private load(kind: CacheKind): Promise<Loaded> {
    let p = this.loading.get(kind);
    if (!p) {
      p = this.serial(kind, () => this.read(kind));
      this.loading.set(kind, p);
    }
    return p;
  }

  /**
   * Drop what was loaded of `kind` from memory (the next use reads the file again): a long-lived
   * process should not keep 100,000 snapshots' bytes after one listing.
   */
  release(kind: CacheKind): Promise<void> {
    return this.serial(kind, async () => {
      this.loaded.delete(kind);
      this.loading.delete(kind);
    });
  }

  private serial<T>(kind: CacheKind, fn: () => Promise<T>): Promise<T> {
    const run = (this.queue.get(kind) ?? Promise.resolve()).then(fn, fn);
    this.queue.set(kind, run.catch(() => undefined));
    return run;
  }

  private async read(kind: CacheKind): Promise<Loaded> {
    let raw: Buffer = Buffer.alloc(0);
    if (!this.disabled) {
      try {
        raw = await fs.readFile(this.file(kind));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== "ENOENT") this.disable(`cannot read ${this.file(kind)} (${code})`);
      }
    }
    const parsed = this.parse(kind, raw);
    if (parsed.damaged) this.noteDamage(this.file(kind));
    this.loaded.set(kind, parsed);
    return parsed;
  }

  private parse(kind: CacheKind, raw: Buffer): Loaded {
    const entries = new Map<string, Buffer>();
    const { batches, damaged } = this.walk(kind, raw, (name, body) => void entries.set(name, body));
    return { entries, batches, damaged };
  }

  /** Every record of every authentic batch of `raw`, in file order (a name may come twice). */
  private walk(kind: CacheKind, raw: Buffer, onRecord: (name: string, body: Buffer) => void): { batches: number; damaged: boolean } {
    let batches = 0;
    let damaged = false;
    let o = 0;
    while (o < raw.length) {
      if (raw.length - o < HEADER_BYTES + MAC_BYTES || !raw.subarray(o, o + 4).equals(MAGIC) || raw[o + 4] !== VERSION) {
        damaged = true; // garbage or a torn append: nothing after it can be located
        break;
      }
      const header = raw.subarray(o, o + HEADER_BYTES);
      const count = raw.readUInt32LE(o + 5);
      const payloadLength = raw.readUInt32LE(o + 9);
      const end = o + HEADER_BYTES + payloadLength + MAC_BYTES;
      if (end > raw.length) {
        damaged = true;
        break;
      }
      const payload = raw.subarray(o + HEADER_BYTES, o + HEADER_BYTES + payloadLength);
      const mac = raw.subarray(end - MAC_BYTES, end);
      o = end;
      batches++;
      if (!this.mac(kind, header, payload).equals(mac)) {
        damaged = true;
        continue;
      }
      // authentic but malformed: written by a broken version; drop it
      if (!forEachRecord(payload, count, onRecord)) damaged = true;
    }
    return { batches, damaged };
  }

  /**
   * Each trusted record of `kind`, without keeping them: the body is valid only during the call,
   * and a name may come more than once (the same bytes: names are content hashes). For a caller
   * that turns 100,000 records into something smaller (the briefs a restore chooses from): the
   * map `entries` builds costs a Buffer and a string per record on top. Says whether the file
   * should be rewritten (damaged, or too many batches); `retain` does that.
   */
  async scan(kind: CacheKind, onRecord: (name: string, body: Buffer) => void): Promise<{ untidy: boolean }> {
    const loaded = this.loaded.get(kind);
    if (loaded) {
      for (const [name, body] of loaded.entries) onRecord(name, body);
      return { untidy: loaded.damaged || loaded.batches > MAX_BATCHES };
    }
    let result = { batches: 0, damaged: false };
    await this.serial(kind, async () => {
      if (this.disabled) return;
      let handle: FileHandle;
      try {
        handle = await fs.open(this.file(kind), "r");
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== "ENOENT") this.disable(`cannot read ${this.file(kind)} (${code})`);
        return;
      }
      try {
        result = await this.walkFile(kind, handle, onRecord);
      } finally {
        await handle.close();
      }
    });
    if (result.damaged) this.noteDamage(this.file(kind));
    return { untidy: result.damaged || result.batches > MAX_BATCHES };
  }

  /** As walk, reading one batch at a time: what is held is the biggest batch, not the file. */
  private async walkFile(kind: CacheKind, handle: FileHandle, onRecord: (name: string, body: Buffer) => void): Promise<{ batches: number; damaged: boolean }> {
    const size = (await handle.stat()).size;
    let batches = 0;
    let damaged = false;
    for (let o = 0; o < size; ) {
      const header = await readExactly(handle, o, Math.min(HEADER_BYTES, size - o));
      const payloadLength = header.length === HEADER_BYTES ? header.readUInt32LE(9) : 0;
      // A length past the end is a torn append (or garbage): nothing after it can be located.
      if (header.length < HEADER_BYTES || o + HEADER_BYTES + payloadLength + MAC_BYTES > size) {
        damaged = true;
        break;
      }
      const batch = await readExactly(handle, o, HEADER_BYTES + payloadLength + MAC_BYTES);
      const walked = this.walk(kind, batch, onRecord);
      batches += walked.batches;
      if (walked.damaged) damaged = true;
      if (walked.batches === 0) break;
      o += batch.length;
    }
    return { batches, damaged };
  }

  /**
   * Add entries; appended as one authenticated batch. Failures only cost a later refetch. `owned`:
   * the caller never changes these buffers, so what is loaded of `kind` may share them rather than
   * copy them (a cold index load held every index file twice).
   */
  put(kind: CacheKind, items: [string, Buffer][], opts: { owned?: boolean } = {}): Promise<void> {
    return this.putRecords(kind, recordsOf(items), opts);
  }

  /** As put, the records read by position (BatchBuilder: no object per record). */
  putRecords(kind: CacheKind, records: CacheRecords, opts: { owned?: boolean } = {}): Promise<void> {
    if (!records.count) return Promise.resolve();
    return this.serial(kind, () => this.append(kind, records, !!opts.owned));
  }

  private async append(kind: CacheKind, records: CacheRecords, owned: boolean): Promise<void> {
    // Appending needs nothing read: a snapshot must not load 100,000 cached snapshots to add one.
    const loaded = this.loaded.get(kind);
    // Copied unless owned: a caller may reuse its buffers once the put is done (BatchBuilder).
    if (loaded) for (let j = 0; j < records.count; j++) loaded.entries.set(records.name(j), owned ? records.body(j) : Buffer.from(records.body(j)));
    if (this.disabled) return;
    try {
      await this.ensureDir();
      const handle = await fs.open(this.file(kind), "a", 0o600);
      try {
        for (const [from, to] of bounded(records)) {
          const batch = this.encode(kind, records, from, to);
          // One write with O_APPEND: concurrent writers each land a whole batch; the HMAC catches the rest.
          let done = 0;
          while (done < batch.length) {
            const { bytesWritten } = await handle.write(batch, done, batch.length - done, null);
            if (bytesWritten <= 0) throw Object.assign(new Error("short write"), { code: "EIO" });
            done += bytesWritten;
          }
          if (loaded) loaded.batches++;
        }
      } finally {
        await handle.close();
      }
    } catch (err) {
      this.disable(`cannot write ${this.file(kind)} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
  }

  /**
   * Keep only `live` names (what the repository still holds). The file is rewritten as one batch
   * when it carries dead entries, many batches or damage; a concurrent append to the old file is
   * then lost, which only costs that process's entries a refetch.
   */
  async retain(kind: CacheKind, live: { has(name: string): boolean }, opts: { rewriteWhenDead: "any" | "most" }): Promise<void> {
    const loaded = await this.load(kind);
    return this.serial(kind, () => this.retainLoaded(kind, loaded, live, opts));
  }

  private async retainLoaded(kind: CacheKind, loaded: Loaded, live: { has(name: string): boolean }, opts: { rewriteWhenDead: "any" | "most" }): Promise<void> {
    let dead = 0;
    for (const name of loaded.entries.keys()) {
      if (!live.has(name)) {
        loaded.entries.delete(name);
        dead++;
      }
    }
    // Dead entries are dropped in memory at once. Index files retired by consolidation hold nothing
    // the file replacing them lacks, so they may wait until they outnumber the live ones (rewriting
    // the index cache after every consolidation would cost more than it saves).
    const rewrite = opts.rewriteWhenDead === "any" ? dead > 0 : dead > loaded.entries.size;
    if (rewrite || loaded.damaged || loaded.batches > MAX_BATCHES) await this.rewrite(kind, loaded);
  }

  /** Replace the whole of `kind` (small, frequently rewritten records: the parent heads). */
  async replace(kind: CacheKind, items: [string, Buffer][]): Promise<void> {
    const loaded = await this.load(kind);
    return this.serial(kind, async () => {
      loaded.entries = new Map(items);
      await this.rewrite(kind, loaded);
    });
  }

  private async rewrite(kind: CacheKind, loaded: Loaded): Promise<void> {
    loaded.damaged = false;
    loaded.batches = 0;
    await this.replaceFile(this.file(kind), async (handle) => {
      let at = 0;
      const records = recordsOf([...loaded.entries]);
      for (const [from, to] of bounded(records)) {
        at = await writeFully(handle, this.encode(kind, records, from, to), at);
        loaded.batches++;
      }
    });
  }

  /**
   * Write `file` whole (temp file + rename, so a reader sees the old file or the new one, and an
   * open descriptor keeps the bytes it opened); a failure disables the cache and only costs time.
   */
  async replaceFile(file: string, write: (handle: FileHandle) => Promise<void>): Promise<void> {
    if (this.disabled) return;
    const tmp = `${file}.tmp-${randomBytes(6).toString("hex")}`;
    try {
      await this.ensureDir();
      const handle = await fs.open(tmp, "wx", 0o600);
      try {
        await write(handle);
      } finally {
        await handle.close();
      }
      // No fsync: after a crash the cache may be stale or torn, and then it is rebuilt.
      await fs.rename(tmp, file);
    } catch (err) {
      await fs.unlink(tmp).catch(() => undefined);
      this.disable(`cannot write ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
  }

  /** Per kind (writes of one kind run one at a time), reused by every batch encoded. */
  private readonly scratch = new Map<CacheKind, Buffer>();

  /** A batch of records `from` to `to` (excluded), valid until the next batch of `kind` is encoded. */
  private encode(kind: CacheKind, records: CacheRecords, from: number, to: number): Buffer {
    let payloadLength = 0;
    for (let j = from; j < to; j++) payloadLength += ID_BYTES + 4 + records.body(j).length;
    // Reused: a fresh buffer per batch was garbage V8 collects only every 64 MB or so (external
    // memory), which a cold listing at 100,000 snapshots paid in peak RSS.
    const size = HEADER_BYTES + payloadLength + MAC_BYTES;
    let scratch = this.scratch.get(kind);
    if (!scratch || scratch.length < size) {
      scratch = Buffer.allocUnsafe(Math.max(size, Math.min(BATCH_BYTES + HEADER_BYTES + MAC_BYTES + (1 << 16), 2 * size)));
      // Only batches of the usual size are kept; a bigger one (a single huge record) is not.
      if (scratch.length <= BATCH_BYTES + (1 << 20)) this.scratch.set(kind, scratch);
    }
    const batch = scratch.subarray(0, size);
    MAGIC.copy(batch, 0);
    batch[4] = VERSION;
    batch.writeUInt32LE(to - from, 5);
    batch.writeUInt32LE(payloadLength, 9);
    let o = HEADER_BYTES;
    for (let j = from; j < to; j++) {
      const body = records.body(j);
      o += batch.write(records.name(j), o, ID_BYTES, "hex");
      o = batch.writeUInt32LE(body.length, o);
      o += body.copy(batch, o);
    }
    this.mac(kind, batch.subarray(0, HEADER_BYTES), batch.subarray(HEADER_BYTES, o)).copy(batch, o);
    return batch;
  }

  private dirReady = false;
  private async ensureDir(): Promise<void> {
    if (this.dirReady) return;
    await makeDirs(this.dir, 0o700);
    // makeDirs honours the umask; plaintext metadata must not be readable by others.
    await fs.chmod(path.dirname(this.dir), 0o700).catch(() => undefined);
    // An existing folder made by someone else, or with a loose mode, is not trusted with plaintext.
    const st = await fs.stat(this.dir);
    if (typeof process.getuid === "function" && st.uid !== process.getuid()) throw Object.assign(new Error("not owned by this user"), { code: "EPERM" });
    if ((st.mode & 0o077) !== 0) await fs.chmod(this.dir, 0o700);
    this.dirReady = true;
  }

  private disable(why: string): void {
    this.disabled = true;
    this.warnOnce(`metadata cache disabled: ${why}; reading metadata from the repository`);
  }
}

/** Calls `onRecord` for each record of a batch; false, before any call, when the batch is malformed. */
function forEachRecord(payload: Buffer, count: number, onRecord: (name: string, body: Buffer) => void): boolean {
  let o = 0;
  for (let i = 0; i < count; i++) {
    if (o + ID_BYTES + 4 > payload.length) return false;
    const length = payload.readUInt32LE(o + ID_BYTES);
    if (o + ID_BYTES + 4 + length > payload.length) return false;
    o += ID_BYTES + 4 + length;
  }
  if (o !== payload.length) return false;
  o = 0;
  for (let i = 0; i < count; i++) {
    const name = payload.toString("hex", o, o + ID_BYTES);
    const length = payload.readUInt32LE(o + ID_BYTES);
    o += ID_BYTES + 4;
    onRecord(name, payload.subarray(o, o + length));
    o += length;
  }
  return true;
}

/**
 * Records gathered for one put, copied into one buffer reused from put to put, and found again by
 * position: 100,000 small copies of their own became tens of MB of garbage between collections in
 * a cold listing, and so did a tuple and a Buffer view per record, kept until the batch was
 * written (long enough to be promoted to the old space).
 */
export class BatchBuilder {
  private readonly arena = Buffer.allocUnsafe(BATCH_BYTES);
  private used = 0;
  private names: string[] = [];
  /** Where record j's body starts in the arena, or -1 - its place in `big` (too big for what is left). */
  private starts: number[] = [];
  private lengths: number[] = [];
  private big: Buffer[] = [];

  constructor(
    private readonly cache: MetaCache | undefined,
    private readonly kind: CacheKind,
  ) {}

  /** Full: put() it before adding more. */
  get full(): boolean {
    return this.used >= BATCH_BYTES - (64 << 10);
  }

  add(name: string, body: Buffer): void {
    if (!this.cache) return;
    this.names.push(name);
    this.lengths.push(body.length);
    if (body.length > BATCH_BYTES - this.used) {
      this.starts.push(-1 - this.big.length);
      this.big.push(Buffer.from(body));
      return;
    }
    body.copy(this.arena, this.used);
    this.starts.push(this.used);
    this.used += body.length;
  }

  /** Append what was added (in the order of the positions `order` gives, if any) and start again. */
  async put(order?: (count: number) => ArrayLike<number>): Promise<void> {
    const { names, starts, lengths, big } = this;
    this.names = [];
    this.starts = [];
    this.lengths = [];
    this.big = [];
    const count = names.length;
    if (count) {
      const at = order?.(count);
      const k = (j: number) => (at ? at[j] : j);
      const body = (j: number) => {
        const start = starts[k(j)];
        return start < 0 ? big[-1 - start] : this.arena.subarray(start, start + lengths[k(j)]);
      };
      await this.cache?.putRecords(this.kind, { count, name: (j) => names[k(j)], body });
    }
    this.used = 0;
    // A batch is a few MB of a stream of 100,000 records: its garbage goes now (collect.ts).
    if (count) collectGrown();
  }
}

/** What a put appends, read by position: `body(j)` is good until the next call. */
export interface CacheRecords {
  readonly count: number;
  name(j: number): string;
  body(j: number): Buffer;
}

const recordsOf = (items: [string, Buffer][]): CacheRecords => ({ count: items.length, name: (j) => items[j][0], body: (j) => items[j][1] });

/** The records in ranges [from, to) of at most BATCH_BYTES of payload (a bigger record is a range of its own). */
function* bounded(records: CacheRecords): Generator<[number, number]> {
  let from = 0;
  let bytes = 0;
  for (let j = 0; j < records.count; j++) {
    const size = ID_BYTES + 4 + records.body(j).length;
    if (j > from && bytes + size > BATCH_BYTES) {
      yield [from, j];
      from = j;
      bytes = 0;
    }
    bytes += size;
  }
  if (from < records.count) yield [from, records.count];
}
