import os from "node:os";
import { randomBytes } from "node:crypto";
import { RepoError } from "./errors.js";
import { AAD, lockKey } from "./format.js";
import type { Repository } from "./repository.js";
import { pidAlive } from "../pid.js";
import { ObjectNotFound } from "../targets/target.js";

/**
 * Repository locks, in the restic style: each process writes its own lock object under locks/,
 * then lists the others. Three modes (docs/FORMAT.md §9):
 * - shared: readers (restore, archive, check, sessions commands that open the repository);
 * - append: writers that only add objects (snapshot, import, sessions delete, which snapshots);
 *   several may run at once, beside readers, since added objects never change what others read;
 * - exclusive: whatever deletes (forget, prune, repair index); conflicts with every other lock.
 * Works the same on a folder and on S3.
 *
 * A lock is stale when its process is gone (same host, pid not alive) or when it has not been
 * refreshed for STALE_MS (another host that crashed); stale locks are removed by whoever finds them.
 * The age is measured on the storage's clock alone (the lock object's last-modified time against
 * that of a lock just written by the observer), never against the `time` the holder wrote: hosts'
 * clocks need not agree. A holder, on its own monotonic clock, gives up a lock it has not managed
 * to rewrite for half of STALE_MS, long before anyone else may take it for stale.
 */
export type LockMode = "shared" | "append" | "exclusive";

export interface LockInfo {
  host: string;
  pid: number;
  user: string;
  /** Kept for readers older than `mode`: true only for the exclusive mode. */
  exclusive: boolean;
  mode?: LockMode;
  time: string;
  command: string;
}

/**
 * The mode a lock object claims. Locks written before `mode` existed only say `exclusive`; a mode
 * this version does not know is taken as exclusive, the safe reading.
 */
export function lockModeOf(info: LockInfo): LockMode {
  if (info.mode === undefined) return info.exclusive === true ? "exclusive" : "shared";
  return info.mode === "shared" || info.mode === "append" ? info.mode : "exclusive";
}

/** Only an exclusive lock conflicts: readers and appenders add nothing another relies on vanishing. */
export function modesConflict(a: LockMode, b: LockMode): boolean {
  return a === "exclusive" || b === "exclusive";
}

export interface LockOptions {
  /** The lock's mode; without it, `exclusive` picks exclusive or shared (the older interface). */
  mode?: LockMode;
  exclusive?: boolean;
  command: string;
  waitMs?: number;
}

const modeOf = (opts: LockOptions): LockMode => opts.mode ?? (opts.exclusive ? "exclusive" : "shared");

export const STALE_MS = 30 * 60 * 1000;
const REFRESH_MS = 5 * 60 * 1000;

/** When a lock not rewritten counts as stale. PI_GUARD_TEST_LOCK_STALE_MS shortens it, for tests only. */
export function lockStaleMs(env: NodeJS.ProcessEnv = process.env): number {
  const ms = Number(env.PI_GUARD_TEST_LOCK_STALE_MS);
  return Number.isFinite(ms) && ms > 0 ? ms : STALE_MS;
}

/** How often a held lock is rewritten. PI_GUARD_LOCK_REFRESH_MS overrides it, for tests. */
export function lockRefreshMs(env: NodeJS.ProcessEnv = process.env): number {
  const ms = Number(env.PI_GUARD_LOCK_REFRESH_MS);
  return Number.isFinite(ms) && ms > 0 ? ms : Math.min(REFRESH_MS, lockStaleMs(env) / 6);
}

export interface Lock {
  id: string;
  /**
   * Aborted, with a RepoError as its reason, once the lock is lost: a refresh failed, or the lock
   * object was gone (another process took it for stale and removed it). Whoever holds the lock must
   * stop then, as restic does: someone else may be deleting what it reads or writes.
   */
  readonly signal: AbortSignal;
  /** Throws the reason the lock was lost, if it was. */
  assertHeld(): void;
  /**
   * Check now, not at the next refresh, that the lock object still exists (aborting `signal` if
   * not). Appenders call it right before they make their work visible, so one whose lock was
   * removed as stale (and that a prune may have raced) does not commit.
   */
  confirm(): Promise<void>;
  release(): Promise<void>;
}


/**
 * `ageMs` is the lock's age by the storage's clock (see storageAges); undefined when the storage
 * gives no times, and then only the holder's own `time` is left, which needs agreeing clocks.
 */
export function isStale(info: LockInfo, ageMs: number | undefined, staleMs = lockStaleMs()): boolean {
  if (info.host === os.hostname() && !pidAlive(info.pid)) return true;
  if (ageMs !== undefined) return ageMs > staleMs;
  return Date.now() - Date.parse(info.time) > staleMs;
}

interface ListedLock {
  id: string;
  info: LockInfo | undefined;
  /** Last written, by the storage's clock. */
  modified?: number;
}

/**
 * Each lock's age on the storage's clock: `now` is the last-modified time of a lock the observer
 * wrote just before listing, so it is at most the storage's real now (an age is never overstated).
 */
function storageAge(lock: ListedLock, now: number | undefined): number | undefined {
  return now !== undefined && lock.modified !== undefined ? now - lock.modified : undefined;
}

const validTime = (t: number | undefined) => (t !== undefined && Number.isFinite(t) ? t : undefined);

/** Every lock in the repository; `own` (this process's, just written) is not read back. */
async function readLocks(repo: Repository, own?: { id: string; info: LockInfo }): Promise<ListedLock[]> {
  const out: ListedLock[] = [];
  for await (const obj of repo.target.list("locks")) {
    const id = obj.key.slice("locks/".length);
    if (id === own?.id) {
      out.push({ id, info: own.info, modified: validTime(obj.modified) });
      continue;
    }
    try {
      const info = JSON.parse(repo.unseal(await repo.target.get(obj.key), "lock", AAD.lock(id)).toString("utf8")) as LockInfo;
      // Whatever does not look like a lock is taken as held, exclusively (see lockModeOf).
      const shaped = typeof info === "object" && info !== null && typeof info.host === "string" && Number.isInteger(info.pid) && typeof info.time === "string";
      out.push({ id, info: shaped ? info : undefined, modified: validTime(obj.modified) });
    } catch (err) {
      // Released between the listing and the read: it holds nothing any more. (Taking it as held
      // made a fast snapshot on another host fail a concurrent one that had --lock-wait 0.)
      if (err instanceof ObjectNotFound) continue;
      // Unreadable: a half-written lock cannot exist, since puts are atomic, so it is from another
      // key or damaged; treat it as held.
      out.push({ id, info: undefined, modified: validTime(obj.modified) });
    }
  }
  return out;
}

export async function acquireLock(repo: Repository, opts: LockOptions): Promise<Lock> {
  const mode = modeOf(opts);
  const id = randomBytes(16).toString("hex");
  const deadline = Date.now() + (opts.waitMs ?? 0);
  let written: LockInfo | undefined;
  const write = () => {
    written = {
      host: os.hostname(),
      pid: process.pid,
      user: os.userInfo().username,
      exclusive: mode === "exclusive",
      mode,
      time: new Date().toISOString(),
      command: opts.command,
    };
    return repo.target.put(lockKey(id), repo.seal(Buffer.from(JSON.stringify(written)), AAD.lock(id)));
  };
  // When this process last began a rewrite of its lock that succeeded, on its own monotonic clock.
  let writtenAt = performance.now();
  for (let attempt = 0; ; attempt++) {
    writtenAt = performance.now();
    await write();
    const listed = await readLocks(repo, { id, info: written! });
    const now = await ownLockTime(repo, id, listed);
    const others = listed.filter((l) => l.id !== id);
    const blocking = [];
    for (const other of others) {
      if (other.info && isStale(other.info, storageAge(other, now))) {
        await repo.target.delete(lockKey(other.id));
        continue;
      }
      if (!other.info || modesConflict(mode, lockModeOf(other.info))) blocking.push(other);
    }
    if (blocking.length === 0) break;
    await repo.target.delete(lockKey(id));
    if (Date.now() >= deadline) {
      const b = blocking[0].info;
      const who = b ? `${b.command} (pid ${b.pid} on ${b.host}, since ${b.time})` : `lock ${blocking[0].id.slice(0, 8)}`;
      throw new RepoError(`the repository is locked by ${who}; retry later or wait with --lock-wait`, "locked");
    }
    // Random back-off so two processes that saw each other do not retry in lockstep.
    await new Promise((r) => setTimeout(r, 100 + Math.random() * 400 + Math.min(attempt, 10) * 100));
  }
  const lost = new AbortController();
  let refreshing: Promise<void> | undefined;
  const fail = (err: unknown) => {
    clearInterval(timer);
    const why = err instanceof RepoError ? err : new RepoError(`cannot refresh the repository lock of this ${opts.command} (${(err as Error).message}); stopped`, "locked");
    if (!lost.signal.aborted) lost.abort(why);
  };
  const stillThere = async () => {
    // Another host takes this lock for stale once the storage has not seen it rewritten for
    // STALE_MS. A holder that was stopped (a laptop asleep, a hung request) and has not rewritten
    // it for half that cannot know whether someone has: it must not go on, nor write it again.
    const since = performance.now() - writtenAt;
    if (since > lockStaleMs() / 2) {
      throw new RepoError(
        `the repository lock of this ${opts.command} was not refreshed for ${Math.round(since / 1000)} s (was the machine asleep?); another host may have taken it for stale; stopped`,
        "locked",
      );
    }
    // Re-creating a lock that another process removed would hide that it no longer protects us.
    if (!(await repo.target.head(lockKey(id)))) {
      throw new RepoError(`the repository lock of this ${opts.command} was removed by another process; stopped`, "locked");
    }
  };
  const refresh = async () => {
    try {
      await stillThere();
      const started = performance.now();
      await write();
      writtenAt = started;
    } catch (err) {
      fail(err);
    }
  };
  const timer = setInterval(() => {
    refreshing ??= refresh().finally(() => (refreshing = undefined));
  }, lockRefreshMs());
  timer.unref();
  return {
    id,
    signal: lost.signal,
    assertHeld() {
      lost.signal.throwIfAborted();
    },
    async confirm() {
      lost.signal.throwIfAborted();
      try {
        await stillThere();
      } catch (err) {
        fail(err);
      }
      lost.signal.throwIfAborted();
    },
    async release() {
      clearInterval(timer);
      // A refresh still under way would write the lock again after the delete.
      await refreshing;
      await repo.target.delete(lockKey(id));
    },
  };
}

/**
 * Run `fn` under a lock, handing it the lock's signal. If the lock was lost meanwhile, the result
 * is not reported as a success even when `fn` did not notice.
 */
export async function withLock<T>(
  repo: Repository,
  opts: LockOptions,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const lock = await acquireLock(repo, opts);
  try {
    const result = await fn(lock.signal);
    lock.assertHeld();
    return result;
  } finally {
    await lock.release();
  }
}

/** The storage's time of this process's own lock, from the listing or, if it is not there, a head. */
async function ownLockTime(repo: Repository, id: string, listed: ListedLock[]): Promise<number | undefined> {
  const own = listed.find((l) => l.id === id);
  if (own?.modified !== undefined) return own.modified;
  return validTime((await repo.target.head(lockKey(id)))?.modified);
}

/**
 * Remove every stale lock; returns how many. Used by `check` and `unlock`. Ages need the storage's
 * "now": a short-lived shared lock of this process is written as the probe, and removed.
 */
export async function removeStaleLocks(repo: Repository, all = false): Promise<number> {
  let removed = 0;
  const probe = all ? undefined : randomBytes(16).toString("hex");
  let probeInfo: LockInfo | undefined;
  if (probe) {
    probeInfo = { host: os.hostname(), pid: process.pid, user: os.userInfo().username, exclusive: false, mode: "shared", time: new Date().toISOString(), command: "stale-lock check" };
    await repo.target.put(lockKey(probe), repo.seal(Buffer.from(JSON.stringify(probeInfo)), AAD.lock(probe)));
  }
  try {
    const listed = await readLocks(repo, probe ? { id: probe, info: probeInfo! } : undefined);
    const now = probe ? await ownLockTime(repo, probe, listed) : undefined;
    for (const l of listed) {
      if (l.id === probe) continue;
      if (all || (l.info && isStale(l.info, storageAge(l, now)))) {
        await repo.target.delete(lockKey(l.id));
        removed++;
      }
    }
  } finally {
    if (probe) await repo.target.delete(lockKey(probe));
  }
  return removed;
}
