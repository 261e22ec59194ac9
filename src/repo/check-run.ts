import { checkRepository, type CheckOptions, type CheckReport } from "./check.js";
import { acquireLock, removeStaleLocks } from "./lock.js";
import type { Repository } from "./repository.js";

/**
 * `check` as the CLI and the scheduled job run it: stale locks removed, a shared lock held
 * throughout, temp files older than an hour (only a killed process leaves them) removed, then
 * the check; a check whose lock was lost meanwhile is not reported as a result.
 */
export async function runCheck(
  repo: Repository,
  opts: CheckOptions & { lockWaitMs?: number } = {},
): Promise<CheckReport> {
  await removeStaleLocks(repo);
  const lock = await acquireLock(repo, { exclusive: false, command: opts.readData ? "check --read-data" : "check", waitMs: opts.lockWaitMs ?? 60_000 });
  try {
    await repo.target.cleanTemp?.(60 * 60 * 1000);
    const report = await checkRepository(repo, opts);
    lock.assertHeld();
    return report;
  } finally {
    await lock.release();
  }
}
