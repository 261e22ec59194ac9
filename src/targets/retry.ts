import { RepoError } from "../repo/errors.js";
import { DEFAULT_RETRY_MAX_MS, firstLine, formatWait, type RetryReporter } from "./retry-report.js";
import { ObjectExists, ObjectNotFound, TargetError, type ObjectInfo, type OpOptions, type Target } from "./target.js";
import { TargetWrapper } from "./wrap.js";

export interface RetryOptions {
  /**
   * How long an operation may keep failing before it gives up, from its first failure (default
   * DEFAULT_RETRY_MAX_MS); 0 never retries. The last wait is cut to what is left of it.
   */
  maxMs?: number;
  /** Tries per operation at most, the first included (default: no limit, the budget decides). */
  attempts?: number;
  /** The first back-off; it doubles per retry up to maxDelayMs. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Told before each wait (the CLI prints one line). */
  onRetry?: RetryReporter;
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
 * model) for as long as the budget allows: an outage of minutes costs a wait, never a snapshot,
 * while a permanent error fails on its first try. Jitter keeps many hosts that lost the same
 * server from retrying in lockstep. A retried put is safe: objects are content-addressed or
 * (locks) replaced whole. An operation that is still failing when the budget is spent fails with
 * its last error and how long it kept failing.
 */
export class RetryTarget extends TargetWrapper {
  private readonly maxMs: number;
  private readonly attempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(
    inner: Target,
    private readonly opts: RetryOptions = {},
  ) {
    super(inner);
    this.maxMs = opts.maxMs ?? DEFAULT_RETRY_MAX_MS;
    this.attempts = opts.attempts ?? Infinity;
    this.baseDelayMs = opts.baseDelayMs ?? 250;
    this.maxDelayMs = opts.maxDelayMs ?? 30_000;
  }

  /** Half the capped exponential delay fixed, half random ("equal jitter"). */
  delayFor(retry: number): number {
    const cap = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** retry);
    return Math.round(cap / 2 + (this.opts.random ?? Math.random)() * (cap / 2));
  }

  /** One operation's tries: `failed` waits before the next one, or throws when there is none. */
  private tries(signal?: AbortSignal): { failed(err: unknown): Promise<void>; progressed(): void } {
    let attempt = 0;
    let since: number | undefined;
    return {
      failed: async (err) => {
        attempt++;
        if (!isTransient(err) || signal?.aborted) throw err;
        const now = Date.now();
        since ??= now;
        const elapsedMs = now - since;
        const left = this.maxMs - elapsedMs;
        if (attempt >= this.attempts || left <= 0) throw attempt === 1 ? err : this.gaveUp(err, attempt, elapsedMs);
        const delayMs = Math.min(this.delayFor(attempt - 1), left);
        this.opts.onRetry?.({ attempt, delayMs, elapsedMs, budgetMs: this.maxMs, error: err });
        await sleep(delayMs, signal);
      },
      // A stream that got further before it broke starts its count and its budget again.
      progressed: () => {
        attempt = 0;
        since = undefined;
      },
    };
  }

  private gaveUp(err: unknown, attempts: number, elapsedMs: number): TargetError {
    const why = attempts >= this.attempts ? `${attempts} tries is the limit` : `the retry budget is ${formatWait(this.maxMs)} (PI_GUARD_RETRY_MAX, or retry.maxMs in the config file)`;
    return new TargetError(`${firstLine(err)}, still failing after ${attempts} tries over ${formatWait(elapsedMs)}: ${why}`, err instanceof RepoError ? err.kind : "io", true);
  }

  protected override async run<T>(op: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const tries = this.tries(signal);
    for (;;) {
      try {
        return await op();
      } catch (err) {
        await tries.failed(err);
      }
    }
  }

  /**
   * A stream that fails part-way goes on from the first byte not yet handed out (restic's retry
   * backend does the same): the caller sees each byte once. Tries count again after progress.
   */
  override async *readRange(key: string, offset: number, length: number, opts?: OpOptions): AsyncIterable<Uint8Array> {
    const tries = this.tries(opts?.signal);
    let got = 0;
    let gotAtFailure = 0;
    for (;;) {
      try {
        for await (const chunk of this.inner.readRange(key, offset + got, length - got, opts)) {
          got += chunk.length;
          yield chunk;
        }
        return;
      } catch (err) {
        if (got > gotAtFailure) tries.progressed();
        gotAtFailure = got;
        await tries.failed(err);
      }
    }
  }

  /** A listing that fails part-way starts over and skips what it already yielded (keys come sorted). */
  override async *list(prefix: string, opts?: OpOptions): AsyncIterable<ObjectInfo> {
    const tries = this.tries(opts?.signal);
    let last: string | undefined;
    for (;;) {
      try {
        for await (const info of this.inner.list(prefix, opts)) {
          if (last !== undefined && info.key <= last) continue;
          last = info.key;
          yield info;
        }
        return;
      } catch (err) {
        await tries.failed(err);
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
