import os from "node:os";
import { randomBytes } from "node:crypto";
import { RepoError } from "./errors.js";
import { AAD, lockKey } from "./format.js";
import type { Repository } from "./repository.js";
import { pidAlive } from "../pid.js";

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

/** How often a held lock is rewritten. PI_GUARD_LOCK_REFRESH_MS overrides it, for tests. */
export function lockRefreshMs(env: NodeJS.ProcessEnv = process.env): number {
  const ms = Number(env.PI_GUARD_LOCK_REFRESH_MS);
  return Number.isFinite(ms) && ms > 0 ? ms : REFRESH_MS;
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


export function isStale(info: LockInfo, now = Date.now()): boolean {
  if (info.host === os.hostname() && !pidAlive(info.pid)) return true;
  return now - Date.parse(info.time) > STALE_MS;
}

async function readLocks(repo: Repository): Promise<{ id: string; info: LockInfo | undefined }[]> {
  const out: { id: string; info: LockInfo | undefined }[] = [];
  for await (const obj of repo.target.list("locks")) {
    const id = obj.key.slice("locks/".length);
    try {
      const info = JSON.parse(repo.unseal(await repo.target.get(obj.key), "lock", AAD.lock(id)).toString("utf8")) as LockInfo;
      // Whatever does not look like a lock is taken as held, exclusively (see lockModeOf).
      const shaped = typeof info === "object" && info !== null && typeof info.host === "string" && Number.isInteger(info.pid) && typeof info.time === "string";
      out.push({ id, info: shaped ? info : undefined });
    } catch {
      // Vanished between list and get (released), or unreadable: a half-written lock cannot exist,
      // since puts are atomic, so an unreadable one is from another key; treat it as held.
      out.push({ id, info: undefined });
    }
  }
  return out;
}

export async function acquireLock(repo: Repository, opts: LockOptions): Promise<Lock> {
  const mode = modeOf(opts);
  const id = randomBytes(16).toString("hex");
  const deadline = Date.now() + (opts.waitMs ?? 0);
  const write = () =>
    repo.target.put(
      lockKey(id),
      repo.seal(
        Buffer.from(
          JSON.stringify({
            host: os.hostname(),
            pid: process.pid,
            user: os.userInfo().username,
            exclusive: mode === "exclusive",
            mode,
            time: new Date().toISOString(),
            command: opts.command,
          } satisfies LockInfo),
        ),
        AAD.lock(id),
      ),
    );
  for (let attempt = 0; ; attempt++) {
    await write();
    const others = (await readLocks(repo)).filter((l) => l.id !== id);
    const blocking = [];
    for (const other of others) {
      if (other.info && isStale(other.info)) {
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
    // Re-creating a lock that another process removed would hide that it no longer protects us.
    if (!(await repo.target.head(lockKey(id)))) {
      throw new RepoError(`the repository lock of this ${opts.command} was removed by another process; stopped`, "locked");
    }
  };
  const refresh = async () => {
    try {
      await stillThere();
      await write();
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

/** Remove every stale lock; returns how many. Used by `check` and `unlock`. */
export async function removeStaleLocks(repo: Repository, all = false): Promise<number> {
  let removed = 0;
  for (const l of await readLocks(repo)) {
    if (all || (l.info && isStale(l.info))) {
      await repo.target.delete(lockKey(l.id));
      removed++;
    }
  }
  return removed;
}
