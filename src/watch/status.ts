/**
 * `pi-guard status`: is the data safe right now? The last good snapshot and its age, the
 * watcher (from its state file), each mirror's lag, the repository's counts and size, and the
 * next scheduled jobs. Unhealthy (the CLI exits 1) for any problem src/watch/health.ts knows:
 * no good snapshot, a pending suspected loss, the last good snapshot older than the max age, a
 * watcher failing, hung or holding unsaved changes too long, a mirror behind or out of reach.
 * Everything read is treated as hostile.
 */
import type { AgentStatus } from "../agents/status.js";
import { promises as fs } from "node:fs";
import os from "node:os";
import type { Config } from "../config/config.js";
import { isImport, SUSPECT_LOSS_TAG, type AgentCleanup } from "../repo/format.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { listingDamage } from "../repo/snapshot-damage.js";
import { PRE_RESTORE_TAG } from "../restore/select.js";
import { isLocalLocation } from "../targets/location.js";
import { readScheduleState, upcomingJobs, type JobRun } from "./schedule.js";
import { STALE_STATE_MS, watcherFiles, type FullScanResult, type MirrorLag, type WatcherState } from "./state.js";
import { ageProblem, jobProblem, mirrorProblem, watcherProblems, type HealthBounds, type Problem } from "./health.js";
import { pidAlive } from "../pid.js";
import { hostName } from "../host.js";

export { parseDuration } from "./health.js";

export { STALE_STATE_MS } from "./state.js";
/** Requests per day are extrapolated only from this much running time: a minute of start-up says nothing. */
export const RATE_MIN_MS = 10 * 60 * 1000;
/** CPU over less than this is not worth showing (the watcher's start-up alone is a second of CPU). */
export const CPU_MIN_MS = 10_000;
/** How long `status` waits for a mirror's listing when it computes the lag itself. */
export const MIRROR_LIST_MS = 10_000;

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
  /**
   * `percent` is of one core, over the last minute or so (`overMs`); null when the watcher has
   * not run long enough to tell. Never more than 100 × the cores.
   */
  cpu?: { userMs: number; systemMs: number; percent: number | null; overMs: number };
  rssBytes?: number;
  snapshots?: { made: number; failed: number };
  lastError?: { time: string; message: string };
  suspectLoss?: { since: string; snapshot: string; filesBefore: number; filesNow: number };
  failingSince?: string;
  failures?: number;
  pendingSince?: string;
  mirrors?: MirrorLag[];
  fullScan?: FullScanResult;
  /**
   * Requests the watcher sent to the repository's storage from startedAt to updatedAt (`overMs`).
   * PUT-like requests per day are extrapolated only for remote storage and after RATE_MIN_MS
   * (null otherwise, with `why`).
   */
  requests?: RequestRate;
  /** The same for each mirror the watcher ships to. */
  mirrorRequests?: ({ mirror: string } & RequestRate)[];
}

export type RequestRate = { puts: number; gets: number; lists: number; overMs: number; putsPerDay: number | null; remote: boolean; why?: string; extrapolated: true };

export interface StatusReport {
  healthy: boolean;
  /** With `status --agent NAME`: that agent's part (src/agents/status.ts). */
  agent?: AgentStatus;
  /** Why it is not healthy (each one line). */
  problems: string[];
  /** The same problems with their kinds (src/watch/health.ts), as alerts compare them. */
  problemKinds: Problem[];
  /** Worth knowing, not failing. */
  notes: string[];
  maxAgeMs: number | null;
  /** The bounds this report judged by. */
  bounds: HealthBounds;
  engine: "pi-guard" | "restic";
  lastGoodSnapshot: SnapshotBrief | null;
  /** The newest snapshot of this machine's own (not an import, not a pre-restore one). */
  newestSnapshot: (SnapshotBrief & { suspectLoss: boolean }) | null;
  repository: {
    location: string;
    snapshots: number;
    unreadableSnapshots: number;
    /** null for a restic repository (restic's own objects are its business). */
    objects: Record<"data" | "index" | "snapshots" | "keys" | "locks", { count: number; bytes: number }> | null;
    bytes: number | null;
  };
  watcher: WatcherStatus;
  /** Each configured mirror: from the running watcher's state, or listed by status itself. */
  mirrors: (MirrorLag & { source: "watcher" | "listing" })[];
  schedules: { job: string; cron: string; next: string; lastRun: JobRun | null }[];
  /**
   * What the agents' own age-based cleanups removed (snapshots tagged agent-cleanup) in the last
   * CLEANUP_SHOWN_DAYS, newest first, at most CLEANUP_SHOWN: not problems, but the user is told.
   * Absent from a restic repository's report.
   */
  cleanups?: CleanupBrief[];
}

/** An agent cleanup recorded by a snapshot, for status. */
export interface CleanupBrief {
  snapshot: string;
  time: string;
  /** The snapshot that holds what was removed (forget keeps it). */
  against: string;
  agents: AgentCleanup[];
}

export const CLEANUP_SHOWN_DAYS = 30;
export const CLEANUP_SHOWN = 5;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isNum = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;
const isTime = (v: unknown): v is string => typeof v === "string" && Number.isFinite(Date.parse(v));
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const optional = (v: unknown, ok: (v: unknown) => boolean) => v === undefined || v === null || ok(v);
const oneLine = (s: string, max = 300) => s.replace(/[\x00-\x1f\x7f]+/g, " ").slice(0, max);

const validAttempt = (a: unknown) => isObj(a) && isTime(a.time) && typeof a.ok === "boolean" && optional(a.error, (e) => typeof e === "string");
const validMirrorLag = (m: unknown) =>
  isObj(m) &&
  typeof m.mirror === "string" &&
  optional(m.lastShipped, (s) => isObj(s) && typeof s.id === "string" && isTime(s.time)) &&
  isCount(m.behind) &&
  optional(m.behindSince, isTime) &&
  optional(m.lastAttempt, validAttempt) &&
  optional(m.failingSince, isTime);
const validFullScan = (f: unknown) =>
  isObj(f) && isTime(f.time) && isNum(f.durationMs) && isCount(f.files) && typeof f.snapshot === "string" && isCount(f.differences) && isCount(f.missed) && Array.isArray(f.sample) && f.sample.every((x) => typeof x === "string");

/** The fields status uses, checked one by one: a wrong type anywhere means an unreadable file. */
function validState(v: unknown): { state?: WatcherState; problem?: string } {
  if (!isObj(v)) return { problem: "not a JSON object" };
  if (!Number.isSafeInteger(v.pid) || (v.pid as number) <= 0) return { problem: "no valid pid" };
  if (typeof v.host !== "string") return { problem: "no host" };
  if (!isTime(v.startedAt) || !isTime(v.updatedAt)) return { problem: "no valid startedAt/updatedAt" };
  if (!isObj(v.cpu) || !isNum(v.cpu.userMs) || !isNum(v.cpu.systemMs)) return { problem: "no valid cpu" };
  if (!optional(v.cpuRecent, (c) => isObj(c) && isNum(c.percent) && isNum(c.overMs))) return { problem: "invalid cpuRecent" };
  if (!isNum(v.rssBytes)) return { problem: "no valid rssBytes" };
  if (!isObj(v.snapshots) || !isNum(v.snapshots.made) || !isNum(v.snapshots.failed)) return { problem: "no valid snapshot counts" };
  if (v.lastError !== undefined && (!isObj(v.lastError) || !isTime(v.lastError.time) || typeof v.lastError.message !== "string")) return { problem: "invalid lastError" };
  const sl = v.suspectLoss;
  if (sl !== undefined && sl !== null && (!isObj(sl) || !isTime(sl.since) || typeof sl.snapshot !== "string" || !isNum(sl.filesBefore) || !isNum(sl.filesNow))) {
    return { problem: "invalid suspectLoss" };
  }
  if (!optional(v.failingSince, isTime) || !optional(v.failures, isCount) || !optional(v.pendingSince, isTime)) return { problem: "invalid failingSince/failures/pendingSince" };
  if (!optional(v.mirrors, (m) => Array.isArray(m) && m.length <= 64 && m.every(validMirrorLag))) return { problem: "invalid mirrors" };
  if (!optional(v.fullScan, validFullScan)) return { problem: "invalid fullScan" };
  const counts = (rq: unknown) => isObj(rq) && [rq.puts, rq.gets, rq.lists].every((n) => Number.isSafeInteger(n) && isNum(n));
  if (v.requests !== undefined && !counts(v.requests)) return { problem: "invalid requests" };
  const mr = v.mirrorRequests;
  if (mr !== undefined && (!Array.isArray(mr) || !mr.every((m) => counts(m) && typeof (m as { mirror?: unknown }).mirror === "string"))) {
    return { problem: "invalid mirrorRequests" };
  }
  return { state: v as unknown as WatcherState };
}

const cleanLag = (m: MirrorLag): MirrorLag => ({
  mirror: oneLine(m.mirror, 1024),
  lastShipped: m.lastShipped ? { id: oneLine(m.lastShipped.id, 64), time: m.lastShipped.time } : null,
  behind: m.behind,
  behindSince: m.behindSince ?? null,
  lastAttempt: m.lastAttempt ? { time: m.lastAttempt.time, ok: m.lastAttempt.ok, ...(m.lastAttempt.error ? { error: oneLine(m.lastAttempt.error) } : {}) } : null,
  failingSince: m.failingSince ?? null,
});

/** PUTs per day, only where they cost something and only from a long enough run. */
function requestRate(counts: { puts: number; gets: number; lists: number }, location: string, overMs: number): RequestRate {
  const remote = !isLocalLocation(location);
  const why = !remote ? "local storage: requests cost nothing" : overMs < RATE_MIN_MS ? `too early to tell (the watcher has run ${Math.round(overMs / 1000)} s; it takes ${RATE_MIN_MS / 60_000} min)` : undefined;
  return {
    puts: counts.puts,
    gets: counts.gets,
    lists: counts.lists,
    overMs,
    putsPerDay: why ? null : Math.round((counts.puts * 86_400_000) / overMs),
    remote,
    ...(why ? { why } : {}),
    extrapolated: true,
  };
}

/** CPU as the watcher measured it over its last window; for older state files, over its life. Capped at the cores. */
function cpuPercent(s: WatcherState, upMs: number): { percent: number | null; overMs: number } {
  const cap = 100 * Math.max(1, os.availableParallelism());
  const clamp = (p: number) => Math.min(cap, Math.round(p * 10) / 10);
  if (s.cpuRecent) return { percent: clamp(s.cpuRecent.percent), overMs: s.cpuRecent.overMs };
  if (s.cpuRecent === null || upMs < CPU_MIN_MS) return { percent: null, overMs: upMs };
  return { percent: clamp(((s.cpu.userMs + s.cpu.systemMs) / upMs) * 100), overMs: upMs };
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
  const upMs = Math.max(0, Date.parse(s.updatedAt) - Date.parse(s.startedAt));
  const base: WatcherStatus = {
    state: "running",
    file,
    message: "",
    pid: s.pid,
    host: oneLine(s.host, 255),
    startedAt: s.startedAt,
    updatedAt: s.updatedAt,
    rssBytes: s.rssBytes,
    cpu: { userMs: s.cpu.userMs, systemMs: s.cpu.systemMs, ...cpuPercent(s, upMs) },
    snapshots: { made: s.snapshots.made, failed: s.snapshots.failed },
    lastError: s.lastError ? { time: s.lastError.time, message: oneLine(s.lastError.message) } : undefined,
    suspectLoss: s.suspectLoss ? { ...s.suspectLoss, snapshot: oneLine(s.suspectLoss.snapshot, 64) } : undefined,
    ...(s.failingSince ? { failingSince: s.failingSince, failures: s.failures ?? 0 } : {}),
    ...(s.pendingSince ? { pendingSince: s.pendingSince } : {}),
    ...(s.mirrors ? { mirrors: s.mirrors.map(cleanLag) } : {}),
    ...(s.fullScan ? { fullScan: { ...s.fullScan, snapshot: oneLine(s.fullScan.snapshot, 64), sample: s.fullScan.sample.slice(0, 10).map((x) => oneLine(x, 1024)) } } : {}),
  };
  if (s.requests) base.requests = requestRate(s.requests, config.repo, upMs);
  if (s.mirrorRequests) base.mirrorRequests = s.mirrorRequests.map((m) => ({ mirror: oneLine(m.mirror, 1024), ...requestRate(m, m.mirror, upMs) }));
  if (s.host !== hostName()) return { ...base, state: "elsewhere", message: `the state file is from host ${base.host}, not this one` };
  if (!pidAlive(s.pid)) return { ...base, state: "stopped", message: `not running (pid ${s.pid} is gone; it stopped or crashed after ${s.updatedAt})` };
  const silentMs = now.getTime() - Date.parse(s.updatedAt);
  if (silentMs > STALE_STATE_MS) {
    return { ...base, state: "stale", message: `pid ${s.pid} is alive, but its state file has not been updated since ${s.updatedAt} (a hung watcher, or the pid now belongs to another process)` };
  }
  return { ...base, state: "running", uptimeMs: Math.max(0, now.getTime() - Date.parse(s.startedAt)), message: `running, pid ${s.pid}` };
}

/** A snapshot as both engines list it. */
export interface ListedSnapshot {
  id: string;
  time: string;
  tags: string[];
}

/**
 * The last good and the newest snapshot of this machine's own (`own`: no imports, no pre-restore
 * snapshots), and the problems they show: none good, the newest a suspected loss, the last good
 * one older than the max age.
 */
export function snapshotFindings(own: ListedSnapshot[], anySnapshots: boolean, now: Date, bounds: HealthBounds): Pick<StatusReport, "lastGoodSnapshot" | "newestSnapshot"> & { problems: Problem[] } {
  const problems: Problem[] = [];
  const isLoss = (r: ListedSnapshot) => r.tags.includes(SUSPECT_LOSS_TAG);
  const lastGood = own.filter((r) => !isLoss(r)).at(-1);
  const newest = own.at(-1);
  if (!lastGood) problems.push({ kind: "no-snapshot", message: anySnapshots ? "no good snapshot: every snapshot is an import, a pre-restore or a suspected loss" : "no snapshot yet: run pi-guard snapshot" });
  else {
    const old = ageProblem(lastGood.id, Date.parse(lastGood.time), now.getTime(), bounds.maxAgeMs);
    if (old) problems.push(old);
  }
  const newestIsLoss = !!newest && isLoss(newest);
  if (newest && newestIsLoss) {
    // A snapshot records its tag, not the guard's reason: the reason may be a db's lost rows, with no file gone.
    problems.push({ kind: "suspect-loss", message: `the newest snapshot ${newest.id.slice(0, 8)} (${newest.time}) is a suspected loss: most files, every session file of an agent, or most rows of a database's sessions table vanished; restore latest brings back the last good state` });
  }
  const brief = (r: ListedSnapshot): SnapshotBrief => ({ id: r.id, time: r.time, ageMs: now.getTime() - Date.parse(r.time), tags: r.tags });
  return { lastGoodSnapshot: lastGood ? brief(lastGood) : null, newestSnapshot: newest ? { ...brief(newest), suspectLoss: newestIsLoss } : null, problems };
}

/**
 * The agent cleanups recorded in `snapshots` (oldest first) since CLEANUP_SHOWN_DAYS before `now`,
 * newest first, their fields checked and cleaned (a snapshot object is untrusted).
 */
export function recentCleanups(snapshots: SnapshotRecord[], now: Date): CleanupBrief[] {
  const since = now.getTime() - CLEANUP_SHOWN_DAYS * 24 * 60 * 60 * 1000;
  const out: CleanupBrief[] = [];
  for (let i = snapshots.length - 1; i >= 0 && out.length < CLEANUP_SHOWN; i--) {
    const { id, snapshot: s } = snapshots[i];
    const c: unknown = s.cleanup;
    if (!isObj(c) || typeof c.against !== "string" || !Array.isArray(c.agents) || !isTime(s.time) || Date.parse(s.time) < since) continue;
    const agents = c.agents.filter(isObj).flatMap((a): AgentCleanup[] =>
      typeof a.agent === "string" && isNum(a.days) && isCount(a.files) && isCount(a.sessions) && Array.isArray(a.sample)
        ? [{ agent: oneLine(a.agent, 32), days: a.days, ...(typeof a.setting === "string" ? { setting: oneLine(a.setting) } : {}), files: a.files, sessions: a.sessions, sample: a.sample.filter((x): x is string => typeof x === "string").slice(0, 20).map((x) => oneLine(x, 1024)) }]
        : [],
    );
    if (agents.length) out.push({ snapshot: id, time: s.time, against: oneLine(c.against, 64), agents });
  }
  return out;
}

/** The next scheduled jobs and their last runs; a problem for each whose last run failed. */
export async function scheduleFindings(config: Config, now: Date): Promise<{ schedules: StatusReport["schedules"]; notes: string[]; problems: Problem[] }> {
  const notes: string[] = [];
  const { state: sched, problem } = await readScheduleState(config.stateDir);
  if (problem) notes.push(problem);
  const schedules = upcomingJobs(config.schedules, now).map((j) => ({ ...j, lastRun: sched.jobs[j.job]?.lastRun ?? null }));
  const problems = schedules.flatMap((s) => jobProblem(s.job, s.lastRun ?? undefined) ?? []);
  return { schedules, notes, problems };
}

async function objectCounts(repo: Repository): Promise<NonNullable<StatusReport["repository"]["objects"]>> {
  const kinds = ["data", "index", "snapshots", "keys", "locks"] as const;
  const out = {} as NonNullable<StatusReport["repository"]["objects"]>;
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

/**
 * A mirror's lag found by listing its snapshot ids against the repository's: the newest snapshot
 * the mirror holds, and how many newer ones it lacks. Bounded by MIRROR_LIST_MS.
 */
export async function listedMirrorLag(mirror: string, snapshots: SnapshotRecord[], timeoutMs = MIRROR_LIST_MS): Promise<MirrorLag> {
  const lag: MirrorLag = { mirror, lastShipped: null, behind: 0, behindSince: null, lastAttempt: null, failingSince: null };
  const { openTarget } = await import("../targets/open.js");
  const signal = AbortSignal.timeout(timeoutMs);
  let names: string[];
  try {
    const target = openTarget({ repo: mirror });
    const listing = (async () => {
      if (target.listNames) return target.listNames("snapshots", { signal });
      const out: string[] = [];
      for await (const o of target.list("snapshots", { signal })) out.push(o.key.slice("snapshots/".length));
      return out;
    })();
    // A listing that ignores the signal still may not hold status up.
    names = await Promise.race([listing, new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }))]);
  } catch (err) {
    const message = signal.aborted ? `no answer within ${timeoutMs / 1000} s` : err instanceof Error ? err.message.split("\n")[0] : String(err);
    return { ...lag, unreachable: oneLine(message) };
  }
  const there = new Set(names);
  let newest = -1;
  snapshots.forEach((r, i) => {
    if (there.has(r.id)) newest = i;
  });
  const missing = snapshots.slice(newest + 1);
  return {
    ...lag,
    lastShipped: newest >= 0 ? { id: snapshots[newest].id, time: snapshots[newest].snapshot.time } : null,
    behind: missing.length,
    behindSince: missing[0]?.snapshot.time ?? null,
  };
}

/** The bounds a status run judges by: `--max-age` replaces the config's max age and mirror lag. */
export function statusBounds(config: Config, maxAgeMs: number | undefined): HealthBounds {
  return maxAgeMs === undefined ? { ...config.health } : { ...config.health, maxAgeMs, mirrorMaxLagMs: maxAgeMs };
}

/** The problems and notes that come from the watcher's state file, the same for both engines. */
export function watcherFindings(watcher: WatcherStatus, nowMs: number, bounds: HealthBounds, newestIsLoss: boolean): { problems: Problem[]; notes: string[] } {
  const problems: Problem[] = [];
  const notes: string[] = [];
  if (watcher.state === "running") {
    // A suspected loss already shown by the newest snapshot is not shown twice.
    for (const p of watcherProblems({ ...watcher, suspectLoss: newestIsLoss ? undefined : watcher.suspectLoss }, nowMs, bounds)) problems.push(p);
  } else if (watcher.suspectLoss && !newestIsLoss) problems.push(...watcherProblems({ suspectLoss: watcher.suspectLoss }, nowMs, bounds));
  if (watcher.state === "stale") problems.push({ kind: "watcher-hung", message: `watcher: ${watcher.message}` });
  if (watcher.state === "stopped" || watcher.state === "unreadable") notes.push(`watcher: ${watcher.message}`);
  if (watcher.lastError) notes.push(`watcher's last error (${watcher.lastError.time}): ${watcher.lastError.message}`);
  const scan = watcher.fullScan;
  if (scan?.missed) notes.push(`the watcher's full scan at ${scan.time} found ${scan.missed} change(s) no watch event had reported, and took a snapshot of them`);
  return { problems, notes };
}

export async function gatherStatus(config: Config, repo: Repository, opts: { maxAgeMs?: number; now?: Date } = {}): Promise<StatusReport> {
  const now = opts.now ?? new Date();
  const bounds = statusBounds(config, opts.maxAgeMs);
  const snapshots = await repo.listSnapshots();
  const damage = listingDamage(snapshots.length, repo.unreadableSnapshots, config);
  if (damage) throw damage;
  const listed = (r: SnapshotRecord): ListedSnapshot => ({ id: r.id, time: r.snapshot.time, tags: Array.isArray(r.snapshot.tags) ? r.snapshot.tags : [] });
  const own = snapshots.filter((r) => !isImport(r.snapshot)).map(listed).filter((r) => !r.tags.includes(PRE_RESTORE_TAG));
  const found = snapshotFindings(own, snapshots.length > 0, now, bounds);
  const problems = found.problems;
  const notes: string[] = [];
  if (repo.unreadableSnapshots.length) notes.push(`${repo.unreadableSnapshots.length} snapshot(s) could not be read: run pi-guard check`);
  const objects = await objectCounts(repo);
  const watcher = await watcherStatus(config, now);
  const fromState = watcherFindings(watcher, now.getTime(), bounds, !!found.newestSnapshot?.suspectLoss);
  problems.push(...fromState.problems.filter((p) => !p.kind.startsWith("mirror-")));
  notes.push(...fromState.notes);
  // A running watcher knows each mirror's lag from its shipments; otherwise status lists them itself.
  const fromWatcher = watcher.state === "running" ? new Map((watcher.mirrors ?? []).map((m) => [m.mirror, m])) : new Map<string, MirrorLag>();
  const mirrors = await Promise.all(
    config.mirrors.map(async (m) => {
      const w = fromWatcher.get(m);
      return w ? { ...w, source: "watcher" as const } : { ...(await listedMirrorLag(m, snapshots)), source: "listing" as const };
    }),
  );
  for (const m of mirrors) {
    const p = mirrorProblem(m, now.getTime(), bounds);
    if (p) problems.push(p);
  }
  const jobs = await scheduleFindings(config, now);
  problems.push(...jobs.problems);
  notes.push(...jobs.notes);
  return {
    healthy: problems.length === 0,
    problems: problems.map((p) => p.message),
    problemKinds: problems,
    notes,
    maxAgeMs: bounds.maxAgeMs,
    bounds,
    engine: "pi-guard",
    lastGoodSnapshot: found.lastGoodSnapshot,
    newestSnapshot: found.newestSnapshot,
    repository: {
      location: config.repo,
      snapshots: snapshots.length,
      unreadableSnapshots: repo.unreadableSnapshots.length,
      objects,
      bytes: Object.values(objects).reduce((n, o) => n + o.bytes, 0) + ((await repo.target.head("config"))?.size ?? 0),
    },
    watcher,
    mirrors,
    schedules: jobs.schedules,
    cleanups: recentCleanups(snapshots, now),
  };
}
