/**
 * pi-guard's library API: what the CLI, the watcher and the scheduled jobs run, for a TypeScript
 * program that scripts backups and sessions without the CLI (docs/LIBRARY.md).
 *
 *   const guard = await openRepository({ repo: "/mnt/backup/pi", keyFile: "~/.config/pi-guard/key" });
 *   await guard.snapshot();
 *   const [s] = await guard.find({ tag: "keep", since: "2026-11-01" });
 *   const markdown = await s.export("markdown");
 *   await guard.close();
 *
 * Everything that is exported here is the stable surface; the modules behind it are not.
 */
import { PiGuard, type OpenOptions } from "./library/guard.js";

export { PiGuard, Session, type ExportCallOptions, type FindQuery, type ForgetCallOptions, type MergeResult, type OpenOptions, type SnapshotOutcome } from "./library/guard.js";
// What has no repository of its own to hang on (the service, the agents, pi's extension), over a Config (guard.config).
export { installWatchService, uninstallWatchService, watchServiceStatus, listSchedules, runScheduledJobs, type ServiceInstall, type ServiceUninstall, type ScheduleListing } from "./library/service.js";
export { describeAgents, installPiExtension, uninstallPiExtension } from "./library/agents.js";
export type { RunningWatcher, WatchOptions } from "./library/watch.js";
export type { SalvageRequest, SalvageOutcome, SalvageHooks, OpenFilesOutcome } from "./library/salvage.js";
export type { KeyListing, KeyPlace } from "./library/keys.js";
export type { PruneReport } from "./repo/prune.js";
export type { StatusReport } from "./watch/status.js";
export type { Stats } from "./sessions/stats.js";
export type { VerifyReport } from "./snapshot/verify.js";
export type { DeleteResult } from "./sessions/trash.js";
export type { AgentReport } from "./agents/detect.js";
export type { SearchHit } from "./sessions/search-query.js";
export type { SessionRecord } from "./sessions/catalog.js";
export type { SessionView } from "./sessions/view.js";
export type { LoadedSession } from "./sessions/read.js";
export type { SessionEntry, SessionHeader } from "./model/session.js";
export type { ExportFormat } from "./export/index.js";
export type { Config } from "./config/config.js";
export type {
  Engine,
  EngineBackupOptions,
  EngineBackupResult,
  EngineCheckResult,
  EngineForgetOptions,
  EngineForgetResult,
  EngineKind,
  EngineRestoreOptions,
  EngineRestoreResult,
  EngineSnapshot,
  EngineSnapshotTaken,
} from "./engine/types.js";
export type { SnapshotFinding } from "./engine/verdict.js";
export type { AgentRestoreCheck } from "./restore/unit-select.js";
export { openEngine, type OpenEngineOptions } from "./engine/open.js";
export { loadConfig } from "./config/config.js";
export { RepoError, isRepoError } from "./repo/errors.js";

/** Open a repository by its location and credential, or (with no options) as the config names it. */
export function openRepository(opts: OpenOptions = {}): Promise<PiGuard> {
  return PiGuard.open(opts);
}
