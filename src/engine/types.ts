/**
 * One engine interface, implemented by pi-guard's own repository format (native.ts) and by a
 * restic repository driven through the restic binary (restic.ts). The config's repository
 * location selects one (open.ts); the CLI commands, the scheduled jobs and the library API call
 * it without knowing which. Each implementation keeps its own format's facts (a native snapshot
 * has a dedup parent and stored bytes, a restic one has neither) in the optional fields; the
 * policy (reserved tags, the missing agent dir, the loss guard, the last snapshot of a group) is
 * the same for both, and test/engine/conformance.ts proves that for both.
 */
import type { RetentionPolicy } from "../config/config.js";
import type { CleanupRecord } from "../repo/format.js";
import type { MirrorShipment } from "../repo/ship.js";
import type { EmptiedGroup } from "../repo/retention.js";
import type { PruneReport } from "../repo/prune.js";
import type { SafeRestoreResult } from "../engine.js";
import type { ResolvedTime } from "../restore/select.js";
import type { BackupOptions } from "../snapshot/backup.js";
import type { LossVerdict } from "../snapshot/loss-guard.js";
import type { StatusReport } from "../watch/status.js";
import type { OpenedCatalog } from "../library/catalog.js";

export type EngineKind = "native" | "restic";

/** A snapshot as every engine lists it. */
export interface EngineSnapshot {
  id: string;
  time: string;
  host: string;
  user: string;
  tags: string[];
  roots: { name: string; path: string }[];
  /** Which agent each root belongs to, by root name, where the snapshot records it (native: its manifest; restic: its pi-guard-agent tags). */
  agents?: Record<string, string>;
}

/** The snapshot policy's options (snapshot/backup.ts); fromTar, time and readAll are native only. */
export type EngineBackupOptions = BackupOptions;

/** One snapshot taken, in the shape both engines fill. */
export interface EngineSnapshotTaken {
  id: string;
  time: string;
  /** The snapshot it was judged against (native: also its dedup parent). */
  parent: string | null;
  tags: string[];
  summary: { files: number; filesNew: number; filesChanged: number; filesUnchanged: number; bytesTotal: number; bytesNew: number; durationMs: number; bytesStored?: number };
  /** Paths that could not be read (root absent where the engine names absolute paths). */
  skipped: { root?: string; path: string; error: string }[];
  /** Native only: files that changed each time they were read. */
  changedWhileRead: { root: string; path: string; reads: number }[];
  /** Native only: FIFOs, sockets and devices, named and not backed up. */
  special: { root: string; path: string; kind: string }[];
  /** Most files of the last whole snapshot vanished: tagged suspect-loss unless accepted. */
  loss?: LossVerdict;
  /** Native only: an agent's own age-based cleanup removed these since `cleanup.against` (tagged agent-cleanup). */
  cleanup?: CleanupRecord;
}

export interface EngineBackupResult {
  engine: EngineKind;
  /** null: nothing to back up (allowEmpty, and no earlier snapshot held the agent dir). */
  snapshot: EngineSnapshotTaken | null;
  /** This run created the repository; keyFile when it made a key file for it. */
  created?: { keyFile?: string };
  /** The snapshot lost most files and acceptLoss made it the new whole state, untagged. */
  lossAccepted: boolean;
  /** One per mirror of the config (a restic engine reports each as not shipped to). */
  mirrors: MirrorShipment[];
}

export interface EngineRestoreOptions {
  /** Restore into this folder instead of in place. */
  targetDir?: string;
  /** Globs relative to each root; native: each matching file brings the rest of its agent's restore unit. */
  paths?: string[];
  /** A session id or unique prefix; native: any agent's, with its restore units (restic: pi's only for now). */
  session?: string;
  /** Only this agent's roots (a registry name; src/restore/destinations.ts onlyAgent). */
  agent?: string;
  dryRun?: boolean;
  host?: string;
  /** With targetDir: also pi-guard's own metadata root. */
  withMeta?: boolean;
  /** Native only: delete files the snapshot does not hold. */
  delete?: boolean;
  /** Native only: take no repository lock. */
  noLock?: boolean;
  lockWaitMs?: number;
  onProgress?: (p: { files: number; bytes: number; current: string }) => void;
}

/** A restore's result as the native engine gives it (engine.ts), with only the snapshot's id, time and host. */
export type EngineRestoreResult = Omit<SafeRestoreResult, "snapshot"> & {
  engine: EngineKind;
  snapshot: { id: string; snapshot: { time: string; host: string } };
};

export interface EngineForgetOptions {
  /** Forget what this policy does not keep; or give `ids`, not both. */
  policy?: RetentionPolicy;
  /** These snapshots (ids or unique prefixes; native only: restic forgets by policy here). */
  ids?: string[];
  /** Then free the forgotten snapshots' data (native: pi-guard prune; restic: restic prune); never after a dry run or a refused forget. */
  prune?: EnginePruneOptions;
  dryRun?: boolean;
  host?: string;
  includeSpecial?: boolean;
  /** Let the policy empty a group (only with host: never for a whole repository by accident). */
  allowRemoveAll?: boolean;
  lockWaitMs?: number;
  now?: Date;
}

export interface EnginePruneOptions {
  /** The share of the kept packs' bytes that may stay unused (0.1: 10%). */
  maxUnusedFraction?: number;
  /** Native only: prune on past damage (restic prune refuses a damaged repository). */
  allowDamaged?: boolean;
  onProgress?: (p: { phase: string; done: number; total: number }) => void;
}

export interface EngineForgetResult {
  dryRun: boolean;
  keep: { id: string; time: string; host: string; tags: string[]; reasons: string[] }[];
  remove: { id: string; time: string; host: string; tags: string[] }[];
  removed: number;
  /** Snapshot objects that could not be read: left alone. */
  unreadable: { id: string; error: string }[];
  emptiedGroups: EmptiedGroup[];
  /** It would have emptied a group: nothing was forgotten (the last-snapshot guard). */
  refused: boolean;
  /** With prune, when it ran: the native prune report (native) or restic prune's success (restic). */
  prune?: { engine: "native"; report: PruneReport } | { engine: "restic" };
}

export interface EngineSessionsOptions {
  /** Live files only: no repository is opened. */
  liveOnly?: boolean;
  lockWaitMs?: number;
  /** Only a catalog whose cached view is current, read without unlocking anything; else NotWarm (src/sessions/not-warm.ts). */
  warmOnly?: boolean;
}

export interface EngineCheckResult {
  ok: boolean;
  readData: boolean;
  /** One line per problem found. */
  problems: string[];
  /** The engine's own full report (native: CheckReport). */
  details: unknown;
}

export interface Engine {
  readonly kind: EngineKind;
  /** The repository location as configured. */
  readonly location: string;
  /** Create the repository; its id. */
  init(opts?: { password?: string; useKeyFile?: boolean }): Promise<{ id: string; credential: "password" | "keyfile"; keyFile?: string }>;
  /** Snapshot the agent dir by the snapshot policy (policy.ts), then ship to the mirrors. */
  backup(opts?: EngineBackupOptions): Promise<EngineBackupResult>;
  /** Readable snapshots, oldest first; `onUnreadable` hears each one that is not. */
  listSnapshots(opts?: { onUnreadable?: (message: string) => void }): Promise<EngineSnapshot[]>;
  /** The snapshot `when` names ("latest", an id prefix, a time) by pi-guard's rules of choice. */
  findSnapshot(when: string, opts?: { host?: string }): Promise<{ snapshot: EngineSnapshot; resolved?: ResolvedTime; warnings: string[] }>;
  restore(when: string, opts?: EngineRestoreOptions): Promise<EngineRestoreResult>;
  /** Forget by a retention policy; never the last snapshot of a group unless allowRemoveAll. */
  forget(opts: EngineForgetOptions): Promise<EngineForgetResult>;
  check(opts?: { readData?: boolean; lockWaitMs?: number }): Promise<EngineCheckResult>;
  /**
   * The session catalog over the live files and every snapshot, every agent's sessions read by
   * its adapter (sessions/catalog.ts): the same records, sources and bytes whichever engine holds
   * the snapshots. `finish` closes it (and releases what the engine holds while it is read).
   */
  sessions(opts?: EngineSessionsOptions): Promise<OpenedCatalog>;
  /** The health facts `pi-guard status` prints; with `agent`, that agent's snapshots judged too. */
  status(opts?: { maxAgeMs?: number; now?: Date; agent?: string }): Promise<StatusReport>;
}
