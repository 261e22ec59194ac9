/**
 * Retention as `forget` and `prune` apply it: the policy a request names (the --keep-* counts, or
 * the config's, never both and never an empty one by accident), and a prune of pi-guard's own
 * repository. The forget itself is the engine's (Engine.forget), on either engine.
 */
import type { Config, RetentionPolicy } from "../config/config.js";
import type { PruneReport } from "../repo/prune.js";
import type { Repository } from "../repo/repository.js";

/** A retention request as typed: counts as text, durations such as "1y6m". */
export interface RetentionRequest {
  keepLast?: string;
  keepWithin?: string;
  keepHourly?: string;
  keepDaily?: string;
  keepWeekly?: string;
  keepMonthly?: string;
  keepYearly?: string;
  keepTag?: string[];
  /** The config's retention policy instead of the counts. */
  policy?: boolean;
}

async function count(flag: string, value: string | undefined): Promise<number | undefined> {
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value)) {
    const { RepoError } = await import("../repo/errors.js");
    throw new RepoError(`--${flag} needs a whole number, not "${value}"`, "usage");
  }
  return Number(value);
}

/** The policy a request names; undefined when it names none (then only ids can be forgotten). */
export async function retentionPolicy(req: RetentionRequest, config: Pick<Config, "retention">): Promise<RetentionPolicy | undefined> {
  const given: RetentionPolicy = {
    keepLast: await count("keep-last", req.keepLast),
    keepWithin: req.keepWithin,
    keepHourly: await count("keep-hourly", req.keepHourly),
    keepDaily: await count("keep-daily", req.keepDaily),
    keepWeekly: await count("keep-weekly", req.keepWeekly),
    keepMonthly: await count("keep-monthly", req.keepMonthly),
    keepYearly: await count("keep-yearly", req.keepYearly),
    keepTags: req.keepTag,
  };
  const any = Object.values(given).some((v) => v !== undefined);
  if (req.policy && any) {
    const { RepoError } = await import("../repo/errors.js");
    throw new RepoError("--policy uses the configured retention policy; give either it or --keep-* options", "usage");
  }
  if (req.policy) return config.retention;
  return any ? Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) : undefined;
}

/** `--max-unused` ("10%", the default): the unused share a partly used pack may keep. */
export async function unusedShare(value: string | undefined): Promise<number> {
  return (await import("../repo/retention.js")).parseUnusedShare(value);
}

/**
 * `prune`: delete what no snapshot uses, repack mostly unused packs; refuses on missing or
 * damaged data unless allowDamaged (then pruneLeftDamage says the damage is still there).
 */
export async function pruneRepository(
  repo: Repository,
  opts: { dryRun?: boolean; maxUnused?: string; allowDamaged?: boolean; lockWaitMs?: number; onProgress?: (p: { phase: string; done: number; total: number }) => void } = {},
): Promise<PruneReport> {
  const maxUnusedFraction = await unusedShare(opts.maxUnused);
  const { prune } = await import("../repo/prune.js");
  return prune(repo, { dryRun: opts.dryRun, maxUnusedFraction, allowDamaged: opts.allowDamaged, lockWaitMs: opts.lockWaitMs, onProgress: opts.onProgress });
}

/** Pruning went on past damage (allowDamaged): the work is done, the repository is still damaged. */
export function pruneLeftDamage(r: Pick<PruneReport, "blobs"> | undefined): boolean {
  return !!r && (r.blobs.missing.length > 0 || r.blobs.damaged.length > 0);
}
