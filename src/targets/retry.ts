import { RepoError } from "../repo/errors.js";
import { ObjectExists, ObjectNotFound, TargetError, type ObjectInfo, type OpOptions, type Target } from "./target.js";
import { TargetWrapper } from "./wrap.js";

export interface RetryOptions {
  /** Tries per operation, the first included. */
  attempts?: number;
  /** The first back-off; it doubles per retry up to maxDelayMs. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Told before each wait (the CLI can show "retrying"). */
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
  random?: () => number;
}

const TRANSIENT_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "ECONNABORTED", "ETIMEDOUT", "EPIPE", "EAI_AGAIN", "ENETUNREACH", "EHOSTUNREACH", "ENETDOWN", "UND_ERR_SOCKET"]);

/**
 * Whether trying again can help: network failures, 5xx and throttling can; a missing object,
 * an existing one, bad credentials, a denied permission, a full disk and an abort cannot.
 */
export function isTransient(err: unknown): boolean {
  if (err instanceof TargetError) return err.transient;
  if (err instanceof ObjectNotFound || err instanceof ObjectExists || err instanceof RepoError) return false;
  const e = err as { name?: string; code?: string };
  if (e?.name === "AbortError") return false;
  return typeof e?.code === "string" && TRANSIENT_CODES.has(e.code);
}

/**
 * Retries transient failures with exponential back-off and jitter (restic's backend/retry is the
 * model): a flaky connection costs a few seconds, never a snapshot, while a permanent error fails
 * on its first try. Jitter keeps many hosts that lost the same server from retrying in lockstep.
 * A retried put is safe: objects are content-addressed or (locks) replaced whole.
 */
export class RetryTarget extends TargetWrapper {
  private readonly attempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(
    inner: Target,
    private readonly opts: RetryOptions = {},
  ) {
    super(inner);
    this.attempts = opts.attempts ?? 5;
    this.baseDelayMs = opts.baseDelayMs ?? 250;
    this.maxDelayMs = opts.maxDelayMs ?? 4000;
  }

  /** Half the capped exponential delay fixed, half random ("equal jitter"). */
  delayFor(retry: number): number {
    const cap = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** retry);
    return Math.round(cap / 2 + (this.opts.random ?? Math.random)() * (cap / 2));
  }

  protected override async run<T>(op: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await op();
      } catch (err) {
        if (attempt >= this.attempts || !isTransient(err) || signal?.aborted) throw err;
        const delayMs = this.delayFor(attempt - 1);
        this.opts.onRetry?.({ attempt, delayMs, error: err });
        await sleep(delayMs, signal);
      }
    }
  }

  /**
   * A stream that fails part-way goes on from the first byte not yet handed out (restic's retry
   * backend does the same): the caller sees each byte once. Tries count again after progress.
   */
  override async *readRange(key: string, offset: number, length: number, opts?: OpOptions): AsyncIterable<Uint8Array> {
    let got = 0;
    let gotAtFailure = 0;
    for (let attempt = 1; ; attempt++) {
      try {
        for await (const chunk of this.inner.readRange(key, offset + got, length - got, opts)) {
          got += chunk.length;
          yield chunk;
        }
        return;
      } catch (err) {
        if (got > gotAtFailure) attempt = 1;
        gotAtFailure = got;
        if (attempt >= this.attempts || !isTransient(err) || opts?.signal?.aborted) throw err;
        const delayMs = this.delayFor(attempt - 1);
        this.opts.onRetry?.({ attempt, delayMs, error: err });
        await sleep(delayMs, opts?.signal);
      }
    }
  }

  /** A listing that fails part-way starts over and skips what it already yielded (keys come sorted). */
  override async *list(prefix: string, opts?: OpOptions): AsyncIterable<ObjectInfo> {
    let last: string | undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        for await (const info of this.inner.list(prefix, opts)) {
          if (last !== undefined && info.key <= last) continue;
          last = info.key;
          yield info;
        }
        return;
      } catch (err) {
        if (attempt >= this.attempts || !isTransient(err) || opts?.signal?.aborted) throw err;
        const delayMs = this.delayFor(attempt - 1);
        this.opts.onRetry?.({ attempt, delayMs, error: err });
        await sleep(delayMs, opts?.signal);
      }
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
