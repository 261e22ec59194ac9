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
  lastSnapshot?: { id: string; time: string; durationMs: number; files: number };
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
}

/** `<stateDir>/watch-<first 16 hex of sha256(agentDir)>.{json,log,lock}` */
export function watcherFiles(stateDir: string, agentDir: string): { state: string; log: string; lock: string } {
  const tag = createHash("sha256").update(path.resolve(agentDir)).digest("hex").slice(0, 16);
  const base = path.join(stateDir, `watch-${tag}`);
  return { state: `${base}.json`, log: `${base}.log`, lock: `${base}.lock` };
}
