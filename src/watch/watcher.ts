/**
 * `pi-guard watch`: watch the sources with chokidar and snapshot every batch of changes after a
 * debounce, through ONE open Repository, so the index stays in memory between snapshots.
 *
 * - A batch is snapshotted `debounceMs` after its last change, and at most `maxDelayMs` after its
 *   first, so a session that is written without pause is still saved every few seconds.
 * - One snapshot at a time: changes that arrive during a snapshot make the next one.
 * - A failed snapshot (locked repository, EACCES, a full disk) is logged and retried with backoff.
 * - The suspect-loss guard (snapshot/loss-guard.ts) tags a snapshot that lost most files at once.
 */
import { promises as fs, statSync } from "node:fs";
import path from "node:path";
import type { FSWatcher } from "chokidar";
import { isInside, type Config } from "../config/config.js";
import { CONFIG_KEY, SUSPECT_LOSS_TAG, isImport } from "../repo/format.js";
import { RepoError } from "../repo/errors.js";
import type { Repository } from "../repo/repository.js";
import { compileFilter } from "../snapshot/scan.js";
import { createSnapshot } from "../snapshot/snapshotter.js";
import { PRE_RESTORE_TAG } from "../restore/select.js";
import type { WatchLog } from "./log.js";
import { ACCEPT_LOSS_COMMAND, judgeLoss, sessionFileTest, type LossVerdict } from "../snapshot/loss-guard.js";
import type { WatcherState } from "./state.js";
import { writeWatcherState } from "./state-file.js";
import { hostName } from "../host.js";
import type { RequestCounts } from "../targets/counting.js";
import { MirrorShipper } from "./mirror-ship.js";

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
}

export type WatchReport =
  | { kind: "snapshot"; id: string; ms: number; files: number; bytesNew: number; suspect?: LossVerdict }
  | { kind: "error"; message: string; retryInMs: number }
  | { kind: "recovered"; id: string }
  | { kind: "accepted"; id: string };

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
  /** Aborted when a stop's budget runs out during a snapshot. */
  private readonly abandon = new AbortController();
  /** Ships snapshots to config.mirrors, batched by watch.remoteBatchMs. */
  private readonly shipper: MirrorShipper;

  constructor(private readonly opts: WatcherOptions) {
    this.config = opts.config;
    this.shipper = new MirrorShipper(() => this.config, opts.repo, opts.log, (message, retryInMs) => this.opts.onReport?.({ kind: "error", message, retryInMs }));
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
    const { watch } = await import("chokidar");
    this.watchedPaths = this.config.roots.map((r) => r.path);
    this.opts.log.write("info", "started", {
      pid: process.pid,
      agentDir: this.config.agentDir,
      repo: this.config.repo,
      roots: this.config.roots,
      debounceMs: this.debounceMs,
      maxDelayMs: this.config.watch.maxDelayMs,
    });
    // chokidar follows roots that do not exist yet, and a root deleted and created again.
    const fsWatcher = watch(this.watchedPaths, {
      ignoreInitial: true,
      persistent: true,
      followSymlinks: false,
      ignored: (p: string, stats?: { isDirectory(): boolean }) => this.ignored(p, stats),
    });
    this.fsWatcher = fsWatcher;
    fsWatcher.on("all", (event: string, p: string) => this.onChange(event, p));
    fsWatcher.on("error", (err: unknown) => this.opts.log.write("error", "error", { where: "watch", message: (err as Error)?.message ?? String(err) }));
    await new Promise<void>((resolve) => fsWatcher.once("ready", () => resolve()));
    if (this.stopping) return;
    this.stateTimer = setInterval(() => void this.tick(), this.opts.stateIntervalMs ?? 5000);
    this.stateTimer.unref();
    this.checkRoots();
    this.rootTimer = setInterval(() => this.checkRoots(), ROOT_CHECK_MS);
    this.rootTimer.unref();
    this.opts.scheduler?.start();
    // Whatever changed while no watcher ran (or a loss that happened then) is taken right away.
    this.pending = true;
    this.firstPendingAt = this.lastChangeAt = 0;
    this.schedule();
  }

  /** Apply a reloaded config (SIGHUP): debounce, limits, filter and sources. The repository stays. */
  async reload(config: Config): Promise<void> {
    const before = this.watchedPaths;
    this.config = config;
    this.accept = compileFilter(config.filter);
    this.opts.log.setLimits(config.watch.log.maxBytes, config.watch.log.keep);
    const now = config.roots.map((r) => r.path);
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
    clearInterval(this.stateTimer);
    clearInterval(this.rootTimer);
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

  /** The filter a snapshot applies, so that node_modules or bin/ churn does not cause snapshots. */
  private ignored(p: string, stats?: { isDirectory(): boolean }): boolean {
    if (isInside(p, this.config.stateDir) || (!this.config.repo.startsWith("s3://") && isInside(p, this.config.repo))) return true;
    let best: string | undefined;
    for (const r of this.config.roots) if (isInside(p, r.path) && (!best || r.path.length > best.length)) best = r.path;
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
    this.lastChangeAt = now;
    if (event === "unlink" || event === "unlinkDir") this.lastUnlinkAt = now;
    this.batchCount++;
    if (this.batchPaths.size < SAMPLE_PATHS) this.batchPaths.add(`${event} ${p}`);
    if (event === "add" || event === "change") {
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

  /** Ask for a snapshot now (start, reload) rather than after a change. */
  private request(why: string): void {
    if (!this.pending) this.firstPendingAt = 0;
    this.pending = true;
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
    const batch = this.opts.repo.target.localPath ? 0 : this.lastSnapshotAt + this.config.watch.remoteBatchMs;
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
    this.pending = false;
    this.batchPaths = new Set();
    this.batchCount = 0;
    this.lastSnapshotAt = Date.now();
    if (count > 0) this.opts.log.write("info", "change", { changes: count, sample });
    let verdict: LossVerdict | undefined;
    const isSession = sessionFileTest(this.config);
    const started = Date.now();
    try {
      // A long-running process outlives mounts: an unmounted or moved repository must not be
      // replaced by a fresh folder of packs that no config names (a local target creates folders).
      if (!(await this.opts.repo.target.head(CONFIG_KEY))) {
        throw new RepoError(`the repository at ${this.opts.repo.target.location} is gone (no config file there); will retry`, "not-found");
      }
      const result = await createSnapshot(this.opts.repo, {
        roots: this.config.roots,
        filter: this.config.filter,
        host: this.state.host,
        lockWaitMs,
        signal: this.abandon.signal,
        tagsAtCommit: ({ files, parentFiles }) => {
          const parent = parentFiles();
          verdict = judgeLoss(parent, files, this.config.watch.suspectLoss, isSession);
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
          return verdict ? [SUSPECT_LOSS_TAG] : [];
        },
      });
      this.settlingSince = 0;
      const ms = Date.now() - started;
      const s = result.snapshot.summary;
      this.failures = 0;
      this.retryAt = 0;
      this.lastFailure = undefined;
      this.state.snapshots.made++;
      this.state.lastSnapshot = { id: result.id, time: result.snapshot.time, durationMs: ms, files: s.files };
      this.opts.log.write("info", "snapshot", { id: result.id, ms, files: s.files, bytesNew: s.bytesNew, bytesStored: s.bytesStored, tags: result.snapshot.tags, parent: result.snapshot.parent ?? null });
      this.opts.onReport?.({ kind: "snapshot", id: result.id, ms, files: s.files, bytesNew: s.bytesNew, suspect: verdict });
      this.shipper.noteSnapshot();
      if (verdict) this.markSuspect(result.id, verdict);
      else {
        if (this.state.suspectLoss) {
          this.opts.log.write("info", "recovered", { snapshot: result.id, files: s.files, since: this.state.suspectLoss.since });
          this.opts.onReport?.({ kind: "recovered", id: result.id });
          delete this.state.suspectLoss;
        }
      }
    } catch (err) {
      if (err instanceof DeletionUnsettled) {
        this.opts.log.write("info", "deferred", { reason: "files are still being deleted; waiting until it is quiet" });
        if (!this.pending) this.firstPendingAt = Date.now();
        this.pending = true;
        this.batchCount += count;
        return;
      }
      const message = (err as Error)?.message ?? String(err);
      this.failures++;
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
    await this.writeState();
  }

  private markSuspect(id: string, v: LossVerdict): void {
    const first = !this.state.suspectLoss;
    this.state.suspectLoss = first
      ? { since: new Date().toISOString(), snapshot: id, filesBefore: v.filesBefore, filesNow: v.filesNow }
      : { ...this.state.suspectLoss!, filesNow: v.filesNow };
    this.opts.log.write("error", "suspect-loss", {
      snapshot: id,
      reason: v.reason,
      filesBefore: v.filesBefore,
      filesNow: v.filesNow,
      lost: v.lost,
      sample: v.sample,
      first,
      advice: `\`pi-guard restore latest\` restores the last whole state; \`${ACCEPT_LOSS_COMMAND}\` accepts the deletion`,
    });
  }

  /** Every few seconds: the state file, and whether the user accepted a suspected loss. */
  private async tick(): Promise<void> {
    if (this.state.suspectLoss && !this.current) await this.checkAccepted().catch(() => undefined);
    await this.writeState();
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
    this.opts.log.write("warn", "accepted", { snapshot: newest.id, files: newest.snapshot.summary?.files, since: loss.since });
    this.opts.onReport?.({ kind: "accepted", id: newest.id });
  }

  private refreshState(): WatcherState {
    const cpu = process.cpuUsage();
    this.state.updatedAt = new Date().toISOString();
    this.state.cpu = { userMs: Math.round(cpu.user / 1000), systemMs: Math.round(cpu.system / 1000) };
    this.state.rssBytes = process.memoryUsage.rss();
    this.state.nextJobs = this.opts.scheduler?.nextJobs?.() ?? [];
    const counts = this.opts.requestCounts?.();
    if (counts) this.state.requests = { puts: counts.puts, gets: counts.gets, lists: counts.lists };
    const mirrors = this.shipper.requestCounts();
    if (mirrors.length) this.state.mirrorRequests = mirrors;
    return this.state;
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
