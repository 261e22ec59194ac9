// `pi-guard status` on a restic repository: the same report and exit codes as on pi-guard's own
// (src/watch/status.ts), from restic's snapshot list: the last good snapshot and its age, a
// suspected loss by its tag, the watcher's state file if there is one, and the next jobs. restic's
// objects are its own business, so there are no object counts; and a restic repository has no
// mirrors (a mirror is a copy of pi-guard's own format).
import { agentStatus, withAgentStatus } from "../agents/status.js";
import type { Config } from "../config/config.js";
import { IMPORT_TAG } from "../repo/format.js";
import { PRE_RESTORE_TAG } from "../restore/select.js";
import { scheduleFindings, snapshotFindings, statusBounds, watcherFindings, watcherStatus, type StatusReport } from "../watch/status.js";
import type { ResticSession } from "./run.js";
import { listResticSnapshots } from "./snapshots.js";

/** With `agent`, that agent's part too (agents/status.ts), judged on the same listing as a native status judges its snapshots. */
export async function resticStatus(config: Config, s: ResticSession, opts: { maxAgeMs?: number; now?: Date; agent?: string } = {}): Promise<StatusReport> {
  const now = opts.now ?? new Date();
  const bounds = statusBounds(config, opts.maxAgeMs);
  const all = await listResticSnapshots(s);
  const own = all.filter((r) => !r.tags.includes(PRE_RESTORE_TAG) && !r.tags.includes(IMPORT_TAG)).map((r) => ({ id: r.id, time: r.time, tags: r.tags }));
  const found = snapshotFindings(own, all.length > 0, now, bounds);
  const watcher = await watcherStatus(config, now);
  const fromState = watcherFindings(watcher, now.getTime(), bounds, !!found.newestSnapshot?.suspectLoss);
  const jobs = await scheduleFindings(config, now);
  const problems = [...found.problems, ...fromState.problems, ...jobs.problems];
  const report: StatusReport = {
    healthy: problems.length === 0,
    problems: problems.map((p) => p.message),
    problemKinds: problems,
    notes: [...fromState.notes, ...jobs.notes],
    maxAgeMs: bounds.maxAgeMs,
    bounds,
    engine: "restic",
    lastGoodSnapshot: found.lastGoodSnapshot,
    newestSnapshot: found.newestSnapshot,
    repository: { location: config.repo, snapshots: all.length, unreadableSnapshots: 0, objects: null, bytes: null },
    watcher,
    mirrors: [],
    schedules: jobs.schedules,
  };
  return opts.agent === undefined ? report : withAgentStatus(report, agentStatus(config, all.map((r) => ({ id: r.id, snapshot: r })), opts.agent));
}
