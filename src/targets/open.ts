import { RepoError } from "../repo/errors.js";
import { retrySettings, type Config } from "../config/config.js";
import { LimitTarget } from "./limit.js";
import { LocalTarget } from "./local.js";
import { parseRepoLocation } from "./location.js";
import { retryReporter, type RetryReporter } from "./retry-report.js";
import { RetryTarget } from "./retry.js";
import type { MultipartSplit } from "./counting.js";
import { S3_MULTIPART_THRESHOLD, S3Target } from "./s3.js";
import type { Target } from "./target.js";

/** Requests to a remote target at once: enough to hide latency, few enough for a home uplink. */
export const REMOTE_CONCURRENCY = 8;

/**
 * The storage a config's repository location names. Remote targets are wrapped: retries with
 * back-off outside (a retry waiting does not hold a slot), the concurrency limit inside. The retry
 * budget is the config's (`retry`), or for a bare location PI_GUARD_RETRY_MAX and the default.
 */
export function openTarget(config: Pick<Config, "repo"> & Partial<Pick<Config, "retry">>, env: NodeJS.ProcessEnv = process.env, opts: OpenTargetOptions = {}): Target {
  const loc = parseRepoLocation(config.repo);
  // A restic repository is read and written only by restic (src/restic/), never as pi-guard objects.
  if (loc.kind === "restic") throw new RepoError(`${config.repo} is a restic repository: this command works only on pi-guard's own repositories (docs/RESTIC.md)`, "usage");
  const wrap = opts.wrapStorage ?? ((t: Target) => t);
  if (loc.kind === "s3") {
    const storage = new LimitTarget(wrap(new S3Target({ bucket: loc.bucket, prefix: loc.prefix, env }), { multipart: { partSize: S3_PART_SIZE, threshold: S3_MULTIPART_THRESHOLD } }), REMOTE_CONCURRENCY);
    const maxMs = Math.min((config.retry ?? retrySettings(env)).maxMs, opts.retry?.maxMs ?? Infinity);
    return new RetryTarget(storage, { maxMs, onRetry: opts.retry?.onRetry ?? retryReporter() });
  }
  return wrap(new LocalTarget(loc.path), {});
}

export interface OpenTargetOptions {
  /**
   * Wraps the bare storage, inside the retry and limit wrappers (a CountingTarget sees every
   * request sent, retries included). `multipart` is set for storage that splits big uploads.
   */
  wrapStorage?: (storage: Target, info: { multipart?: MultipartSplit }) => Target;
  /**
   * `maxMs` caps the configured retry budget (a check that must answer soon); `onRetry` is told
   * of each wait instead of the process's reporter (reportRetriesTo).
   */
  retry?: { maxMs?: number; onRetry?: RetryReporter };
}

/** S3Target's default multipart part size. */
const S3_PART_SIZE = 5 * 1024 * 1024;
