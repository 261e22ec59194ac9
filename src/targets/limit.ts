import type { OpOptions, Target } from "./target.js";
import { TargetWrapper } from "./wrap.js";

/**
 * At most `limit` requests at once (restic's sema backend): a restore or check that asks for
 * hundreds of ranges must not open hundreds of connections. A listing takes no slot, so a caller
 * may get objects while it iterates without deadlocking a limit of one.
 */
export class LimitTarget extends TargetWrapper {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    inner: Target,
    readonly limit: number,
  ) {
    super(inner);
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`concurrency limit must be a positive integer, not ${limit}`);
  }

  /** Requests running now (for tests and progress). */
  get inFlight(): number {
    return this.active;
  }

  protected override async run<T>(op: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.acquire(signal);
    try {
      return await op();
    } finally {
      this.release();
    }
  }

  /** A stream holds its slot from the first pull until the caller reaches its end or breaks out. */
  override async *readRange(key: string, offset: number, length: number, opts?: OpOptions): AsyncIterable<Uint8Array> {
    await this.acquire(opts?.signal);
    try {
      yield* this.inner.readRange(key, offset, length, opts);
    } finally {
      this.release();
    }
  }

  private acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.active < this.limit) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        this.active++;
        resolve();
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(grant);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(grant);
    });
  }

  private release(): void {
    this.active--;
    this.waiting.shift()?.();
  }
}
