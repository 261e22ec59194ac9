/**
 * `pi-guard status`: is the data safe right now? The last good snapshot and its age, the
 * watcher (from its state file), the repository's counts and size, and the next scheduled jobs.
 * Unhealthy (the CLI exits 1) when there is no good snapshot, when a suspected loss is pending,
 * or when the last good snapshot is older than maxAgeMs. Everything read is treated as hostile.
 */
import { promises as fs } from "node:fs";
import type { Config } from "../config/config.js";
import { isImport, SUSPECT_LOSS_TAG } from "../repo/format.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { allSnapshotsDamaged } from "../repo/snapshot-damage.js";
import { PRE_RESTORE_TAG } from "../restore/select.js";
import { readScheduleState, upcomingJobs, type JobRun } from "./schedule.js";
import { watcherFiles, type WatcherState } from "./state.js";
import { pidAlive } from "../pid.js";
import { hostName } from "../host.js";

/** The watcher rewrites its state file every few seconds; this much silence means it is not working. */
export const STALE_STATE_MS = 5 * 60 * 1000;

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** "90s", "15m", "1h", "1h30m", "2d", "1ms" → milliseconds; undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d|w))+$/.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)) ms += Number(m[1]) * UNITS[m[2]];
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

export interface SnapshotBrief {
  id: string;
  time: string;
  ageMs: number;
  tags: string[];
}

export interface WatcherStatus {
  /**
   * running; stale (pid alive, but the file has not been rewritten for STALE_STATE_MS: hung, or
   * the pid now belongs to another process); stopped (pid gone); elsewhere (another host's
   * watcher); none (no state file); unreadable.
   */
  state: "running" | "stale" | "stopped" | "elsewhere" | "none" | "unreadable";
  file: string;
  message: string;
  pid?: number;
  host?: string;
  startedAt?: string;
  updatedAt?: string;
  uptimeMs?: number;
  cpu?: { userMs: number; systemMs: number; percent: number };
  rssBytes?: number;
  snapshots?: { made: number; failed: number };
  lastError?: { time: string; message: string };
  suspectLoss?: { since: string; snapshot: string; filesBefore: number; filesNow: number };
  /**
   * Requests the watcher sent to the repository's storage from startedAt to updatedAt (`overMs`),
   * and the PUT-like ones per day extrapolated from them (null before any time has passed).
   */
  requests?: RequestRate;
  /** The same for each mirror the watcher ships to. */
  mirrorRequests?: ({ mirror: string } & RequestRate)[];
}

type RequestRate = { puts: number; gets: number; lists: number; overMs: number; putsPerDay: number | null; extrapolated: true };

export interface StatusReport {
  healthy: boolean;
  /** Why it is not healthy (each one line). */
  problems: string[];
  /** Worth knowing, not failing. */
  notes: string[];
  maxAgeMs: number | null;
  lastGoodSnapshot: SnapshotBrief | null;
  /** The newest snapshot of this machine's own (not an import, not a pre-restore one). */
  newestSnapshot: (SnapshotBrief & { suspectLoss: boolean }) | null;
  repository: {
    location: string;
    snapshots: number;
    unreadableSnapshots: number;
    objects: Record<"data" | "index" | "snapshots" | "keys" | "locks", { count: number; bytes: number }>;
    bytes: number;
  };
  watcher: WatcherStatus;
  schedules: { job: string; cron: string; next: string; lastRun: JobRun | null }[];
}


const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isNum = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;
const isTime = (v: unknown): v is string => typeof v === "string" && Number.isFinite(Date.parse(v));
const oneLine = (s: string, max = 300) => s.replace(/[\x00-\x1f\x7f]+/g, " ").slice(0, max);

/** The fields status uses, checked one by one: a wrong type anywhere means an unreadable file. */
function validState(v: unknown): { state?: WatcherState; problem?: string } {
  if (!isObj(v)) return { problem: "not a JSON object" };
  if (!Number.isSafeInteger(v.pid) || (v.pid as number) <= 0) return { problem: "no valid pid" };
  if (typeof v.host !== "string") return { problem: "no host" };
  if (!isTime(v.startedAt) || !isTime(v.updatedAt)) return { problem: "no valid startedAt/updatedAt" };
  if (!isObj(v.cpu) || !isNum(v.cpu.userMs) || !isNum(v.cpu.systemMs)) return { problem: "no valid cpu" };
  if (!isNum(v.rssBytes)) return { problem: "no valid rssBytes" };
  if (!isObj(v.snapshots) || !isNum(v.snapshots.made) || !isNum(v.snapshots.failed)) return { problem: "no valid snapshot counts" };
  if (v.lastError !== undefined && (!isObj(v.lastError) || !isTime(v.lastError.time) || typeof v.lastError.message !== "string")) return { problem: "invalid lastError" };
  const sl = v.suspectLoss;
  if (sl !== undefined && sl !== null && (!isObj(sl) || !isTime(sl.since) || typeof sl.snapshot !== "string" || !isNum(sl.filesBefore) || !isNum(sl.filesNow))) {
    return { problem: "invalid suspectLoss" };
  }
  const counts = (rq: unknown) => isObj(rq) && [rq.puts, rq.gets, rq.lists].every((n) => Number.isSafeInteger(n) && isNum(n));
  if (v.requests !== undefined && !counts(v.requests)) return { problem: "invalid requests" };
  const mr = v.mirrorRequests;
  if (mr !== undefined && (!Array.isArray(mr) || !mr.every((m) => counts(m) && typeof (m as { mirror?: unknown }).mirror === "string"))) {
    return { problem: "invalid mirrorRequests" };
  }
  return { state: v as unknown as WatcherState };
}

export async function watcherStatus(config: Config, now: Date): Promise<WatcherStatus> {
  const file = watcherFiles(config.stateDir, config.agentDir).state;
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { state: "none", file, message: "no watcher has run for this agent dir (pi-guard service install --enable keeps one running)" };
    return { state: "unreadable", file, message: `unreadable state file ${file}: ${code ?? String(err)}` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { state: "unreadable", file, message: `unreadable state file ${file}: not JSON` };
  }
  const { state: s, problem } = validState(raw);
  if (!s) return { state: "unreadable", file, message: `unreadable state file ${file}: ${problem}` };
  const base: WatcherStatus = {
    state: "running",
    file,
    message: "",
    pid: s.pid,
    host: oneLine(s.host, 255),
    startedAt: s.startedAt,
    updatedAt: s.updatedAt,
    rssBytes: s.rssBytes,
    snapshots: { made: s.snapshots.made, failed: s.snapshots.failed },
    lastError: s.lastError ? { time: s.lastError.time, message: oneLine(s.lastError.message) } : undefined,
    suspectLoss: s.suspectLoss ? { ...s.suspectLoss, snapshot: oneLine(s.suspectLoss.snapshot, 64) } : undefined,
  };
  const upMs = Math.max(0, Date.parse(s.updatedAt) - Date.parse(s.startedAt));
  const cpuMs = s.cpu.userMs + s.cpu.systemMs;
  base.cpu = { userMs: s.cpu.userMs, systemMs: s.cpu.systemMs, percent: upMs > 0 ? Math.round((cpuMs / upMs) * 1000) / 10 : 0 };
  const rate = ({ puts, gets, lists }: { puts: number; gets: number; lists: number }): RequestRate => ({
    puts,
    gets,
    lists,
    overMs: upMs,
    putsPerDay: upMs > 0 ? Math.round((puts * 86_400_000) / upMs) : null,
    extrapolated: true,
  });
  if (s.requests) base.requests = rate(s.requests);
  if (s.mirrorRequests) base.mirrorRequests = s.mirrorRequests.map((m) => ({ mirror: oneLine(m.mirror, 1024), ...rate(m) }));
  if (s.host !== hostName()) return { ...base, state: "elsewhere", message: `the state file is from host ${base.host}, not this one` };
  if (!pidAlive(s.pid)) return { ...base, state: "stopped", message: `not running (pid ${s.pid} is gone; it stopped or crashed after ${s.updatedAt})` };
  const silentMs = now.getTime() - Date.parse(s.updatedAt);
  if (silentMs > STALE_STATE_MS) {
    return { ...base, state: "stale", message: `pid ${s.pid} is alive, but its state file has not been updated since ${s.updatedAt} (a hung watcher, or the pid now belongs to another process)` };
  }
  return { ...base, state: "running", uptimeMs: Math.max(0, now.getTime() - Date.parse(s.startedAt)), message: `running, pid ${s.pid}` };
}

const brief = (r: SnapshotRecord, now: Date): SnapshotBrief => ({
  id: r.id,
  time: r.snapshot.time,
  ageMs: now.getTime() - Date.parse(r.snapshot.time),
  tags: Array.isArray(r.snapshot.tags) ? r.snapshot.tags : [],
});

const has = (r: SnapshotRecord, tag: string) => Array.isArray(r.snapshot.tags) && r.snapshot.tags.includes(tag);

async function objectCounts(repo: Repository): Promise<StatusReport["repository"]["objects"]> {
  const kinds = ["data", "index", "snapshots", "keys", "locks"] as const;
  const out = {} as StatusReport["repository"]["objects"];
  for (const kind of kinds) {
    const c = { count: 0, bytes: 0 };
    for await (const obj of repo.target.list(kind)) {
      c.count++;
      c.bytes += obj.size;
    }
    out[kind] = c;
  }
  return out;
}

export async function gatherStatus(config: Config, repo: Repository, opts: { maxAgeMs?: number; now?: Date } = {}): Promise<StatusReport> {
  const now = opts.now ?? new Date();
  const problems: string[] = [];
  const notes: string[] = [];
  const snapshots = await repo.listSnapshots();
  if (!snapshots.length && repo.unreadableSnapshots.length) throw allSnapshotsDamaged(repo.unreadableSnapshots, { location: config.repo, mirror: config.mirrors[0] });
  const own = snapshots.filter((s) => !isImport(s.snapshot) && !has(s, PRE_RESTORE_TAG));
  const good = own.filter((s) => !has(s, SUSPECT_LOSS_TAG));
  const lastGood = good.at(-1);
  const newest = own.at(-1);
  if (!lastGood) problems.push(snapshots.length ? "no good snapshot: every snapshot is an import, a pre-restore or a suspected loss" : "no snapshot yet: run pi-guard snapshot");
  else if (opts.maxAgeMs !== undefined && now.getTime() - Date.parse(lastGood.snapshot.time) > opts.maxAgeMs) {
    problems.push(`the last good snapshot (${lastGood.id.slice(0, 8)}, ${lastGood.snapshot.time}) is older than --max-age`);
  }
  const newestIsLoss = !!newest && has(newest, SUSPECT_LOSS_TAG);
  if (newest && newestIsLoss) {
    problems.push(`the newest snapshot ${newest.id.slice(0, 8)} (${newest.snapshot.time}) is a suspected loss: most files vanished; restore latest brings back the last good state`);
  }
  if (repo.unreadableSnapshots.length) notes.push(`${repo.unreadableSnapshots.length} snapshot(s) could not be read: run pi-guard check`);
  const objects = await objectCounts(repo);
  const watcher = await watcherStatus(config, now);
  if (watcher.suspectLoss && !newestIsLoss) {
    problems.push(`the watcher reports a suspected loss since ${watcher.suspectLoss.since}: ${watcher.suspectLoss.filesNow} of ${watcher.suspectLoss.filesBefore} files left (snapshot ${watcher.suspectLoss.snapshot.slice(0, 8)})`);
  }
  if (watcher.state === "stopped" || watcher.state === "stale" || watcher.state === "unreadable") notes.push(`watcher: ${watcher.message}`);
  if (watcher.lastError) notes.push(`watcher's last error (${watcher.lastError.time}): ${watcher.lastError.message}`);
  const { state: sched, problem } = await readScheduleState(config.stateDir);
  if (problem) notes.push(problem);
  const schedules = upcomingJobs(config.schedules, now).map((j) => ({ ...j, lastRun: sched.jobs[j.job]?.lastRun ?? null }));
  for (const s of schedules) if (s.lastRun && !s.lastRun.ok) notes.push(`scheduled job ${s.job} failed at ${s.lastRun.start}: ${s.lastRun.summary}`);
  return {
    healthy: problems.length === 0,
    problems,
    notes,
    maxAgeMs: opts.maxAgeMs ?? null,
    lastGoodSnapshot: lastGood ? brief(lastGood, now) : null,
    newestSnapshot: newest ? { ...brief(newest, now), suspectLoss: newestIsLoss } : null,
    repository: {
      location: config.repo,
      snapshots: snapshots.length,
      unreadableSnapshots: repo.unreadableSnapshots.length,
      objects,
      bytes: Object.values(objects).reduce((n, o) => n + o.bytes, 0) + ((await repo.target.head("config"))?.size ?? 0),
    },
    watcher,
    schedules,
  };
}
