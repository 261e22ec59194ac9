import { Worker } from "node:worker_threads";
import os from "node:os";
import { workerScript, workersSetting } from "../worker-file.js";
import { collectAfter } from "./collect.js";
import { RepoError } from "./errors.js";
import { openAndWrite, openBatch, sealBatch, type BatchReply, type OpenRequest, type SealRequest } from "./seal.js";
import type { FileWrite } from "./blob-writes.js";

/** One worker per spare core, at least 1 and at most `max`; PI_GUARD_WORKERS overrides (0 = all work on the main thread). */
export function defaultPoolSize(max = 4): number {
  // The main thread chunks and hashes; leave it a core.
  return workersSetting() ?? Math.max(1, Math.min(max, os.availableParallelism() - 1));
}

type Request = Omit<SealRequest, "job"> | Omit<OpenRequest, "job">;

interface Pending {
  resolve: (reply: BatchReply) => void;
  reject: (err: Error) => void;
  onInput?: (buffer: ArrayBuffer) => void;
  worker: Worker;
}

/** Batches smaller than this run inline: a worker's start-up would cost more than the work. */
const INLINE_BELOW = 256 * 1024;

/**
 * A few worker threads that compress+encrypt (snapshot) or decrypt+decompress+verify (restore)
 * batches of blobs, so a multi-core machine uses its cores. Workers start on the first batch big
 * enough to need them, so small jobs (an append-only snapshot) never pay for thread start-up.
 * With size 0 all work runs inline.
 */
export class SealPool {
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextJob = 0;
  private turn = 0;
  /** A worker failed or exited: no more are started, and batches run on the ones left, or inline. */
  private lost = false;
  /** Workers' replies not yet released: memory made on another thread, see `release`. */
  private readonly replies = new WeakSet<ArrayBuffer>();

  /**
   * With `mainHelps`, one batch in (workers + 1) runs on the calling thread too, each thread
   * taking its share: right for restore, where the main thread would otherwise only wait. With
   * "when-behind", a batch runs on the calling thread when the workers already have two each
   * queued behind the one they work on (with one, the worker waited 2.6 s of a profiled 1 GiB
   * snapshot while the main thread sealed; with two, 1.2 s). The snapshot's main thread chunks
   * and hashes at about twice the speed one worker compresses, and waited for it more than half
   * of the time.
   */
  constructor(
    private readonly size = defaultPoolSize(4),
    private readonly mainHelps: boolean | "when-behind" = false,
  ) {}

  /** Worker threads this pool runs (0: everything inline). */
  get threads(): number {
    return this.size;
  }

  /**
   * Start the workers now instead of on the first big batch: a thread takes tens of ms to boot and
   * load its modules, which it can do on another core while the caller still prepares its work.
   */
  start(): this {
    if (this.size > 0 && this.workers.length === 0 && !this.lost) this.startWorkers();
    return this;
  }

  private startWorkers(): void {
    const { file: workerFile, execArgv } = workerScript(import.meta.url, "seal-worker");
    for (let i = 0; i < this.size; i++) {
      // Workers allocate mostly off-heap buffers; a small young generation keeps their RSS low.
      const worker = new Worker(workerFile, { execArgv, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
      worker.unref();
      worker.on("message", (reply: BatchReply & { error?: string; kind?: string }) => this.settle(reply));
      worker.on("error", (err) => this.lose(worker, err));
      worker.on("exit", (code) => this.lose(worker, new Error(`a worker thread exited (code ${code})`)));
      this.workers.push(worker);
    }
  }

  /**
   * `onInput` gets a request's input buffer back once the job is done with it (it asked with
   * `returnBuffer`), to be reused; not after a failure.
   */
  run(req: Request, transfer: ArrayBuffer[] = [req.buffer], onInput?: (buffer: ArrayBuffer) => void): Promise<Buffer[]> {
    return this.dispatch(req, transfer, onInput, (full) => (full.op === "seal" ? sealBatch(full) : openBatch(full)), split);
  }

  /** An open (with `places`) whose blobs the thread writes itself; resolves with what it wrote. */
  write(req: Omit<OpenRequest, "job">, transfer: ArrayBuffer[] = [req.buffer], onInput?: (buffer: ArrayBuffer) => void): Promise<FileWrite[]> {
    return this.dispatch(req, transfer, onInput, (full) => openAndWrite(full as OpenRequest), (reply) => reply.written ?? []);
  }

  private dispatch<T>(
    req: Request,
    transfer: ArrayBuffer[],
    onInput: ((buffer: ArrayBuffer) => void) | undefined,
    inlineRun: (full: SealRequest | OpenRequest) => T,
    fromReply: (reply: BatchReply) => T,
  ): Promise<T> {
    const job = this.nextJob++;
    const full = { ...req, job } as SealRequest | OpenRequest;
    const inline =
      this.size === 0 ||
      (this.lost && this.workers.length === 0) ||
      (this.workers.length === 0 && workBytes(req) < INLINE_BELOW) ||
      (this.mainHelps === true && job % (this.size + 1) === this.size) ||
      (this.mainHelps === "when-behind" && this.workers.length > 0 && this.pending.size >= 3 * this.workers.length);
    if (inline) {
      try {
        const out = inlineRun(full);
        // A seal helping the workers leaves the cipher's output slices, off-heap: collected as the
        // workers do, they never pile up toward V8's external-memory trigger (tens of MB).
        if (full.op === "seal" && this.mainHelps === "when-behind") collectAfter(workBytes(req));
        if (full.returnBuffer) onInput?.(full.buffer);
        return Promise.resolve(out);
      } catch (err) {
        return Promise.reject(err);
      }
    }
    if (this.workers.length === 0) this.startWorkers();
    return new Promise((resolve, reject) => {
      const worker = this.workers[this.turn++ % this.workers.length];
      this.pending.set(job, { resolve: (reply) => resolve(fromReply(reply)), reject, onInput, worker });
      worker.ref();
      worker.postMessage(full, transfer);
    });
  }

  /**
   * Free the memory of a job's parts now, once the caller is done with every one of them. A
   * worker's reply arrives as memory V8 counts as external but not as this thread's, and the
   * snapshot keeps each a little while (written to its pack file), long enough to outlive young
   * collections: V8 then left up to 64 MB of them (its external-memory trigger) for a full
   * collection, the peak of a 1 GiB S3 snapshot. Moving the memory into a clone that nothing holds
   * makes it young garbage, freed by the next scavenge. Parts of an inline job are left alone
   * (they may share Buffer's pool).
   */
  release(parts: Buffer[]): void {
    const ab = parts[0]?.buffer;
    if (ab instanceof ArrayBuffer && this.replies.delete(ab)) structuredClone(ab, { transfer: [ab] });
  }

  private settle(reply: BatchReply & { error?: string; kind?: string }): void {
    const p = this.pending.get(reply.job);
    if (!p) return;
    this.pending.delete(reply.job);
    if (this.pending.size === 0) for (const w of this.workers) w.unref();
    if (reply.error) p.reject(new RepoError(reply.error, (reply.kind as RepoError["kind"]) ?? "corrupt"));
    else {
      if (reply.input) p.onInput?.(reply.input);
      this.replies.add(reply.buffer);
      p.resolve(reply);
    }
  }

  /**
   * A worker that failed (one that could not even load its script: EMFILE under a low `ulimit -n`)
   * or exited: its jobs fail (a restore reads and opens them again, blob by blob) and it gets no
   * more. A job posted to a dead worker never settled: the restore hung, or, with nothing else
   * left to wait for, the process exited 0 with the work undone.
   */
  private lose(worker: Worker, err: Error): void {
    const i = this.workers.indexOf(worker);
    if (i < 0) return; // closed, or lost already
    this.workers.splice(i, 1);
    this.lost = true;
    for (const [job, p] of this.pending) {
      if (p.worker !== worker) continue;
      this.pending.delete(job);
      p.reject(err);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.splice(0).map((w) => w.terminate()));
  }
}

/** The bytes a request works on: its frames' (a seal's buffer may be a reused one, bigger than the batch), or an open's sealed bytes. */
function workBytes(req: Request): number {
  if (req.op === "seal") return req.frames.reduce((n, x, i) => (i % 2 ? n + x - req.frames[i - 1] : n), 0);
  return req.file ? req.file.length : req.buffer.byteLength;
}

/** A worker's reply back into its parts (exported for tests). */
export function split(reply: BatchReply): Buffer[] {
  const all = Buffer.from(reply.buffer);
  if (reply.offsets) return reply.lengths.map((len, i) => all.subarray(reply.offsets![i], reply.offsets![i] + len));
  const out: Buffer[] = [];
  let o = 0;
  for (const len of reply.lengths) {
    out.push(all.subarray(o, o + len));
    o += len;
  }
  return out;
}
