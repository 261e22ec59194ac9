import path from "node:path";
import { packKey } from "./format.js";
import { collectYoung } from "./collect.js";
import { RepoError } from "./errors.js";
import type { Repository } from "./repository.js";
import type { SealPool } from "./seal-pool.js";
import type { Target } from "../targets/target.js";
import { LimitTarget } from "../targets/limit.js";
import { TargetWrapper } from "../targets/wrap.js";

/** Frames this close in one pack are fetched by one ranged read (the gap is read and dropped). */
const MERGE_GAP = 64 * 1024;
/** One read covers at most this many sealed bytes, and its frames at most this many decoded ones. */
const MAX_READ = 8 * 1024 * 1024;
const MAX_GROUP_RAW = 2 * 1024 * 1024;
/** Reads at once from a target without a concurrency limit (a local disk): libuv's thread pool size. */
const LOCAL_READS = 4;
/** Reads this big decode into recycled buffers of SLAB bytes (frames reach a little past a read's blobs). */
const SLAB_FROM = 1024 * 1024;
const SLAB = MAX_GROUP_RAW + 2 * 1024 * 1024;
const MAX_FREE_SLABS = 2;
/**
 * Bytes in flight by default: sealed bytes being read plus decoded bytes not yet written. More is
 * slower on a local disk, not faster: decoded bytes written soon are still in the CPU's cache.
 */
export const DEFAULT_BUDGET = 8 * 1024 * 1024;
/** A remote target's reads wait on the network: more of them are in flight. */
export const REMOTE_BUDGET = 16 * 1024 * 1024;

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

/** One decode job: adjacent frames of one pack, at most MAX_GROUP_RAW wanted bytes. */
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

/** Remote reads span up to this many sealed bytes of a pack: requests cost more than bytes. */
const PACK_READ_REMOTE = 8 * 1024 * 1024;
/** Remote reads take in gaps up to this size: a request costs more than the bytes. */
const REMOTE_GAP = 1024 * 1024;
/**
 * Remote: sealed bytes fetched or waiting to be opened, and decoded bytes not yet written. Measured
 * on the 1 GiB bench:s3 tree: 8 MiB reads with 8 + 4 MiB were as fast as 16 MiB reads with 16 + 4,
 * in about 25 MB less.
 */
const REMOTE_SEALED_BUDGET = 8 * 1024 * 1024;
const REMOTE_DECODE_BUDGET = 4 * 1024 * 1024;

export class PackOrderedRead {
  /** Decode buffers already written out, for the next jobs. */
  private readonly free: ArrayBuffer[] = [];
  /** Local: sealed plus decoded bytes of the reads in flight. Remote: the sealed bytes being fetched or waiting to be opened. */
  readonly budget: ByteBudget;
  /**
   * Remote only: decoded bytes not yet written. Apart from the fetches, so that a fetch never waits
   * for the decoding of the one before (and a read holding sealed bytes never waits on itself).
   */
  readonly decodeBudget?: ByteBudget;
  private readonly concurrency: number;

  constructor(
    private readonly repo: Repository,
    private readonly pool: SealPool,
    private readonly opts: ReadPipelineOptions = {},
  ) {
    const remote = repo.target.localPath === undefined;
    this.budget = new ByteBudget(opts.budgetBytes ?? (remote ? REMOTE_SEALED_BUDGET : DEFAULT_BUDGET));
    if (remote) this.decodeBudget = new ByteBudget(opts.budgetBytes ?? REMOTE_DECODE_BUDGET);
    this.concurrency = Math.max(1, opts.concurrency ?? readConcurrency(repo.target));
  }

  /**
   * The sizes the files' blobs add up to (undefined: a blob is missing from the index, and the
   * file is failed through `sink`).
   */
  static sizes(repo: Repository, files: readonly (readonly string[])[]): (number | undefined)[] {
    return files.map((ids) => {
      let n = 0;
      for (const id of ids) {
        const loc = repo.index.get(id);
        if (!loc) return undefined;
        n += loc.rawLength;
      }
      return n;
    });
  }

  /**
   * Read every blob of `files` with each needed pack range fetched once, and hand each blob (checked
   * against its id) to every file and offset that holds it. Memory is bounded by the byte budget:
   * a read's bytes stay counted until all of its writes are done. Resolves when every read is
   * done; throws only when aborted.
   */
  async run(files: readonly (readonly string[])[], sink: BlobSink): Promise<void> {
    const signal = this.opts.signal;
    const remaining = new Array<number>(files.length).fill(0);
    const reads = this.plan(files, sink, remaining);
    files.forEach((_, f) => {
      if (remaining[f] === 0 && !sink.failed(f)) sink.done(f);
    });
    const running = new Set<Promise<void>>();
    try {
      for (const read of reads) {
        signal?.throwIfAborted();
        if (!read.jobs.some((j) => j.frames.some((fr) => [...fr.blobs.values()].some((b) => b.places.some((p) => !sink.failed(p.file)))))) continue;
        // A read that hangs and ignores the signal must not hold up the abort.
        while (running.size >= this.concurrency) await abortable(Promise.race(running), signal);
        await this.budget.acquire(read.cost, signal);
        const p: Promise<void> = this.runRead(read, sink, remaining).finally(() => {
          // A remote read leaves megabytes of response and decoded buffers; V8 would let them pile up.
          if (this.decodeBudget) collectYoung();
          this.budget.release(read.cost);
          running.delete(p);
        });
        running.add(p);
      }
      await abortable(Promise.all(running), signal);
      signal?.throwIfAborted();
    } finally {
      if (!signal?.aborted) await Promise.allSettled(running);
    }
  }

  private plan(files: readonly (readonly string[])[], sink: BlobSink, remaining: number[]): PackRead[] {
    const index = this.repo.index;
    const frames = new Map<string, Map<number, PackFrame>>();
    files.forEach((ids, file) => {
      const locs = [];
      for (const id of ids) {
        const loc = index.get(id);
        if (!loc) {
          sink.fail(file, new RepoError(`blob ${id.slice(0, 12)} is missing from the index`, "corrupt"));
          return;
        }
        locs.push(loc);
      }
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
    const remote = this.repo.target.localPath === undefined;
    const reads: PackRead[] = [];
    for (const [pack, byOffset] of frames) {
      const sorted = [...byOffset.values()].sort((a, b) => a.offset - b.offset);
      let read: PackRead | undefined;
      let job: PackJob | undefined;
      for (const frame of sorted) {
        const raw = [...frame.blobs.values()].reduce((n, b) => n + b.rawLength, 0);
        const end = frame.offset + frame.length;
        const near = (start: number, last: number) => frame.offset >= last && frame.offset <= last + MERGE_GAP && end - start <= MAX_READ;
        const joinsJob = job && near(job.start, job.end) && job.raw + raw <= MAX_GROUP_RAW;
        const joinsRead =
          read && (joinsJob || (remote && frame.offset >= read.end && frame.offset <= read.end + REMOTE_GAP && end - read.start <= PACK_READ_REMOTE));
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
    // Held until written: the sealed bytes (until opened) and the decoded ones.
    for (const r of reads) r.cost = r.end - r.start + (remote ? 0 : r.jobs.reduce((n, j) => n + j.raw, 0));
    return reads.sort((a, b) => a.firstFile - b.firstFile || a.firstPos - b.firstPos);
  }

  /** Never rejects: a failure fails the files that needed the bytes. */
  private async runRead(read: PackRead, sink: BlobSink, remaining: number[]): Promise<void> {
    const local = this.repo.target.localPath;
    const failAll = (jobs: PackJob[], err: Error) => {
      for (const j of jobs) for (const fr of j.frames) for (const b of fr.blobs.values()) for (const p of b.places) if (!sink.failed(p.file)) sink.fail(p.file, err);
    };
    let sealed: Buffer | undefined;
    if (local === undefined) {
      try {
        sealed = await this.repo.target.getRange(packKey(read.pack), read.start, read.end - read.start, { signal: this.opts.signal });
      } catch (err) {
        if (this.opts.signal?.aborted) return;
        const kind = err instanceof RepoError ? err.kind : "corrupt";
        failAll(read.jobs, new RepoError(`pack ${read.pack.slice(0, 12)} cannot be read: ${(err as Error).message}`, kind));
        return;
      }
      if (sealed.length < read.end - read.start) {
        failAll(read.jobs, new RepoError(`pack ${read.pack.slice(0, 12)} is truncated`, "corrupt"));
        return;
      }
    }
    const filePath = local === undefined ? undefined : path.join(local, ...packKey(read.pack).split("/"));
    // The sealed bytes of [start, end) for one decode: a local pack is read by the decoding thread.
    const source = (start: number, end: number): { buffer: ArrayBuffer; file?: { path: string; position: number; length: number } } => {
      if (filePath !== undefined) return { buffer: new ArrayBuffer(0), file: { path: filePath, position: start, length: end - start } };
      const whole = read.jobs.length === 1 && start === read.start && end === read.end;
      const owns = whole && sealed!.byteOffset === 0 && sealed!.buffer.byteLength === sealed!.length;
      // A job takes its bytes to a worker (transferred): each needs its own unless it is the whole read.
      const bytes = owns ? sealed! : Buffer.from(sealed!.subarray(start - read.start, end - read.start));
      const ab = bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
      return { buffer: ab as ArrayBuffer };
    };
    // Cut from the fetched bytes at once: the whole response can go as soon as every job has its part.
    const srcs = read.jobs.map((job) => source(job.start, job.end));
    sealed = undefined;
    // Damage is rare: a job that fails to open fetches its frames again one by one.
    const frameSource = async (start: number, end: number) => {
      if (filePath !== undefined) return source(start, end);
      let bytes: Buffer;
      try {
        bytes = await this.repo.target.getRange(packKey(read.pack), start, end - start, { signal: this.opts.signal });
      } catch (err) {
        throw new RepoError(`pack ${read.pack.slice(0, 12)} cannot be read: ${(err as Error).message}`, err instanceof RepoError ? err.kind : "corrupt");
      }
      if (bytes.length < end - start) throw new RepoError(`pack ${read.pack.slice(0, 12)} is truncated`, "corrupt");
      return { buffer: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer };
    };
    await Promise.all(
      read.jobs.map(async (job, j) => {
        const src = srcs[j];
        const blobs = job.frames.flatMap((fr, f) => [...fr.blobs.values()].map((b) => ({ frame: f, b })));
        const decode = this.decodeBudget;
        try {
          await decode?.acquire(job.raw, this.opts.signal);
        } catch {
          return; // aborted
        }
        try {
          let parts: Buffer[];
          try {
            parts = await this.open(job.start, job.frames, blobs, src, job.raw);
          } catch (err) {
            if (this.opts.signal?.aborted) return;
            await this.isolate(job, frameSource, sink, remaining, err as Error);
            return;
          }
          try {
            await this.deliver(blobs.map((x, i) => ({ blob: x.b, data: parts[i] })), sink, remaining);
          } finally {
            this.recycle(parts);
          }
        } finally {
          decode?.release(job.raw);
        }
      }),
    );
  }

  /**
   * A job that fails to open is opened again blob by blob, so that damage fails exactly the files
   * holding the damaged blob (or frame), not every file the read served.
   */
  private async isolate(job: PackJob, source: (s: number, e: number) => Promise<{ buffer: ArrayBuffer }>, sink: BlobSink, remaining: number[], first: Error): Promise<void> {
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
    src: { buffer: ArrayBuffer; file?: { path: string; position: number; length: number } },
    raw: number,
  ): Promise<Buffer[]> {
    this.opts.signal?.throwIfAborted();
    const out = raw >= SLAB_FROM ? (this.free.pop() ?? new ArrayBuffer(SLAB)) : undefined;
    const transfer = [src.buffer, ...(out ? [out] : [])];
    return this.pool.run(
      {
        op: "open",
        key: this.repo.key.encryption,
        idKey: this.repo.key.id,
        buffer: src.buffer,
        file: src.file,
        frames: frames.flatMap((fr) => [fr.offset - start, fr.offset - start + fr.length]),
        blobs: blobs.map(({ frame, b }) => ({ frame, id: b.id, inFrame: b.inFrame, rawLength: b.rawLength })),
        out,
      },
      transfer,
    );
  }

  /** Each file gets its blobs of this job as runs of back-to-back bytes, one positional write per run. */
  private async deliver(got: { blob: PackBlob; data: Buffer }[], sink: BlobSink, remaining: number[]): Promise<void> {
    if (this.opts.signal?.aborted) return;
    const byFile = new Map<number, { pos: number; data: Buffer }[]>();
    for (const { blob, data } of got) {
      for (const p of blob.places) {
        if (sink.failed(p.file)) continue;
        let list = byFile.get(p.file);
        if (!list) byFile.set(p.file, (list = []));
        list.push({ pos: p.pos, data });
      }
    }
    await Promise.all(
      [...byFile].map(async ([file, list]) => {
        list.sort((a, b) => a.pos - b.pos);
        let i = 0;
        while (i < list.length) {
          const pos = list[i].pos;
          let end = pos;
          const run: Buffer[] = [];
          while (i < list.length && list[i].pos === end) {
            run.push(list[i].data);
            end += list[i].data.length;
            i++;
          }
          await sink.write(file, pos, joinAdjacent(run));
          if (sink.failed(file)) return;
        }
        remaining[file] -= list.length;
        if (remaining[file] === 0 && !sink.failed(file)) sink.done(file);
      }),
    );
  }

  private recycle(parts: Buffer[]): void {
    const ab = parts[0]?.buffer;
    if (ab instanceof ArrayBuffer && ab.byteLength === SLAB && this.free.length < MAX_FREE_SLABS && !this.free.includes(ab)) this.free.push(ab);
  }
}

/** Blobs that lie back to back in one decoded buffer become one view: one write instead of dozens. */
function joinAdjacent(parts: Buffer[]): Buffer[] {
  const out: Buffer[] = [];
  for (const p of parts) {
    const last = out[out.length - 1];
    if (last && last.buffer === p.buffer && last.byteOffset + last.length === p.byteOffset) out[out.length - 1] = Buffer.from(p.buffer, last.byteOffset, last.length + p.length);
    else out.push(p);
  }
  return out;
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
