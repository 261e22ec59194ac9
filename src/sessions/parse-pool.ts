// Worker threads that summarise sessions, so a cold `sessions list` uses every core.
// Small jobs never start a thread: a worker's start-up (tens of ms) would cost more than the work.

import { Worker } from "node:worker_threads";
import os from "node:os";
import { workerScript, workersSetting } from "../worker-file.js";
import type { SessionSummary } from "./summary.js";

export type ParseRequest = { job: number; op: "summary"; path: string; fallbackId: string };
export type ParseReply = { job: number; summary?: SessionSummary; error?: string };

/** Below this many bytes to parse, sessions are parsed on the caller's thread: a worker's start-up would cost more. */
const POOL_BYTES = 8 * 1024 * 1024;

/**
 * Threads to parse `bytes` of sessions with: one per core (at most 4), or none for a small job.
 * PI_GUARD_WORKERS overrides (0: parse on the main thread).
 */
export function parseThreads(bytes: number): number {
  return workersSetting() ?? (bytes < POOL_BYTES ? 0 : Math.max(1, Math.min(4, os.availableParallelism())));
}

class WorkerLost extends Error {}

export class ParsePool {
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<number, { resolve: (r: ParseReply) => void; reject: (e: Error) => void; worker: Worker }>();
  private readonly load = new Map<Worker, number>();
  private nextJob = 0;
  /** A worker failed: no more are started, and jobs run on the workers left, or inline. */
  private lost = false;

  constructor(private readonly size: number) {}

  /** summarizeSession(path, fallbackId); run again inline when its worker died (only I/O errors reject). */
  async summary(path: string, fallbackId: string): Promise<SessionSummary> {
    const inline = async () => (await import("./summary.js")).summarizeSession(path, fallbackId);
    if (!this.usable()) return inline();
    return this.run({ op: "summary", path, fallbackId }).then(
      (r) => r.summary!,
      (err: Error) => (err instanceof WorkerLost ? inline() : Promise.reject(err)),
    );
  }

  private usable(): boolean {
    if (!this.lost && this.workers.length < this.size) this.start();
    return this.workers.length > 0;
  }

  private run(req: Omit<ParseRequest, "job">): Promise<ParseReply> {
    const job = this.nextJob++;
    // The least busy worker: summaries of very different sizes would otherwise queue behind a big one.
    const worker = this.workers.reduce((a, b) => ((this.load.get(b) ?? 0) < (this.load.get(a) ?? 0) ? b : a));
    this.load.set(worker, (this.load.get(worker) ?? 0) + 1);
    worker.ref();
    return new Promise((resolve, reject) => {
      this.pending.set(job, { resolve, reject, worker });
      worker.postMessage({ ...req, job });
    });
  }

  private start(): void {
    const { file, execArgv } = workerScript(import.meta.url, "parse-worker");
    // Parsing leaves short-lived garbage only: a small young generation keeps the worker's RSS low.
    const worker = new Worker(file, { execArgv, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
    worker.unref();
    worker.on("message", (reply: ParseReply) => {
      const p = this.pending.get(reply.job);
      if (!p) return;
      this.pending.delete(reply.job);
      const left = this.load.get(worker)! - 1;
      this.load.set(worker, left);
      if (!left) worker.unref();
      if (reply.error !== undefined) p.reject(new Error(reply.error));
      else p.resolve(reply);
    });
    // A worker that died (out of memory, or its script could not load) takes its jobs with it.
    const lose = (err: Error) => {
      const i = this.workers.indexOf(worker);
      if (i < 0) return;
      this.workers.splice(i, 1);
      this.lost = true;
      for (const [job, p] of this.pending) if (p.worker === worker) this.pending.delete(job) && p.reject(new WorkerLost(err.message));
    };
    worker.on("error", lose);
    worker.on("exit", (code) => lose(new Error(`a parse worker exited (code ${code})`)));
    this.workers.push(worker);
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.splice(0).map((w) => w.terminate()));
  }
}
