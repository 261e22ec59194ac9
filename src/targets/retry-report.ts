/**
 * What a retrying target tells its user while it waits out an outage, and how long it waits by
 * default. Kept apart from retry.ts, without imports, so that the CLI's start-up and the config
 * loader can use them without loading the targets.
 */

/**
 * Five minutes: a router that reboots, a Wi-Fi that comes back, an S3 endpoint that throttles or
 * fails over are waited out, and a cron job against a server that stays down still ends within
 * the hour. (restic waits up to 15 minutes; pi-guard's watcher retries a failed snapshot anyway.)
 */
export const DEFAULT_RETRY_MAX_MS = 5 * 60_000;

export interface RetryInfo {
  /** The try that failed: 1 for the first. */
  attempt: number;
  /** The wait before the next try. */
  delayMs: number;
  /** Since this operation first failed. */
  elapsedMs: number;
  /** How long the operation may keep failing before it gives up. */
  budgetMs: number;
  error: unknown;
}

export type RetryReporter = (info: RetryInfo) => void;

let processReporter: RetryReporter | undefined;

/** Where the targets opened by this process report their waits (the CLI: one line on stderr). */
export function reportRetriesTo(reporter: RetryReporter | undefined): void {
  processReporter = reporter;
}

export function retryReporter(): RetryReporter | undefined {
  return processReporter;
}

/** "0.8 s", "12 s", "5 min", "2.5 min". */
export function formatWait(ms: number): string {
  const one = (n: number) => n.toFixed(1).replace(/\.0$/, "");
  if (ms < 10_000) return `${one(ms / 1000)} s`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  return `${one(ms / 60_000)} min`;
}

export function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split("\n")[0];
}

/** "retrying in 2.1 s (try 3 failed, 1.6 s of the 5 min retry budget used): cannot reach S3 at …" */
export function describeRetry(r: RetryInfo): string {
  return `retrying in ${formatWait(r.delayMs)} (try ${r.attempt} failed, ${formatWait(r.elapsedMs)} of the ${formatWait(r.budgetMs)} retry budget used): ${firstLine(r.error)}`;
}
