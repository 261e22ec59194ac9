/**
 * The watcher's state file: written by `watch` (atomically, every few seconds and after every
 * snapshot), read by `status` and `doctor`. One file per agent dir, so two watchers of different
 * agent dirs do not collide and a second watcher of the same one can be refused.
 */
import { createHash } from "node:crypto";
import path from "node:path";

export interface WatcherState {
  version: 1;
  pid: number;
  host: string;
  agentDir: string;
  repo: string;
  startedAt: string;
  /** When this file was last written; a state older than a minute with a dead pid is a crashed watcher. */
  updatedAt: string;
  cpu: { userMs: number; systemMs: number };
  rssBytes: number;
  snapshots: { made: number; failed: number };
  /**
   * `time` is the snapshot's own (its commit); `began` when the watcher started taking it: a change
   * made after `began` may not be in it (absent in files of older versions: time - durationMs).
   */
  lastSnapshot?: { id: string; time: string; began?: string; durationMs: number; files: number };
  lastError?: { time: string; message: string };
  /** Set while the newest snapshot is a suspected loss and the files have not come back. */
  suspectLoss?: { since: string; snapshot: string; filesBefore: number; filesNow: number };
  nextJobs: { job: string; cron: string; next: string }[];
  /**
   * Requests this watcher sent to the repository's storage since startedAt, as of updatedAt
   * (src/targets/counting.ts); absent in files of older versions.
   */
  requests?: { puts: number; gets: number; lists: number };
  /** The same for each mirror the watcher shipped to (or tried to); absent in older files. */
  mirrorRequests?: { mirror: string; puts: number; gets: number; lists: number }[];
  /**
   * CPU used over the last minute or so (between two state writes at least CPU_WINDOW_MIN_MS
   * apart), as a percentage of one core; null until such a window has passed.
   */
  cpuRecent?: { percent: number; overMs: number } | null;
  /** When the current run of failed snapshot attempts began, and how many failed; absent after a success. */
  failingSince?: string;
  failures?: number;
  /** When the oldest change that is in no snapshot yet was seen; absent when there is none. */
  pendingSince?: string;
  /** Each mirror's lag, as the watcher's shipments found it. */
  mirrors?: MirrorLag[];
  /** The last full comparison of the roots against the last snapshot (watch.fullScanMs). */
  fullScan?: FullScanResult;
  /** Health as the watcher judged it at its last tick (src/watch/health.ts), and since when. */
  health?: { healthy: boolean; since: string; problems: { kind: string; subject?: string; message: string }[] };
}

export interface MirrorLag {
  mirror: string;
  /** The newest snapshot of the repository the mirror is known to hold (at the last good shipment). */
  lastShipped: { id: string; time: string } | null;
  /** Snapshots of the repository the mirror lacks, and when the oldest of them was made. */
  behind: number;
  behindSince: string | null;
  lastAttempt: { time: string; ok: boolean; error?: string } | null;
  /** When the current run of failed shipments began. */
  failingSince: string | null;
  /** Set by `status` when it listed the mirror itself and could not. */
  unreachable?: string;
}

export interface FullScanResult {
  time: string;
  durationMs: number;
  /** Files on disk, and files of the snapshot compared with. */
  files: number;
  snapshot: string;
  /** Files that differ (new, gone, or another inode, size or mtime). */
  differences: number;
  /** Of those, the ones no watch event had reported: chokidar missed them. */
  missed: number;
  sample: string[];
}

/**
 * The watcher rewrites its state file every few seconds; this much silence means it is not working
 * (`pi-guard status`, and the pi extension's footer, which reads only this module).
 */
export const STALE_STATE_MS = 5 * 60 * 1000;

/**
 * `<stateDir>/watch-<first 16 hex of sha256(agentDir)>.{json,log,lock}`, `.alert.json`: the
 * last health an alert was sent for (src/watch/alert.ts), shared by the watcher and `status --alert`,
 * `.request`: "snapshot now", written by the pi extension (src/watch/requests.ts), and `.sock`: the
 * socket `pi-guard snapshot` hands its snapshot to the watcher by (src/watch/socket.ts).
 */
export function watcherFiles(stateDir: string, agentDir: string): { state: string; log: string; lock: string; alert: string; request: string; socket: string } {
  const tag = createHash("sha256").update(path.resolve(agentDir)).digest("hex").slice(0, 16);
  const base = path.join(stateDir, `watch-${tag}`);
  return { state: `${base}.json`, log: `${base}.log`, lock: `${base}.lock`, alert: `${base}.alert.json`, request: `${base}.request`, socket: `${base}.sock` };
}
