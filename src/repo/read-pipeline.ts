import { setMaxListeners } from "node:events";
import path from "node:path";
import { retryOutOfDescriptors } from "../fs-safe.js";
import { packKey } from "./format.js";
import { collectYoung } from "./collect.js";
import { RepoError } from "./errors.js";
import type { Repository } from "./repository.js";
import type { SealPool } from "./seal-pool.js";
import type { OpenRequest } from "./seal.js";
import { allZero, type FileWrite, type Placed, toRuns, writeError } from "./blob-writes.js";
import type { Target } from "../targets/target.js";
import { LimitTarget } from "../targets/limit.js";
import { TargetWrapper } from "../targets/wrap.js";

/** Frames this close in one pack are fetched by one ranged read (the gap is read and dropped). */
const MERGE_GAP = 64 * 1024;
/** One read covers at most this many sealed bytes, and its frames at most this many decoded ones. */
const MAX_READ = 8 * 1024 * 1024;
const MAX_GROUP_RAW = 2 * 1024 * 1024;
/**
 * Remote jobs are smaller: they are cut from a stream while it arrives, so a smaller job starts
 * decoding sooner, and fewer decoded bytes wait to be written (measured on the bench:s3 tree:
 * as fast as 2 MiB, in about 6 MB less).
 */
const REMOTE_GROUP_RAW = 1024 * 1024;
/** Reads at once from a target without a concurrency limit (a local disk): libuv's thread pool size. */
const LOCAL_READS = 4;
/**
 * Jobs of at least half the group size decode into recycled buffers of the group size plus this
 * (the frames a job decodes reach a little past its wanted blobs).
 */
const SLAB_SLACK = 2 * 1024 * 1024;
/** Free buffers kept of each kind (decoded slabs, sealed buffers): about the jobs in flight. */
const MAX_FREE_SLABS = 4;
/** A remote job's sealed bytes go into a reused buffer of this size when they fit (almost always). */
const SEALED_SLAB = 2 * 1024 * 1024;
/** Remote: a young-generation collection after this many bytes taken off the streams. */
const COLLECT_EVERY = 16 * 1024 * 1024;
/**
 * Bytes in flight by default: sealed bytes being read plus decoded bytes not yet written. More is
 * slower on a local disk, not faster: decoded bytes written soon are still in the CPU's cache.
 */
export const DEFAULT_BUDGET = 8 * 1024 * 1024;

interface WantedBlob {
  id: string;
  inFrame: number;
  rawLength: number;
}

/** Concurrent readers share one byte budget; a waiter is served first come, first served. */
export class ByteBudget {
  private used = 0;
  private readonly waiting: { bytes: number; grant: () => void }[] = [];

  constructor(readonly limit: number) {
    if (!(limit > 0)) throw new RangeError(`byte budget must be positive, not ${limit}`);
  }

  get inUse(): number {
    return this.used;
  }

  /** Take `bytes` now if they fit and nobody waits; a request larger than the budget fits an idle one. */
  tryAcquire(bytes: number): boolean {
    if (this.waiting.length > 0 || !this.fits(bytes)) return false;
    this.used += bytes;
    return true;
  }

  acquire(bytes: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.tryAcquire(bytes)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const entry = {
        bytes,
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal!.reason);
        this.wake();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  release(bytes: number): void {
    this.used -= bytes;
    this.wake();
  }

  private fits(bytes: number): boolean {
    return this.used === 0 || this.used + bytes <= this.limit;
  }

  private wake(): void {
    while (this.waiting.length > 0 && this.fits(this.waiting[0].bytes)) {
      const next = this.waiting.shift()!;
      this.used += next.bytes;
      next.grant();
    }
  }
}

/** The concurrency limit of a target (a LimitTarget anywhere in its wrappers), or a local disk's. */
export function readConcurrency(target: Target): number {
  for (let t: Target | undefined = target; t; t = t instanceof TargetWrapper ? t.inner : undefined) {
    if (t instanceof LimitTarget) return t.limit;
  }
  return LOCAL_READS;
}

export interface ReadPipelineOptions {
  /** Sealed plus decoded bytes in flight, shared by every file read through this pipeline. */
  budgetBytes?: number;
  /** Ranged reads at once; by default the target's concurrency limit. */
  concurrency?: number;
  signal?: AbortSignal;
}

/**
 * Where a restore writes: the pipeline hands each verified blob to the files that hold it, at
 * their offsets, in whatever order the packs are read.
 */
export interface BlobSink {
  /** Write blobs that lie back to back in the file, starting at `pos`. A failed write fails that file; it never rejects. */
  write(file: number, pos: number, parts: Buffer[]): Promise<void>;
  /** Every blob of the file has been written. */
  done(file: number): void;
  /** Some of the file's data cannot be read: it gets no `done`. */
  fail(file: number, err: Error): void;
  /** A failed file gets no more writes. */
  failed(file: number): boolean;
  /**
   * Set by a sink that writes into files it created empty: bytes that are all zero are then
   * handed here instead of to `write`, and need no write at all (they stay a hole, so a sparse
   * file stays sparse). They count as written.
   */
  hole?(file: number, pos: number, length: number): void;
  /**
   * Set by a sink whose files another thread may write directly: open the files (not failed yet)
   * and keep their descriptors open until `unpin`. Resolves with each file's descriptor (a file
   * that failed meanwhile is absent), or undefined when no more can be held open now (the blobs
   * then go through `write`).
   */
  pin?(files: number[]): Promise<Map<number, number> | undefined>;
  /** A pinned file's writes are over: bytes written or left as holes, the end of the last byte written, or the error that failed it. */
  unpin?(file: number, bytes: number, end: number, err?: Error): void;
}

interface Place {
  file: number;
  pos: number;
}

interface PackBlob extends WantedBlob {
  places: Place[];
}

/** One frame of a pack, with every blob that any file of the restore needs from it. */
interface PackFrame {
  offset: number;
  length: number;
  blobs: Map<string, PackBlob>;
}

/** One decode job: adjacent frames of one pack, at most MAX_GROUP_RAW (remote: REMOTE_GROUP_RAW) wanted bytes. */
interface PackJob {
  start: number;
  end: number;
  frames: PackFrame[];
  raw: number;
}

/** One ranged read of a pack (remote: several jobs; local: one, read by the decoding thread). */
interface PackRead {
  pack: string;
  start: number;
  end: number;
  jobs: PackJob[];
  cost: number;
  /** The earliest (file, offset) it serves: reads run in that order, so files finish in order. */
  firstFile: number;
  firstPos: number;
}

/**
 * Remote reads are streams: one request spans every needed frame of a pack (up to this many
 * sealed bytes), gaps of up to REMOTE_GAP included, and its bytes are cut into decode jobs as
 * they arrive. A request costs more than the bytes, and a stream holds no more than one job.
 */
const PACK_READ_REMOTE = 64 * 1024 * 1024;
const REMOTE_GAP = 1024 * 1024;
/**
 * Remote: sealed plus decoded bytes of the jobs being filled from a stream, decoded or written.
 * A stream waits for its next job's share, so the socket is read no faster than files are written.
 * Measured on the 1 GiB bench:s3 tree (2 cores): 5 and 6 MiB were as fast as each other and
 * faster than 8, 12 or 20; 5 MiB peaked about 5 MB lower; 4 MiB starved the decoders.
 */
export const REMOTE_BUDGET = 5 * 1024 * 1024;
/** Streams at once (fewer than the target's request limit): 3 were faster than 2, 4 or 8. */
const REMOTE_STREAMS = 3;

export class PackOrderedRead {
  /** Decode buffers already written out, for the next jobs. */
  private readonly free: ArrayBuffer[] = [];
  /**
   * Bytes in flight. Local: a read's sealed plus decoded bytes, taken before it starts. Remote: a
   * job's, taken before its bytes are taken off the stream, so a stream waits while files are written.
   */
  readonly budget: ByteBudget;
  /** Buffers of SEALED_SLAB bytes for the sealed bytes of remote jobs, given back by the decoders. */
  private readonly sealedFree: ArrayBuffer[] = [];
  /** Remote bytes taken off the streams since the last young-generation collection. */
  private received = 0;
  private readonly concurrency: number;
  private readonly remote: boolean;
  /** Wanted decoded bytes per job at most; jobs of half that or more decode into recycled buffers of `slab` bytes. */
  private readonly groupRaw: number;
  private readonly slab: number;

  constructor(
    private readonly repo: Repository,
    private readonly pool: SealPool,
    private readonly opts: ReadPipelineOptions = {},
  ) {
    this.remote = repo.target.localPath === undefined;
    this.groupRaw = this.remote ? REMOTE_GROUP_RAW : MAX_GROUP_RAW;
    this.slab = this.groupRaw + SLAB_SLACK;
    this.budget = new ByteBudget(opts.budgetBytes ?? (this.remote ? REMOTE_BUDGET : DEFAULT_BUDGET));
    this.concurrency = Math.max(1, opts.concurrency ?? (this.remote ? Math.min(REMOTE_STREAMS, readConcurrency(repo.target)) : readConcurrency(repo.target)));
    // Every waiting read, budget share and request listens on the one signal.
    if (opts.signal) setMaxListeners(0, opts.signal);
  }

  /**
   * Read every blob of `files` with each needed pack range fetched once, and hand each blob (checked
   * against its id) to every file and offset that holds it. Memory is bounded by the byte budget:
   * a read's bytes stay counted until all of its writes are done. Resolves when every read is
   * done; throws only when aborted. `checkSize` sees the size each file's blobs add up to before
   * anything is read: an error it returns fails the file, and nothing of it is read.
   */
  async run(files: readonly (readonly string[])[], sink: BlobSink, checkSize?: (file: number, size: number) => Error | undefined): Promise<void> {
    const signal = this.opts.signal;
    const remaining = new Array<number>(files.length).fill(0);
    const reads = this.plan(files, sink, remaining, checkSize);
    files.forEach((_, f) => {
      if (remaining[f] === 0 && !sink.failed(f)) sink.done(f);
    });
    const running = new Set<Promise<void>>();
    // Remote: the decodes of streams that have ended. A stream's slot goes to the next read as soon
    // as its bytes are in (the budget bounds what is still being decoded), not when they are written.
    const decoding = new Set<Promise<void>>();
    try {
      for (const read of reads) {
        signal?.throwIfAborted();
        if (!read.jobs.some((j) => needed(j, sink))) continue;
        // A read that hangs and ignores the signal must not hold up the abort.
        while (running.size >= this.concurrency) await abortable(Promise.race(running), signal);
        if (!this.remote) await this.budget.acquire(read.cost, signal);
        const p: Promise<void> = (this.remote ? this.runStream(read, sink, remaining, decoding) : this.runLocalRead(read, sink, remaining)).finally(() => {
          if (!this.remote) this.budget.release(read.cost);
          running.delete(p);
        });
        running.add(p);
      }
      await abortable(Promise.all(running), signal);
      await abortable(Promise.all(decoding), signal);
      signal?.throwIfAborted();
    } finally {
      if (!signal?.aborted) await Promise.allSettled([...running, ...decoding]);
    }
  }

  private plan(files: readonly (readonly string[])[], sink: BlobSink, remaining: number[], checkSize?: (file: number, size: number) => Error | undefined): PackRead[] {
    const index = this.repo.index;
    const frames = new Map<string, Map<number, PackFrame>>();
    files.forEach((ids, file) => {
      if (sink.failed(file)) return;
      const locs = [];
      let size = 0;
      for (const id of ids) {
        const loc = index.get(id);
        if (!loc) {
          sink.fail(file, new RepoError(`blob ${id.slice(0, 12)} is missing from the index`, "corrupt"));
          return;
        }
        locs.push(loc);
        size += loc.rawLength;
      }
      const wrong = checkSize?.(file, size);
      if (wrong) return void sink.fail(file, wrong);
      let pos = 0;
      locs.forEach((loc, i) => {
        let byOffset = frames.get(loc.pack);
        if (!byOffset) frames.set(loc.pack, (byOffset = new Map()));
        let frame = byOffset.get(loc.offset);
        if (!frame) byOffset.set(loc.offset, (frame = { offset: loc.offset, length: loc.length, blobs: new Map() }));
        // Two index entries claiming one offset with different lengths: the frame is read as the first says; openBatch checks every blob.
        let blob = frame.blobs.get(ids[i]);
        if (!blob) frame.blobs.set(ids[i], (blob = { id: ids[i], inFrame: loc.inFrame, rawLength: loc.rawLength, places: [] }));
        blob.places.push({ file, pos });
        pos += loc.rawLength;
      });
      remaining[file] = locs.length;
    });
    const reads: PackRead[] = [];
    for (const [pack, byOffset] of frames) {
      const sorted = [...byOffset.values()].sort((a, b) => a.offset - b.offset);
      let read: PackRead | undefined;
      let job: PackJob | undefined;
      for (const frame of sorted) {
        const raw = [...frame.blobs.values()].reduce((n, b) => n + b.rawLength, 0);
        const end = frame.offset + frame.length;
        const near = (start: number, last: number) => frame.offset >= last && frame.offset <= last + MERGE_GAP && end - start <= MAX_READ;
        const joinsJob = job && near(job.start, job.end) && job.raw + raw <= this.groupRaw;
        const joinsRead =
          read && (joinsJob || (this.remote && frame.offset >= read.end && frame.offset <= read.end + REMOTE_GAP && end - read.start <= PACK_READ_REMOTE));
        if (!joinsRead) {
          read = { pack, start: frame.offset, end, jobs: [], cost: 0, firstFile: Infinity, firstPos: Infinity };
          reads.push(read);
        }
        if (!joinsRead || !joinsJob) {
          job = { start: frame.offset, end, frames: [], raw: 0 };
          read!.jobs.push(job);
        }
        job!.frames.push(frame);
        job!.end = end;
        job!.raw += raw;
        read!.end = end;
        for (const b of frame.blobs.values()) {
          for (const p of b.places) {
            if (p.file < read!.firstFile || (p.file === read!.firstFile && p.pos < read!.firstPos)) {
              read!.firstFile = p.file;
              read!.firstPos = p.pos;
            }
          }
        }
      }
    }
    // Local: held until written, the sealed bytes (until opened) and the decoded ones.
    for (const r of reads) r.cost = r.end - r.start + r.jobs.reduce((n, j) => n + j.raw, 0);
    return reads.sort((a, b) => a.firstFile - b.firstFile || a.firstPos - b.firstPos);
  }

  /** Never rejects: a failure fails the files that needed the bytes. A local pack is read by the decoding thread. */
  private async runLocalRead(read: PackRead, sink: BlobSink, remaining: number[]): Promise<void> {
    await Promise.all(read.jobs.map((job) => this.runJob(read, job, this.localSource(read, job.start, job.end), sink, remaining)));
  }

  /**
   * One ranged stream for the whole read, cut into its jobs as the bytes arrive: each job is
   * decoded while the stream goes on with the next. Never rejects: a failure fails the files that
   * needed the bytes not yet received.
   */
  private async runStream(read: PackRead, sink: BlobSink, remaining: number[], decoding: Set<Promise<void>>): Promise<void> {
    const signal = this.opts.signal;
    const stream = this.repo.target.readRange(packKey(read.pack), read.start, read.end - read.start, { signal })[Symbol.asyncIterator]();
    const cursor = new StreamCursor(stream, read.start);
    let j = 0;
    try {
      for (; j < read.jobs.length; j++) {
        const job = read.jobs[j];
        if (!needed(job, sink)) continue;
        const size = job.end - job.start;
        const cost = size + job.raw;
        await this.budget.acquire(cost, signal);
        const release = once(() => this.budget.release(cost));
        const sealed = size <= SEALED_SLAB ? (this.sealedFree.pop() ?? new ArrayBuffer(SEALED_SLAB)) : new ArrayBuffer(size);
        let whole: boolean;
        try {
          whole = await cursor.read(job.start, new Uint8Array(sealed, 0, size));
        } catch (err) {
          release();
          throw cannotRead(read.pack, err);
        }
        if (!whole) {
          release();
          throw truncated(read.pack);
        }
        // The response's chunks copied so far are off-heap garbage that V8 would let pile up.
        this.received += size;
        if (this.received >= COLLECT_EVERY) {
          this.received = 0;
          collectYoung();
        }
        const decode: Promise<void> = this.runJob(read, job, { buffer: sealed }, sink, remaining, release).finally(() => {
          release();
          decoding.delete(decode);
        });
        decoding.add(decode);
      }
    } catch (err) {
      // Only an abort (of the budget's wait) is not a RepoError here.
      if (!signal?.aborted) failFiles(read.jobs.slice(j), sink, err as Error);
    } finally {
      // Ends the request when the stream stopped early (an error, an abort, a truncated pack).
      await stream.return?.().catch(() => undefined);
    }
  }

  /** The sealed bytes of [start, end) of a local pack, read by the decoding thread. */
  private localSource(read: PackRead, start: number, end: number): DecodeSource {
    const file = path.join(this.repo.target.localPath!, ...packKey(read.pack).split("/"));
    return { buffer: new ArrayBuffer(0), file: { path: file, position: start, length: end - start } };
  }

  /** Damage is rare: a job that fails to open fetches its frames again one by one. */
  private async frameSource(read: PackRead, start: number, end: number): Promise<DecodeSource> {
    if (!this.remote) return this.localSource(read, start, end);
    let bytes: Buffer;
    try {
      bytes = await this.repo.target.getRange(packKey(read.pack), start, end - start, { signal: this.opts.signal });
    } catch (err) {
      throw cannotRead(read.pack, err);
    }
    if (bytes.length < end - start) throw truncated(read.pack);
    return { buffer: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer };
  }

  /**
   * Decode one job and hand its blobs to the files. A job that fails to open is isolated frame by
   * frame; `beforeIsolate` gives back its budget share first, so that the streams waiting for it
   * can go on and free the request slots the re-reads need.
   */
  private async runJob(read: PackRead, job: PackJob, src: DecodeSource, sink: BlobSink, remaining: number[], beforeIsolate?: () => void): Promise<void> {
    const blobs = job.frames.flatMap((fr, f) => [...fr.blobs.values()].map((b) => ({ frame: f, b })));
    // A local pack that cannot be opened for want of descriptors is opened again once some are
    // closed (a fresh source each time: the last one went to the worker).
    const again = <T>(run: (src: DecodeSource) => Promise<T>): Promise<T> =>
      src.file ? retryOutOfDescriptors(() => run(this.localSource(read, job.start, job.end))) : run(src);
    let parts: Buffer[] | undefined;
    try {
      const pinned = sink.pin ? await sink.pin(filesOf(blobs, sink)) : undefined;
      if (pinned) return await this.openAndWrite(job, blobs, pinned, sink, remaining, again);
      parts = await again((s) => this.open(job.start, job.frames, blobs, s, job.raw));
    } catch (err) {
      if (this.opts.signal?.aborted) return;
      beforeIsolate?.();
      await this.isolate(job, (s, e) => this.frameSource(read, s, e), sink, remaining, err as Error);
      return;
    }
    try {
      await this.deliver(blobs.map((x, i) => ({ blob: x.b, data: parts[i] })), sink, remaining);
    } finally {
      this.recycle(parts);
    }
  }

  /**
   * The decoding thread writes the job's blobs itself into the pinned files: the decoded bytes
   * never cross threads. Throws when the job cannot be opened (nothing was written then); the
   * pins are given back either way.
   */
  private async openAndWrite(
    job: PackJob,
    blobs: { frame: number; b: PackBlob }[],
    pinned: Map<number, number>,
    sink: BlobSink,
    remaining: number[],
    again: (run: (src: DecodeSource) => Promise<FileWrite[]>) => Promise<FileWrite[]>,
  ): Promise<void> {
    if (pinned.size === 0) return;
    const count = new Map<number, number>();
    const places = blobs.map(({ b }) =>
      b.places.flatMap((p) => {
        const fd = pinned.get(p.file);
        if (fd === undefined) return [];
        count.set(p.file, (count.get(p.file) ?? 0) + 1);
        return [fd, p.pos];
      }),
    );
    let written: FileWrite[] = [];
    try {
      written = await again((src) => {
        const { req, transfer } = this.request(job.start, job.frames, blobs, src);
        return this.pool.write({ ...req, places, holes: sink.hole !== undefined }, transfer, this.keepSealed);
      });
    } finally {
      const byFd = new Map(written.map((w) => [w.fd, w]));
      for (const [file, fd] of pinned) {
        const w = byFd.get(fd);
        sink.unpin!(file, w?.bytes ?? 0, w?.end ?? 0, w?.error && writeError(w.error));
      }
    }
    for (const [file, n] of count) {
      if (sink.failed(file)) continue;
      remaining[file] -= n;
      if (remaining[file] === 0) sink.done(file);
    }
  }

  /**
   * A job that fails to open is opened again blob by blob, so that damage fails exactly the files
   * holding the damaged blob (or frame), not every file the read served.
   */
  private async isolate(job: PackJob, source: (s: number, e: number) => Promise<DecodeSource>, sink: BlobSink, remaining: number[], first: Error): Promise<void> {
    const single = job.frames.length === 1 && job.frames[0].blobs.size === 1;
    for (const frame of job.frames) {
      for (const b of frame.blobs.values()) {
        let data: Buffer;
        try {
          if (single) throw first;
          [data] = await this.open(frame.offset, [frame], [{ frame: 0, b }], await source(frame.offset, frame.offset + frame.length), 0);
        } catch (err) {
          const e = err instanceof RepoError ? err : new RepoError((err as Error).message, "corrupt");
          for (const p of b.places) if (!sink.failed(p.file)) sink.fail(p.file, e);
          continue;
        }
        await this.deliver([{ blob: b, data }], sink, remaining);
      }
    }
  }

  private open(
    start: number,
    frames: PackFrame[],
    blobs: { frame: number; b: PackBlob }[],
    src: DecodeSource,
    raw: number,
  ): Promise<Buffer[]> {
    const out = raw >= this.groupRaw / 2 ? (this.free.pop() ?? new ArrayBuffer(this.slab)) : undefined;
    const { req, transfer } = this.request(start, frames, blobs, src, out);
    return this.pool.run(req, transfer, this.keepSealed);
  }

  /** An open of `frames` (from `start` in `src`) for `blobs`; `out`: a buffer to decode into. */
  private request(start: number, frames: PackFrame[], blobs: { frame: number; b: PackBlob }[], src: DecodeSource, out?: ArrayBuffer) {
    this.opts.signal?.throwIfAborted();
    const req: Omit<OpenRequest, "job"> = {
      op: "open",
      key: this.repo.key.encryption,
      idKey: this.repo.key.id,
      buffer: src.buffer,
      file: src.file,
      frames: frames.flatMap((fr) => [fr.offset - start, fr.offset - start + fr.length]),
      blobs: blobs.map(({ frame, b }) => ({ frame, id: b.id, inFrame: b.inFrame, rawLength: b.rawLength })),
      out,
      returnBuffer: src.buffer.byteLength === SEALED_SLAB,
    };
    return { req, transfer: [src.buffer, ...(out ? [out] : [])] };
  }

  /** Sealed buffers a decoding thread gives back, for the next remote jobs. */
  private readonly keepSealed = (input: ArrayBuffer): void => {
    if (this.sealedFree.length < MAX_FREE_SLABS) this.sealedFree.push(input);
  };

  /**
   * Each file gets its blobs of this job as runs of back-to-back bytes, one positional write per
   * run (writeFully cuts a long one into bounded calls); runs of zero bytes go to the sink's
   * `hole` when it has one.
   */
  private async deliver(got: { blob: PackBlob; data: Buffer }[], sink: BlobSink, remaining: number[]): Promise<void> {
    if (this.opts.signal?.aborted) return;
    const byFile = new Map<number, Placed[]>();
    for (const { blob, data } of got) {
      // Once per blob, however many places hold it: a file of one repeated zero chunk is one blob.
      const zero = sink.hole !== undefined && allZero(data);
      for (const p of blob.places) {
        if (sink.failed(p.file)) continue;
        let list = byFile.get(p.file);
        if (!list) byFile.set(p.file, (list = []));
        list.push({ pos: p.pos, data, zero });
      }
    }
    await Promise.all(
      [...byFile].map(async ([file, list]) => {
        for (const run of toRuns(list)) {
          if (run.zero) sink.hole!(file, run.pos, run.length);
          else await sink.write(file, run.pos, run.parts);
          if (sink.failed(file)) return;
        }
        remaining[file] -= list.length;
        if (remaining[file] === 0 && !sink.failed(file)) sink.done(file);
      }),
    );
  }

  private recycle(parts: Buffer[]): void {
    const ab = parts[0]?.buffer;
    if (ab instanceof ArrayBuffer && ab.byteLength === this.slab && this.free.length < MAX_FREE_SLABS && !this.free.includes(ab)) this.free.push(ab);
  }
}

/** The sealed bytes a decode reads: a buffer (transferred to the worker), or a range of a local file. */
interface DecodeSource {
  buffer: ArrayBuffer;
  file?: { path: string; position: number; length: number };
}

/** The files not failed yet that hold a blob of the job. */
function filesOf(blobs: { b: PackBlob }[], sink: BlobSink): number[] {
  const files = new Set<number>();
  for (const { b } of blobs) for (const p of b.places) if (!sink.failed(p.file)) files.add(p.file);
  return [...files];
}

/** Whether any file that is not failed yet needs a blob of the job. */
function needed(job: PackJob, sink: BlobSink): boolean {
  return job.frames.some((fr) => [...fr.blobs.values()].some((b) => b.places.some((p) => !sink.failed(p.file))));
}

const cannotRead = (pack: string, err: unknown): RepoError =>
  new RepoError(`pack ${pack.slice(0, 12)} cannot be read: ${(err as Error).message}`, err instanceof RepoError ? err.kind : "corrupt");
const truncated = (pack: string): RepoError => new RepoError(`pack ${pack.slice(0, 12)} is truncated`, "corrupt");

function failFiles(jobs: PackJob[], sink: BlobSink, err: Error): void {
  for (const j of jobs) for (const fr of j.frames) for (const b of fr.blobs.values()) for (const p of b.places) if (!sink.failed(p.file)) sink.fail(p.file, err);
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      fn();
    }
  };
}

/** Reads a range stream into caller buffers at given positions, dropping the bytes between them. */
class StreamCursor {
  private chunk: Uint8Array | undefined;
  private at = 0;

  constructor(
    private readonly stream: AsyncIterator<Uint8Array>,
    /** The position in the object of the next byte. */
    private pos: number,
  ) {}

  /** Fill `out` with the bytes from position `from` (not before the cursor); false when the stream ends first. */
  async read(from: number, out: Uint8Array): Promise<boolean> {
    if (from < this.pos) throw new RangeError(`stream position ${this.pos} is past ${from}`);
    let filled = 0;
    while (filled < out.length) {
      if (!this.chunk || this.at >= this.chunk.length) {
        const next = await this.stream.next();
        if (next.done) return false;
        this.chunk = next.value;
        this.at = 0;
      }
      const avail = this.chunk.length - this.at;
      const n = this.pos < from ? Math.min(avail, from - this.pos) : Math.min(avail, out.length - filled);
      if (this.pos >= from) {
        out.set(this.chunk.subarray(this.at, this.at + n), filled);
        filled += n;
      }
      this.at += n;
      this.pos += n;
    }
    if (this.at >= this.chunk!.length) this.chunk = undefined;
    return true;
  }
}

/** Rejects with the signal's reason as soon as it fires, without waiting for `p`. */
function abortable<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}
