/**
 * `pi-guard watch`: watch the sources with chokidar and snapshot every batch of changes after a
 * debounce, through ONE open Repository, so the index stays in memory between snapshots.
 *
 * - A batch is snapshotted `debounceMs` after its last change, and at most `maxDelayMs` after its
 *   first, so a session that is written without pause is still saved every few seconds.
 * - One snapshot at a time: changes that arrive during a snapshot make the next one.
 * - A failed snapshot (locked repository, EACCES, a full disk) is logged and retried with backoff.
 * - The suspect-loss guard (snapshot/loss-guard.ts) tags a snapshot that lost most files at once.
 * - chokidar can miss a folder made inside a folder it has just seen appear (see rescan): new
 *   folders, a restore and a recovery from a suspected loss are checked against what chokidar
 *   watches; and every watch.fullScanMs a stat walk compares the roots with the last snapshot
 *   (full-scan.ts), rebuilding every watch if it finds a change no event reported.
 * - Health (health.ts) is judged on every tick; each change of it runs the alert command (alert.ts).
 */
import { guardedCopyKind, guardedKeyTable } from "../snapshot/copy-kind.js";
import { promises as fs, statSync } from "node:fs";
import path from "node:path";
import type { FSWatcher } from "chokidar";
import { insideOf, isInside, type Config } from "../config/config.js";
import { AGENT_CLEANUP_TAG, CONFIG_KEY, SUSPECT_LOSS_TAG, isImport, type CleanupRecord } from "../repo/format.js";
import { RepoError } from "../repo/errors.js";
import type { Repository } from "../repo/repository.js";
import { compileFilter } from "../snapshot/scan.js";
import { watchPath } from "../snapshot/sources.js";
import { createSnapshot, type LastFiles, type SnapshotResult } from "../snapshot/snapshotter.js";
import { PRE_RESTORE_TAG } from "../restore/select.js";
import type { WatchLog } from "./log.js";
import { ACCEPT_LOSS_COMMAND, describeCleanup, judgeSnapshot, type LossVerdict } from "../snapshot/loss-guard.js";
import type { WatcherState } from "./state.js";
import { writeWatcherState } from "./state-file.js";
import { hostName } from "../host.js";
import type { RequestCounts } from "../targets/counting.js";
import { MirrorShipper, type MirrorReport } from "./mirror-ship.js";
import { ageProblem, watcherProblems, type Problem } from "./health.js";
import { alertOnChange, readAlertMemory, type AlertMemory, type AlertOutcome } from "./alert.js";
import { compareWithSnapshot } from "./full-scan.js";
import { scheduleFindings } from "./status.js";
import { RequestListener } from "./requests.js";
import { SnapshotSocket, snapshotFingerprint, type HandOffAnswer } from "./socket.js";
import { snapshotTaken } from "../engine/native.js";
import type { EngineBackupResult } from "../engine/types.js";

/** What the watcher needs of slice E's scheduler (src/watch/schedule.ts), started and stopped with it. */
export interface WatchScheduler {
  start(): void;
  stop(): void | Promise<void>;
  nextJobs?(): WatcherState["nextJobs"];
}

export interface WatcherOptions {
  config: Config;
  repo: Repository;
  log: WatchLog;
  /** The state file (watcherFiles(...).state). */
  stateFile: string;
  /** Overrides config.watch.debounceMs, also across config reloads (the --debounce flag). */
  debounceMs?: number;
  host?: string;
  /** How long one attempt waits for a locked repository before it counts as failed and is retried. */
  lockWaitMs?: number;
  /** How often the state file is rewritten between snapshots. */
  stateIntervalMs?: number;
  /** Told about every snapshot, failure and suspected loss (the CLI's human lines on stderr). */
  onReport?: (report: WatchReport) => void;
  scheduler?: WatchScheduler;
  /** Requests sent to the repository's storage so far by this process (a CountingTarget's), for the state file. */
  requestCounts?: () => RequestCounts;
  /** The alert file (watcherFiles(...).alert); alerts need config.alerts too. */
  alertFile?: string;
  /** The pi extension's "snapshot now" file (watcherFiles(...).request; src/watch/requests.ts). */
  requestFile?: string;
  /** The socket `pi-guard snapshot` hands its snapshot to (watcherFiles(...).socket; src/watch/socket.ts). */
  socketFile?: string;
}

/** A `pi-guard snapshot` waiting on the socket for the next snapshot. */
type HandOffWaiter = (outcome: { result: EngineBackupResult } | { failed: string }) => void;

export type WatchReport =
  | { kind: "snapshot"; id: string; ms: number; files: number; bytesNew: number; suspect?: LossVerdict; cleanup?: CleanupRecord; cleanupLine?: string }
  | { kind: "error"; message: string; retryInMs: number }
  | { kind: "recovered"; id: string }
  | { kind: "accepted"; id: string }
  | { kind: "missed"; differences: number; sample: string[] }
  | { kind: "alert"; outcome: AlertOutcome; problems: Problem[] }
  | MirrorReport;

export interface StopResult {
  /** Every change seen before the stop is in a snapshot. */
  flushed: boolean;
  error?: string;
}

const MAX_BACKOFF_MS = 60_000;
const SAMPLE_PATHS = 5;
const STOP_GRACE_MS = 100;
/** How long, and how many, changed files the stop looks at again (see writtenSinceLastSnapshot). */
const RECENT_MS = 60_000;
const MAX_RECENT = 1000;
const MTIME_MARGIN_MS = 10;
const ROOT_CHECK_MS = 1000;
/** How long snapshots may be put off while files keep being deleted. */
const SETTLE_MAX_MS = 30_000;
/** Of a stop's budget, what is kept for an abandoned snapshot to clean up after itself. */
const ABANDON_MS = 400;
/** The CPU figure in the state file is over at least this long, and at most about CPU_WINDOW_MAX_MS. */
const CPU_WINDOW_MIN_MS = 10_000;
const CPU_WINDOW_MAX_MS = 60_000;
/**
 * New folders are checked once chokidar has reported nothing for this long (it reports each file
 * of a new folder as it reads it), and at most RESCAN_MAX_WAIT_MS after the first of them.
 */
const RESCAN_DELAY_MS = 300;
const RESCAN_MAX_WAIT_MS = 5000;
/** A rescan that found something looks again, this many times at most (see rescan). */
const RESCAN_PASSES = 4;
/** Entries a rescan looks at, at most: a huge new tree is left to the full scan. */
const RESCAN_MAX_ENTRIES = 20_000;
/** Names chokidar itself ignores (its `atomic` option: editor swap and backup files). */
const CHOKIDAR_IGNORES = /\..*\.(sw[px])$|~$|\.subl.*\.tmp/;
/** A restore writes each file as `.<name>.pi-guard-<8 hex>` and renames it into place (src/restore/restorer.ts). */
const RESTORE_TEMP = /^\..+\.pi-guard-[0-9a-f]{8}$/;
/** How long a difference the full scan found may wait for its (late) watch event before it counts as missed. */
const SCAN_GRACE_MS = 300;

export class Watcher {
  private config: Config;
  private readonly state: WatcherState;
  private fsWatcher: FSWatcher | undefined;
  private watchedPaths: string[] = [];
  private accept: (rel: string, isDir: boolean) => boolean;

  private pending = false;
  private firstPendingAt = 0;
  private lastChangeAt = 0;
  private lastUnlinkAt = 0;
  private batchPaths = new Set<string>();
  private batchCount = 0;
  private timer: NodeJS.Timeout | undefined;
  private stateTimer: NodeJS.Timeout | undefined;
  private rootTimer: NodeJS.Timeout | undefined;
  /** Roots that were missing at the last look (see checkRoots). */
  private readonly orphaned = new Set<string>();
  private current: Promise<void> | undefined;
  private failures = 0;
  private retryAt = 0;
  /** When the last snapshot began: a remote repository gets one batch per remoteBatchMs. */
  private lastSnapshotAt = 0;
  /**
   * Files changed lately (path → when the event came), for the stop: a write just before the
   * signal whose event has not arrived yet is found by its mtime instead.
   */
  private readonly recent = new Map<string, number>();
  /** Since when snapshots have been put off because files were still being deleted (see snapshotOnce). */
  private settlingSince = 0;
  private stopping = false;
  private lastFailure: string | undefined;
  /** When the oldest change not in any snapshot was seen (0: none); kept across failed attempts. */
  private unsavedSince = 0;
  /** The same for the changes the snapshot under way is taking. */
  private inFlightSince = 0;
  /** Folders to check against chokidar's view (see rescan), and the timer that will. */
  private readonly rescanDirs = new Set<string>();
  private rescanReason = "";
  private rescanTimer: NodeJS.Timeout | undefined;
  private rescanFirstAt = 0;
  private rescanPass = 1;
  private rewatching: Promise<void> | undefined;
  private lastFullScanAt = Date.now();
  /** CPU samples (time, cpu ms) of the last minute, for a CPU figure that means something. */
  private readonly cpuSamples: { at: number; cpuMs: number }[] = [];
  /** When the newest good (not suspect-loss) snapshot this watcher knows of was taken, and its id. */
  private lastGood: { id: string; timeMs: number } | undefined;
  private alertMemory: AlertMemory | undefined;
  /** Scheduled jobs whose last run failed (schedule.json, read on each tick). */
  private jobProblems: Problem[] = [];
  private alerting: Promise<void> = Promise.resolve();
  /** Aborted when a stop's budget runs out during a snapshot. */
  private readonly abandon = new AbortController();
  /** Ships snapshots to config.mirrors, batched by watch.remoteBatchMs. */
  private readonly shipper: MirrorShipper;
  /** Hears the pi extension's requests (requestFile). */
  private requests: RequestListener | undefined;
  /** Hears `pi-guard snapshot` (socketFile), and who waits for the next snapshot, and for the one under way. */
  private socket: SnapshotSocket | undefined;
  private handOffs: HandOffWaiter[] = [];
  /** The last snapshot's file nodes, the next one's parent unless another process wrote since (LastFiles). */
  private readonly lastFiles: LastFiles = {};

  constructor(private readonly opts: WatcherOptions) {
    this.config = opts.config;
    this.shipper = new MirrorShipper(() => this.config, opts.repo, opts.log, (r) => this.opts.onReport?.(r));
    this.accept = compileFilter(this.config.filter);
    const now = new Date().toISOString();
    this.state = {
      version: 1,
      pid: process.pid,
      host: opts.host ?? hostName(),
      agentDir: this.config.agentDir,
      repo: this.config.repo,
      startedAt: now,
      updatedAt: now,
      cpu: { userMs: 0, systemMs: 0 },
      rssBytes: 0,
      snapshots: { made: 0, failed: 0 },
      nextJobs: [],
      cpuRecent: null,
    };
  }

  get debounceMs(): number {
    return this.opts.debounceMs ?? this.config.watch.debounceMs;
  }

  /** A copy of the state as the state file has it. */
  snapshotState(): WatcherState {
    return structuredClone(this.refreshState());
  }

  async start(): Promise<void> {
    this.watchedPaths = this.config.roots.map(watchPath);
    this.opts.log.write("info", "started", {
      pid: process.pid,
      agentDir: this.config.agentDir,
      repo: this.config.repo,
      roots: this.config.roots,
      debounceMs: this.debounceMs,
      maxDelayMs: this.config.watch.maxDelayMs,
      fullScanMs: this.config.watch.fullScanMs,
    });
    if (this.opts.alertFile) this.alertMemory = await readAlertMemory(this.opts.alertFile);
    this.fsWatcher = await this.openWatcher();
    if (this.stopping) return;
    this.stateTimer = setInterval(() => void this.tick(), this.opts.stateIntervalMs ?? 5000);
    this.stateTimer.unref();
    this.checkRoots();
    this.rootTimer = setInterval(() => this.checkRoots(), ROOT_CHECK_MS);
    this.rootTimer.unref();
    this.opts.scheduler?.start();
    if (this.opts.requestFile) {
      this.requests = new RequestListener(
        this.opts.requestFile,
        (r) => {
          this.opts.log.write("info", "requested", { reason: r.reason, pid: r.pid ?? null, sessionFile: r.sessionFile ?? null });
          this.request(`pi extension: ${r.reason}`);
        },
        (message) => this.opts.log.write("warn", "warning", { where: "requests", message }),
        { agentDir: this.config.agentDir, host: this.state.host },
      );
      await this.requests.start();
    }
    if (this.opts.socketFile) {
      this.socket = new SnapshotSocket(this.opts.socketFile, (fp) => this.handOff(fp), (message) => this.opts.log.write("warn", "warning", { where: "socket", message }));
      await this.socket.start();
    }
    // Whatever changed while no watcher ran (or a loss that happened then) is taken right away.
    this.pending = true;
    this.firstPendingAt = this.lastChangeAt = 0;
    this.schedule();
  }

  /** A chokidar watcher of the roots, ready (its first walk done). */
  private async openWatcher(): Promise<FSWatcher> {
    const { watch } = await import("chokidar");
    // chokidar follows roots that do not exist yet, and a root deleted and created again.
    const fsWatcher = watch(this.watchedPaths, {
      ignoreInitial: true,
      persistent: true,
      followSymlinks: false,
      ignored: (p: string, stats?: { isDirectory(): boolean }) => this.ignored(p, stats),
    });
    fsWatcher.on("all", (event: string, p: string) => this.onChange(event, p));
    fsWatcher.on("error", (err: unknown) => this.opts.log.write("error", "error", { where: "watch", message: (err as Error)?.message ?? String(err) }));
    await new Promise<void>((resolve) => fsWatcher.once("ready", () => resolve()));
    return fsWatcher;
  }

  /**
   * Compare what is on disk below `dirs` with what chokidar watches, and watch what it lacks.
   *
   * chokidar reads a new folder, then starts watching it. A folder made inside it between the two
   * (a restore makes `sessions/` and then `sessions/--proj--/` a few milliseconds apart; under load
   * the read lands between them) is never seen: changes inside a subfolder raise no event on its
   * parent, so nothing makes chokidar read the parent again, and every append to the sessions in
   * that subfolder goes unnoticed until something else changes. A second look, once chokidar's
   * watch is in place, closes that window: what was made before it is found here, what is made
   * after it raises an event.
   *
   * chokidar may still be reading a parent then; when that read ends it forgets what it did not
   * list, the path added here included. So a rescan that found something looks again later, until
   * it finds nothing (RESCAN_PASSES at most; the full scan is the backstop).
   */
  private async rescan(dirs: string[], why: string, pass = 1): Promise<void> {
    const fsWatcher = this.fsWatcher;
    if (this.stopping || !fsWatcher) return;
    const watched = fsWatcher.getWatched();
    const missing: string[] = [];
    let budget = RESCAN_MAX_ENTRIES;
    const walk = async (dir: string): Promise<void> => {
      const known = new Set(watched[dir] ?? []);
      const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        if (--budget < 0) return;
        const abs = path.join(dir, e.name);
        if (CHOKIDAR_IGNORES.test(abs) || this.ignored(abs, { isDirectory: () => e.isDirectory() })) continue;
        // A whole folder chokidar does not know is added whole: chokidar walks it.
        if (!known.has(e.name) || (e.isDirectory() && !watched[abs])) missing.push(abs);
        else if (e.isDirectory()) await walk(abs);
      }
    };
    for (const d of dirs) await walk(d);
    if (!missing.length || this.stopping || fsWatcher !== this.fsWatcher) return;
    fsWatcher.add(missing);
    this.opts.log.write("warn", "rescanned", { why, pass, unwatched: missing.length, sample: missing.slice(0, SAMPLE_PATHS) });
    // Whatever changed in them so far raised no event: a snapshot takes it.
    this.request(`rescan: ${missing.length} path(s) chokidar did not watch`);
    if (pass < RESCAN_PASSES) this.rescanSoon(dirs, why, pass + 1);
  }

  /** Rescan `dirs` once chokidar is quiet (many folders and files appear at once in a restore). */
  private rescanSoon(dirs: string[], why: string, pass = 1): void {
    if (this.stopping) return;
    for (const d of dirs) this.rescanDirs.add(d);
    this.rescanReason ||= why;
    this.rescanPass = Math.max(this.rescanPass, pass);
    this.rescanFirstAt ||= Date.now();
    this.armRescan();
  }

  /** (Re)start the rescan's quiet period: every event of chokidar pushes it back, up to RESCAN_MAX_WAIT_MS. */
  private armRescan(): void {
    clearTimeout(this.rescanTimer);
    const wait = Math.min(RESCAN_DELAY_MS, Math.max(0, this.rescanFirstAt + RESCAN_MAX_WAIT_MS - Date.now()));
    this.rescanTimer = setTimeout(() => {
      this.rescanTimer = undefined;
      const all = [...this.rescanDirs];
      const todo = all.filter((d) => !all.some((o) => o !== d && isInside(d, o)));
      const [reason, pass] = [this.rescanReason, this.rescanPass];
      this.rescanDirs.clear();
      this.rescanReason = "";
      this.rescanPass = 1;
      this.rescanFirstAt = 0;
      void this.rescan(todo, reason, pass).catch((err: unknown) => this.opts.log.write("error", "error", { where: "watch", message: `rescan failed: ${(err as Error).message}` }));
    }, wait);
    this.rescanTimer.unref();
  }

  /**
   * Rebuild every watch from scratch, then snapshot: for when the full scan found a change no
   * event reported, so chokidar's view is wrong in a way a rescan may not see (a watch left on a
   * deleted folder). The old watcher is closed first: chokidar shares one fs.watch per path
   * within a process, and a new watcher opened beside the old one would inherit a dead watch.
   * Whatever changes while neither watches is in the snapshot that follows.
   */
  private rewatch(why: string): Promise<void> {
    if (this.stopping || !this.fsWatcher) return Promise.resolve();
    if (this.rewatching) return this.rewatching;
    const started = Date.now();
    this.rewatching = (async () => {
      await this.fsWatcher?.close();
      if (this.stopping) return;
      this.fsWatcher = await this.openWatcher();
      if (this.stopping) return void (await this.fsWatcher.close());
      this.opts.log.write("info", "rewatched", { why, ms: Date.now() - started });
      this.request(`rewatched: ${why}`);
    })()
      .catch((err: unknown) => this.opts.log.write("error", "error", { where: "watch", message: `rebuilding the watches failed: ${(err as Error).message}` }))
      .finally(() => (this.rewatching = undefined));
    return this.rewatching;
  }

  /** Apply a reloaded config (SIGHUP): debounce, limits, filter and sources. The repository stays. */
  async reload(config: Config): Promise<void> {
    const before = this.watchedPaths;
    this.config = config;
    this.accept = compileFilter(config.filter);
    this.opts.log.setLimits(config.watch.log.maxBytes, config.watch.log.keep);
    const now = config.roots.map(watchPath);
    const removed = before.filter((p) => !now.includes(p));
    const added = now.filter((p) => !before.includes(p));
    for (const p of removed) this.orphaned.delete(p);
    if (removed.length) this.fsWatcher?.unwatch(removed);
    if (added.length) this.fsWatcher?.add(added);
    this.watchedPaths = now;
    this.opts.log.write("info", "reloaded", {
      debounceMs: this.debounceMs,
      maxDelayMs: config.watch.maxDelayMs,
      roots: config.roots,
      ...(config.repo !== this.state.repo ? { note: `the repository stays ${this.state.repo} until the watcher restarts` } : {}),
    });
    if (added.length || removed.length) this.request("reload");
    else this.schedule();
  }

  /**
   * Stop watching, take the pending snapshot, and return within `budgetMs`. A snapshot still
   * running near the deadline is abandoned at its next file (staging and lock removed, nothing
   * committed). One stuck inside a huge file is left to the caller to end by exiting: every
   * repository write is atomic, so that leaves temp files and a stale lock the next writer removes.
   */
  async stop(budgetMs = 4500): Promise<StopResult> {
    const deadline = Date.now() + budgetMs;
    this.stopping = true;
    clearTimeout(this.timer);
    clearTimeout(this.rescanTimer);
    clearInterval(this.stateTimer);
    clearInterval(this.rootTimer);
    this.requests?.close();
    this.socket?.close();
    for (const w of this.handOffs.splice(0)) w({ failed: "the watcher is stopping" });
    if (this.rewatching) await withDeadline(this.rewatching, Math.min(1000, budgetMs), undefined);
    // A change written just before the signal may still be on its way from inotify through chokidar.
    await new Promise((r) => setTimeout(r, Math.min(STOP_GRACE_MS, budgetMs)));
    if (!this.pending && (await this.writtenSinceLastSnapshot())) this.pending = true;
    this.opts.log.write("info", "stopping", { pending: this.pending, snapshotRunning: !!this.current });
    await withDeadline(Promise.resolve(this.fsWatcher?.close()), Math.min(1000, budgetMs), undefined);
    await withDeadline(Promise.resolve(this.opts.scheduler?.stop()).catch(() => undefined), Math.min(500, budgetMs), undefined);
    const finish = async (): Promise<StopResult> => {
      if (this.current) await this.current;
      if (this.pending) {
        // The last chance for these changes: wait for a locked repository as long as the budget allows.
        this.current = this.snapshotOnce(Math.max(0, deadline - Date.now() - 500));
        await this.current;
      }
      return this.pending ? { flushed: false, error: this.lastFailure } : { flushed: true };
    };
    let result = await withDeadline(finish(), deadline - Date.now() - ABANDON_MS, undefined);
    if (!result) {
      // Out of time: the snapshot stops at its next file, removes its staging and its lock.
      const why = "a snapshot was still running at the stop deadline; it was abandoned (nothing of it was committed)";
      this.abandon.abort(new RepoError(why, "io"));
      await withDeadline(this.current ?? Promise.resolve(), ABANDON_MS, undefined);
      result = { flushed: false, error: why };
    }
    await this.shipper.flush(deadline - Date.now() - 100);
    this.opts.log.write(result.flushed ? "info" : "error", "stopped", { ...result });
    await this.writeState();
    // An alert command under way gets what is left of the budget; it is not waited for beyond it.
    await withDeadline(this.alerting, deadline - Date.now(), undefined);
    return result;
  }

  /**
   * chokidar does not follow a root folder that is deleted and made again when the root existed as
   * it was added, nor a missing root whose parent folder is missing too. So a root that is gone is
   * noted here, and once it is back it is watched afresh and snapshotted (files made before the
   * new watch started raise no event).
   */
  /** Inode of each root when last checked: a root deleted and made again between two checks has a new one. */
  private readonly rootInodes = new Map<string, number>();

  private checkRoots(): void {
    for (const p of this.watchedPaths) {
      const ino = statSync(p, { throwIfNoEntry: false })?.ino;
      if (ino === undefined) {
        this.orphaned.add(p);
        this.rootInodes.delete(p);
        continue;
      }
      const before = this.rootInodes.get(p);
      this.rootInodes.set(p, ino);
      if (before !== undefined && before !== ino) this.orphaned.add(p);
      if (!this.orphaned.delete(p) || !this.fsWatcher) continue;
      this.fsWatcher.unwatch(p);
      this.fsWatcher.add(p);
      this.request(`root back: ${p}`);
    }
  }

  private filterPathsOf?: { config: Config; state: (abs: string) => boolean; repo?: (abs: string) => boolean; roots: { path: string; inside: (abs: string) => boolean }[] };

  /** The folders `ignored` tests every event against, resolved once per config (a reload replaces it). */
  private filterPaths(): NonNullable<Watcher["filterPathsOf"]> {
    const c = this.config;
    if (this.filterPathsOf?.config !== c) {
      this.filterPathsOf = {
        config: c,
        state: insideOf(c.stateDir),
        repo: c.repo.startsWith("s3://") ? undefined : insideOf(c.repo),
        roots: c.roots.map((r) => ({ path: r.path, inside: insideOf(r.path) })),
      };
    }
    return this.filterPathsOf;
  }

  /** The filter a snapshot applies, so that node_modules or bin/ churn does not cause snapshots. */
  private ignored(p: string, stats?: { isDirectory(): boolean }): boolean {
    const f = this.filterPaths();
    const abs = path.resolve(p);
    if (f.state(abs) || f.repo?.(abs)) return true;
    let best: string | undefined;
    for (const r of f.roots) if (r.inside(abs) && (!best || r.path.length > best.length)) best = r.path;
    if (!best) return false;
    const rel = path.relative(best, p).split(path.sep).join("/");
    if (rel === "") return false;
    if (stats) return !this.accept(rel, stats.isDirectory());
    return !this.accept(rel, true) && !this.accept(rel, false);
  }

  private onChange(event: string, p: string): void {
    const now = Date.now();
    if (!this.pending) this.firstPendingAt = now;
    this.pending = true;
    this.unsavedSince ||= now;
    this.lastChangeAt = now;
    if (event === "unlink" || event === "unlinkDir") this.lastUnlinkAt = now;
    // A new folder may hold one chokidar did not see; a restore's temp file: check everything.
    if (event === "addDir") this.rescanSoon([p], "new folders");
    else if (event === "add" && RESTORE_TEMP.test(path.basename(p))) this.rescanSoon(this.watchedPaths, "a restore is writing files");
    else if (this.rescanTimer) this.armRescan();
    this.batchCount++;
    if (this.batchPaths.size < SAMPLE_PATHS) this.batchPaths.add(`${event} ${p}`);
    if (event === "add" || event === "change" || event === "unlink") {
      this.recent.delete(p);
      this.recent.set(p, now);
      // Oldest first (re-set above): forget what changed more than RECENT_MS ago, keep the map small.
      for (const [q, at] of this.recent) {
        if (now - at <= RECENT_MS && this.recent.size <= MAX_RECENT) break;
        this.recent.delete(q);
      }
    }
    if (!this.stopping) this.schedule();
  }

  /**
   * A file that changed lately and was written again after the last snapshot began: on a busy
   * machine its event can take longer than STOP_GRACE_MS to arrive, and the stop must not drop it.
   */
  private async writtenSinceLastSnapshot(): Promise<boolean> {
    if (!this.lastSnapshotAt) return false;
    for (const p of this.recent.keys()) {
      const st = await fs.stat(p).catch(() => undefined);
      // The kernel stamps files from a coarse clock (a few ms behind): a small margin.
      if (st && st.mtimeMs >= this.lastSnapshotAt - MTIME_MARGIN_MS) return true;
    }
    return false;
  }

  /**
   * `pi-guard snapshot` over the socket: it joins the next snapshot that begins (one under way may
   * have read the files before the caller's last write). Declined when this watcher's snapshot
   * would not be the one a direct run takes, or would keep the caller waiting (a retry backoff).
   */
  private handOff(fingerprint: string): HandOffAnswer {
    if (this.stopping) return { declined: "the watcher is stopping" };
    if (fingerprint !== snapshotFingerprint(this.config, this.state.repo, this.state.host)) return { declined: "another repository or configuration" };
    if (this.failures) return { declined: `the watcher's snapshots are failing: ${this.lastFailure ?? "unknown error"}` };
    const wait = new Promise<{ result: EngineBackupResult } | { failed: string }>((resolve) => this.handOffs.push(resolve));
    this.opts.log.write("info", "requested", { reason: "pi-guard snapshot", pid: null, sessionFile: null });
    this.request("pi-guard snapshot");
    return { wait };
  }

  /** Ask for a snapshot now (start, reload) rather than after a change. */
  private request(why: string): void {
    // Always, not only when nothing was pending: a change event arriving next must not push the
    // snapshot back by a debounce (maxDelay counts from 0, so it stays due now until it starts).
    this.firstPendingAt = 0;
    this.pending = true;
    this.unsavedSince ||= Date.now();
    this.batchPaths.add(why);
    this.lastChangeAt = 0;
    this.schedule();
  }

  private schedule(): void {
    if (this.stopping || this.current || !this.pending) return;
    // While a deletion settles, wait until no file has vanished for a debounce: maxDelay would
    // cut the loss into pieces. Appends alone do not hold it up.
    const settled = this.settlingSince ? this.lastUnlinkAt + this.debounceMs : 0;
    // Remote storage bills by request: changes gather for remoteBatchMs (a stop still flushes them).
    const batch = this.opts.repo.target.localPath || this.handOffs.length ? 0 : this.lastSnapshotAt + this.config.watch.remoteBatchMs;
    const due = Math.max(this.retryAt, settled, batch, Math.min(this.lastChangeAt + this.debounceMs, this.firstPendingAt + this.config.watch.maxDelayMs));
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopping || this.current || !this.pending) return;
      this.current = this.snapshotOnce().finally(() => {
        this.current = undefined;
        this.schedule();
      });
    }, Math.max(0, due - Date.now()));
  }

  private async snapshotOnce(lockWaitMs = this.opts.lockWaitMs ?? 2000): Promise<void> {
    const sample = [...this.batchPaths];
    const count = this.batchCount;
    const unsavedSince = (this.inFlightSince = this.unsavedSince);
    this.unsavedSince = 0;
    this.pending = false;
    this.batchPaths = new Set();
    this.batchCount = 0;
    this.lastSnapshotAt = Date.now();
    const handOffs = this.handOffs.splice(0);
    if (count > 0) this.opts.log.write("info", "change", { changes: count, sample });
    let verdict: LossVerdict | undefined;
    let cleanup: CleanupRecord | undefined;
    const started = Date.now();
    try {
      // A long-running process outlives mounts: an unmounted or moved repository must not be
      // replaced by a fresh folder of packs that no config names (a local target creates folders).
      if (!(await this.opts.repo.target.head(CONFIG_KEY))) {
        throw new RepoError(`the repository at ${this.opts.repo.target.location} is gone (no config file there); will retry`, "not-found");
      }
      const result = await createSnapshot(this.opts.repo, {
        roots: this.config.roots,
        rootAgents: this.config.rootAgents,
        filter: this.config.filter,
        fullReadIntervalMs: this.config.snapshot.fullReadIntervalMs,
        copyKind: guardedCopyKind(this.config),
        keyTable: guardedKeyTable(this.config),
        host: this.state.host,
        lockWaitMs,
        signal: this.abandon.signal,
        tagsAtCommit: ({ files, baseline, parentFiles, newFiles }) => {
          const parent = parentFiles();
          ({ loss: verdict, cleanup } = judgeSnapshot(parent, files, this.config, baseline?.id, { newFiles: newFiles() }));
          // A deletion still under way, below the threshold so far: committing now would make the
          // half-deleted state the last whole one, and the rest of the loss would be judged
          // against it. Put the snapshot off until the deletion is quiet (at most SETTLE_MAX_MS).
          if (!verdict && !this.stopping && parent.some((f) => !f.found) && Date.now() - this.lastUnlinkAt < this.debounceMs) {
            const now = Date.now();
            if (!this.settlingSince || now - this.settlingSince < SETTLE_MAX_MS) {
              this.settlingSince ||= now;
              throw new DeletionUnsettled();
            }
          }
          return [...(verdict ? [SUSPECT_LOSS_TAG] : []), ...(cleanup ? [AGENT_CLEANUP_TAG] : [])];
        },
        cleanupAtCommit: () => cleanup,
        lastFiles: this.lastFiles,
      });
      // The snapshot is durable (createSnapshot returns once its object is saved and the lock is
      // gone): whoever waits on the socket hears it before the bookkeeping below.
      if (handOffs.length) {
        const answer = { result: handOffResult(result, verdict) };
        for (const w of handOffs) w(answer);
      }
      this.settlingSince = 0;
      const ms = Date.now() - started;
      const s = result.snapshot.summary;
      this.failures = 0;
      this.retryAt = 0;
      this.lastFailure = undefined;
      delete this.state.failingSince;
      delete this.state.failures;
      this.state.snapshots.made++;
      this.state.lastSnapshot = { id: result.id, time: result.snapshot.time, began: new Date(started).toISOString(), durationMs: ms, files: s.files };
      this.opts.log.write("info", "snapshot", { id: result.id, ms, files: s.files, bytesNew: s.bytesNew, bytesStored: s.bytesStored, tags: result.snapshot.tags, parent: result.snapshot.parent ?? null });
      this.opts.onReport?.({ kind: "snapshot", id: result.id, ms, files: s.files, bytesNew: s.bytesNew, suspect: verdict, ...(cleanup ? { cleanup, cleanupLine: describeCleanup(cleanup, result.id) } : {}) });
      this.shipper.noteSnapshot(result.snapshot.time);
      if (cleanup) this.logCleanup(result.id, cleanup);
      if (verdict) this.markSuspect(result.id, verdict);
      else {
        this.lastGood = { id: result.id, timeMs: Date.parse(result.snapshot.time) };
        if (this.state.suspectLoss) {
          this.opts.log.write("info", "recovered", { snapshot: result.id, files: s.files, since: this.state.suspectLoss.since });
          this.opts.onReport?.({ kind: "recovered", id: result.id });
          delete this.state.suspectLoss;
          // The files came back, most likely by a restore that made their folders again.
          this.rescanSoon(this.watchedPaths, "the files of a suspected loss are back");
        }
      }
    } catch (err) {
      this.unsavedSince = earliest(unsavedSince, this.unsavedSince);
      if (err instanceof DeletionUnsettled) {
        this.inFlightSince = 0;
        this.handOffs.unshift(...handOffs);
        this.opts.log.write("info", "deferred", { reason: "files are still being deleted; waiting until it is quiet" });
        if (!this.pending) this.firstPendingAt = Date.now();
        this.pending = true;
        this.batchCount += count;
        return;
      }
      const message = (err as Error)?.message ?? String(err);
      for (const w of handOffs) w({ failed: message });
      this.failures++;
      this.state.failures = this.failures;
      this.state.failingSince ??= new Date().toISOString();
      const retryInMs = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (this.failures - 1));
      this.retryAt = Date.now() + retryInMs;
      this.lastFailure = message;
      this.state.snapshots.failed++;
      this.state.lastError = { time: new Date().toISOString(), message };
      // The changes are still unsaved: keep them pending for the retry.
      if (!this.pending) this.firstPendingAt = Date.now();
      this.pending = true;
      this.batchCount += count;
      this.opts.log.write("error", "error", { where: "snapshot", message, code: (err as { kind?: string; code?: string }).kind ?? (err as NodeJS.ErrnoException).code, failures: this.failures, retryInMs });
      this.opts.onReport?.({ kind: "error", message, retryInMs });
    }
    this.inFlightSince = 0;
    // The answer goes out in a promise reaction: let it run before health and the state file.
    if (handOffs.length) await new Promise((r) => setImmediate(r));
    this.judgeHealth();
    await this.writeState();
  }

  /** An agent's own age-based cleanup: not a loss, but the log names what it removed and where it stays. */
  private logCleanup(id: string, c: CleanupRecord): void {
    this.opts.log.write("warn", "agent-cleanup", {
      snapshot: id,
      against: c.against,
      agents: c.agents,
      message: describeCleanup(c, id),
    });
  }

  private markSuspect(id: string, v: LossVerdict): void {
    const first = !this.state.suspectLoss;
    this.state.suspectLoss = first
      ? { since: new Date().toISOString(), snapshot: id, filesBefore: v.filesBefore, filesNow: v.filesNow }
      : { ...this.state.suspectLoss!, filesNow: v.filesNow };
    this.opts.log.write("error", "suspect-loss", {
      snapshot: id,
      reason: v.reason,
      ...(v.rows ? { rows: v.rows } : {}),
      filesBefore: v.filesBefore,
      filesNow: v.filesNow,
      lost: v.lost,
      sample: v.sample,
      against: v.against ?? null,
      first,
      advice: `\`pi-guard restore latest\` restores the last whole state; \`${ACCEPT_LOSS_COMMAND}\` accepts the deletion`,
    });
  }

  /** Every few seconds: whether the user accepted a suspected loss, a due full scan, health, the state file. */
  private async tick(): Promise<void> {
    this.requests?.poll();
    if (this.state.suspectLoss && !this.current) await this.checkAccepted().catch(() => undefined);
    this.maybeFullScan();
    this.jobProblems = await scheduleFindings(this.config, new Date()).then((f) => f.problems, () => this.jobProblems);
    this.judgeHealth();
    await this.writeState();
  }

  /**
   * Start the full comparison when it is due and nothing else runs: a snapshot under way or due
   * would compare a tree that is changing, and takes the changes anyway.
   */
  private maybeFullScan(): void {
    const every = this.config.watch.fullScanMs;
    if (!every || this.stopping || this.current || this.pending || this.rewatching || Date.now() - this.lastFullScanAt < every) return;
    const last = this.state.lastSnapshot;
    if (!last) return;
    this.lastFullScanAt = Date.now();
    this.current = this.fullScan(last.id).finally(() => {
      this.current = undefined;
      this.schedule();
    });
  }

  private async fullScan(snapshotId: string): Promise<void> {
    const started = Date.now();
    const since = this.lastSnapshotAt;
    const found = await compareWithSnapshot(this.opts.repo, snapshotId, this.config.roots, this.config.filter).catch((err: unknown) => {
      this.opts.log.write("error", "error", { where: "full-scan", message: (err as Error).message });
      return undefined;
    });
    if (!found) return;
    // A change made just now has its event on the way: give it a moment before calling it missed.
    if (found.count) await new Promise((r) => setTimeout(r, SCAN_GRACE_MS));
    const reported = (abs: string) => (this.recent.get(abs) ?? 0) >= since - MTIME_MARGIN_MS;
    const missed = found.differences.filter((d) => !reported(d.abs));
    // Past the sample limit nothing is known about the events: count those as missed too.
    const missedCount = missed.length + (found.count - found.differences.length);
    const sample = (missed.length ? missed : found.differences).slice(0, SAMPLE_PATHS).map((d) => `${d.what} ${d.root}:${d.path}`);
    this.state.fullScan = { time: new Date(started).toISOString(), durationMs: Date.now() - started, files: found.files, snapshot: snapshotId, differences: found.count, missed: missedCount, sample };
    this.opts.log.write(missedCount ? "warn" : "info", "full-scan", { ...this.state.fullScan });
    if (!missedCount) return;
    this.opts.onReport?.({ kind: "missed", differences: missedCount, sample });
    // The watches evidently do not cover everything: rebuild them, and take what they missed.
    this.request(`full scan: ${missedCount} change(s) no event reported`);
    void this.rewatch("the full scan found changes no event reported");
  }

  /** The problems now (health.ts), and an alert if they are not the ones last alerted. */
  private judgeHealth(): void {
    const now = Date.now();
    const problems = watcherProblems(this.refreshState(), now, this.config.health);
    const old = this.lastGood && ageProblem(this.lastGood.id, this.lastGood.timeMs, now, this.config.health.maxAgeMs);
    if (old) problems.push(old);
    problems.push(...this.jobProblems);
    const healthy = problems.length === 0;
    if (!this.state.health || this.state.health.healthy !== healthy) this.state.health = { healthy, since: new Date(now).toISOString(), problems };
    else this.state.health.problems = problems;
    const alerts = this.config.alerts;
    const file = this.opts.alertFile;
    if (!alerts || !file) return;
    // One alert at a time, in order; each compares with what the previous one remembered.
    this.alerting = this.alerting.then(async () => {
      const outcome = await alertOnChange(alerts, file, { time: new Date(now).toISOString(), source: "watch", host: this.state.host, agentDir: this.config.agentDir, repo: this.state.repo, problems }, this.alertMemory ?? { healthy: true, keys: [], time: "", source: "watch", event: "healthy", ok: true }).catch((err: unknown) => {
        this.opts.log.write("error", "error", { where: "alert", message: `the alert file could not be written: ${(err as Error).message}` });
        return undefined;
      });
      if (!outcome) return;
      this.alertMemory = await readAlertMemory(file);
      this.opts.log.write(outcome.run.ok ? "info" : "error", "alert", { alert: outcome.event, problems: problems.map((p) => p.kind), ok: outcome.run.ok, error: outcome.run.error ?? null, ms: outcome.run.ms, output: outcome.run.output || null });
      this.opts.onReport?.({ kind: "alert", outcome, problems });
    }).catch((err: unknown) => this.opts.log.write("error", "error", { where: "alert", message: (err as Error).message }));
  }

  /**
   * `pi-guard snapshot --accept-loss` after a suspected loss is the user saying the deletion was
   * meant: it is newer than the loss and not tagged, so it becomes the last whole state. (A plain
   * snapshot of the same state is tagged suspect-loss too, and accepts nothing.)
   */
  private async checkAccepted(): Promise<void> {
    const loss = this.state.suspectLoss;
    if (!loss) return;
    const all = await this.opts.repo.listSnapshots();
    const sameRoots = JSON.stringify(this.config.roots);
    const own = all.filter((r) => r.snapshot.host === this.state.host && JSON.stringify(r.snapshot.roots) === sameRoots && !isImport(r.snapshot));
    // A restore's undo snapshot records the loss it is about to repair: that is no acceptance.
    const newest = own.filter((r) => !r.snapshot.tags?.includes(PRE_RESTORE_TAG)).at(-1);
    if (!newest || newest.snapshot.tags?.includes(SUSPECT_LOSS_TAG) || Date.parse(newest.snapshot.time) <= Date.parse(loss.since)) return;
    if (!this.state.suspectLoss) return;
    delete this.state.suspectLoss;
    this.lastGood = { id: newest.id, timeMs: Date.parse(newest.snapshot.time) };
    this.opts.log.write("warn", "accepted", { snapshot: newest.id, files: newest.snapshot.summary?.files, since: loss.since });
    this.opts.onReport?.({ kind: "accepted", id: newest.id });
  }

  private refreshState(): WatcherState {
    const cpu = process.cpuUsage();
    const now = Date.now();
    this.state.updatedAt = new Date(now).toISOString();
    this.state.cpu = { userMs: Math.round(cpu.user / 1000), systemMs: Math.round(cpu.system / 1000) };
    this.state.cpuRecent = this.cpuWindow(now, this.state.cpu.userMs + this.state.cpu.systemMs);
    const unsaved = earliest(this.unsavedSince, this.inFlightSince);
    if (unsaved) this.state.pendingSince = new Date(unsaved).toISOString();
    else delete this.state.pendingSince;
    if (this.config.mirrors.length) this.state.mirrors = this.shipper.lags();
    else delete this.state.mirrors;
    this.state.rssBytes = process.memoryUsage.rss();
    this.state.nextJobs = this.opts.scheduler?.nextJobs?.() ?? [];
    const counts = this.opts.requestCounts?.();
    if (counts) this.state.requests = { puts: counts.puts, gets: counts.gets, lists: counts.lists };
    const mirrors = this.shipper.requestCounts();
    if (mirrors.length) this.state.mirrorRequests = mirrors;
    return this.state;
  }

  /**
   * CPU over the last minute or so, as a percentage of one core: the process's whole CPU time
   * over its uptime would count node's start-up against the first seconds of watching.
   */
  private cpuWindow(now: number, cpuMs: number): WatcherState["cpuRecent"] {
    const samples = this.cpuSamples;
    samples.push({ at: now, cpuMs });
    while (samples.length > 2 && now - samples[1].at >= CPU_WINDOW_MAX_MS) samples.shift();
    const first = samples[0];
    const overMs = now - first.at;
    if (overMs < CPU_WINDOW_MIN_MS) return this.state.cpuRecent ?? null;
    return { percent: Math.round(((cpuMs - first.cpuMs) / overMs) * 1000) / 10, overMs };
  }

  private writing: Promise<void> | undefined;

  async writeState(): Promise<void> {
    // One write at a time; a tick that finds one under way waits for it and writes again.
    while (this.writing) await this.writing;
    this.writing = writeWatcherState(this.opts.stateFile, this.refreshState())
      .catch((err: unknown) => this.opts.log.write("error", "error", { where: "state-file", message: (err as Error).message }))
      .finally(() => (this.writing = undefined));
    await this.writing;
  }
}

/** Thrown before commit while a deletion is still under way; the snapshot is taken again later. */
class DeletionUnsettled extends Error {
  constructor() {
    super("files are still being deleted");
  }
}

/** The earlier of two times, 0 standing for none. */
const earliest = (a: number, b: number): number => (a && b ? Math.min(a, b) : a || b);

/** `work`, or `fallback` once `ms` have passed; the timer keeps the process alive until then. */
async function withDeadline<T>(work: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((r) => (timer = setTimeout(() => r(fallback), Math.max(0, ms))));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The watcher's snapshot as `pi-guard snapshot` reports one (the shape engine/native.ts backup
 * gives; no mirrors: a config with mirrors is not handed off, the watcher ships in batches).
 */
function handOffResult(r: SnapshotResult, loss: LossVerdict | undefined): EngineBackupResult {
  return { engine: "native", lossAccepted: false, mirrors: [], snapshot: snapshotTaken(r.id, r.snapshot, loss) };
}
