/**
 * What the extension shows in pi's footer: whether the watcher of this agent dir runs and has
 * saved the last turn pi persisted, from the watcher's state file (src/watch/state.ts). Reading
 * that small file is all the extension does to know; it never opens the repository.
 */
import os from "node:os";
import path from "node:path";
import { agentDir as piAgentDir } from "../agents/pi/paths.js";
import { pidAlive } from "../pid.js";
import { readGuardRecord, realAgentDir } from "../watch/guard-record.js";
import { STALE_STATE_MS, watcherFiles, type WatcherState } from "../watch/state.js";
import { readWatcherState } from "../watch/state-file.js";

type Env = Record<string, string | undefined>;

/**
 * A persisted turn not in a snapshot after this long is reported as not saved: the default of
 * health.stuckAfter, which also leaves an S3 repository's 30 s batches (watch.remoteBatchMs) room.
 */
export const UNSAVED_AFTER_MS = 120_000;

export interface GuardPaths {
  stateDir: string;
  agentDir: string;
  files: ReturnType<typeof watcherFiles>;
  log: string;
}

/**
 * pi-guard's state dir ($XDG_STATE_HOME/pi-guard, as config.ts xdgDirs) and pi's agent dir as
 * pi itself reads it. Kept apart from config.ts on purpose: loading the whole config (zod, the
 * targets) inside pi would slow pi's start for three paths.
 */
export function guardPaths(env: Env = process.env): GuardPaths {
  const home = env.HOME || os.homedir();
  const stateDir = path.join(env.XDG_STATE_HOME || path.join(home, ".local", "state"), "pi-guard");
  const agentDir = path.resolve(piAgentDir(env, home));
  return { stateDir, agentDir, files: watcherFiles(stateDir, agentDir), log: path.join(stateDir, "pi-extension.log") };
}

/**
 * The watcher guarding this agent dir and its state: the one keyed by the agent dir as pi names
 * it, else the one whose guard record (src/watch/guard-record.ts) names the same real folder, as
 * when pi-guard's config or the watcher's PI_CODING_AGENT_DIR names it otherwise. Three small
 * reads at most; the state files are hostile input (readWatcherState checks them).
 */
export async function locateWatcher(paths: GuardPaths, host: string): Promise<{ files: GuardPaths["files"]; state: WatcherState | undefined }> {
  const own = await readWatcherState(paths.files.state);
  if (own && own.host === host && pidAlive(own.pid)) return { files: paths.files, state: own };
  const record = await readGuardRecord(paths.stateDir, await realAgentDir(paths.agentDir));
  if (record && record.agentDir !== paths.agentDir) {
    const files = watcherFiles(paths.stateDir, record.agentDir);
    const state = await readWatcherState(files.state);
    if (state) return { files, state };
  }
  return { files: paths.files, state: own };
}

export type Protection =
  | { kind: "no-watcher"; text: string }
  | { kind: "unhealthy"; text: string }
  | { kind: "saving"; text: string }
  | { kind: "saved"; text: string; savedAt: number }
  | { kind: "watching"; text: string };

/**
 * The footer line. `persistedAt`: when pi last persisted a turn in this process (0: none yet).
 * A snapshot holds that turn when it began after it; the state file records when a snapshot
 * began (older watchers: when it was committed and how long it took, so its start is taken as the
 * earliest it could have been).
 */
export function protection(state: WatcherState | undefined, host: string, persistedAt: number, now: number): Protection {
  const stopped = (why: string): Protection => ({ kind: "no-watcher", text: `pi-guard: NOT PROTECTED: ${why}` });
  if (!state) return stopped("no watcher running (pi-guard watch)");
  // Beyond its version and pid the state file is unchecked (state-file.ts): every field is read as hostile.
  if (state.host !== host) return stopped(`the watcher's state is from host ${oneLine(state.host, 64)}`);
  if (!pidAlive(state.pid)) return stopped("watcher stopped");
  if (!(now - Date.parse(String(state.updatedAt)) <= STALE_STATE_MS)) return stopped("watcher not responding");
  if (state.suspectLoss) return { kind: "unhealthy", text: "pi-guard: NOT PROTECTED: suspect loss (pi-guard status)" };
  if (state.failingSince) return { kind: "unhealthy", text: `pi-guard: NOT PROTECTED: snapshots failing for ${ago(now - Date.parse(String(state.failingSince)))}` };
  const problems = state.health && state.health.healthy === false && Array.isArray(state.health.problems) ? state.health.problems : [];
  if (problems.length) return { kind: "unhealthy", text: `pi-guard: NOT PROTECTED: ${oneLine(problems[0]?.message, 80)}` };
  const last = state.lastSnapshot;
  const endedAt = typeof last?.time === "string" ? Date.parse(last.time) : NaN;
  // The snapshot's time is its commit, not its end: time - durationMs would put the start too early
  // by the work after the commit, and a turn persisted in that gap would stay "saving…".
  const recorded = typeof last?.began === "string" ? Date.parse(last.began) : NaN;
  const began = Number.isFinite(recorded) ? recorded : endedAt - (Number.isFinite(last?.durationMs) ? last!.durationMs : 0);
  if (persistedAt && !(began >= persistedAt)) {
    return now - persistedAt > UNSAVED_AFTER_MS
      ? { kind: "unhealthy", text: `pi-guard: NOT PROTECTED: last turn not saved after ${ago(now - persistedAt)}` }
      : { kind: "saving", text: "pi-guard: saving…" };
  }
  if (Number.isFinite(endedAt)) return { kind: "saved", text: `pi-guard: saved ${ago(now - endedAt)} ago`, savedAt: endedAt };
  return { kind: "watching", text: "pi-guard: watching" };
}

const oneLine = (v: unknown, max: number): string => String(v).replace(/\s+/g, " ").slice(0, max);

/** "2 s", "3 min", "5 h", "2 d"; "?" for a time that is not one. */
export function ago(ms: number): string {
  if (!Number.isFinite(ms)) return "?";
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}
