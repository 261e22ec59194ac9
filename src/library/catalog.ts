/**
 * The session catalog over the live files and a native repository's snapshots, the way every
 * caller opens it (the sessions commands, `export`, the library's find and search): a shared
 * repository lock is taken only when the repository is actually opened (a warm catalog never
 * does), and held until the catalog is finished, so no prune removes what it is reading.
 */
import type { Config } from "../config/config.js";
import { NotWarm } from "../sessions/not-warm.js";
import { parseRepoLocation } from "../targets/location.js";
import type { Lock } from "../repo/lock.js";
import type { Repository } from "../repo/repository.js";
import type { SessionCatalog, SessionRecord } from "../sessions/catalog.js";
import type { Engine, EngineSessionsOptions } from "../engine/types.js";

export interface OpenedCatalog {
  catalog: SessionCatalog;
  /** Close the catalog and release the lock; `ok`: what was read must still be valid (the lock was held throughout). */
  finish(ok: boolean): Promise<void>;
}

export async function openCatalog(config: Config, open: () => Promise<Repository>, opts: { liveOnly?: boolean; lockWaitMs?: number; warmOnly?: boolean } = {}): Promise<OpenedCatalog> {
  // Only the modules a warm list or search needs: the session parser loads when something changed.
  const [{ SessionCatalog }, { lazyRepository }, { openTarget }] = await Promise.all([import("../sessions/catalog.js"), import("../sessions/source.js"), import("../targets/open.js")]);
  let lock: Lock | undefined;
  const openLocked = async () => {
    if (opts.warmOnly) throw new NotWarm("the repository must be unlocked");
    const repo = await open();
    const { acquireLock } = await import("../repo/lock.js");
    lock = await acquireLock(repo, { exclusive: false, command: "sessions", waitMs: opts.lockWaitMs ?? 60_000 });
    return repo;
  };
  // A remote repository's snapshot names are a request away: never warm.
  if (opts.warmOnly && !opts.liveOnly && parseRepoLocation(config.repo).kind !== "local") throw new NotWarm("the repository is not a local folder");
  const repo = opts.liveOnly ? null : await lazyRepository(openTarget(config), openLocked);
  const catalog = await SessionCatalog.build({ config, repo, warmOnly: opts.warmOnly }).catch(async (err: unknown) => {
    await lock?.release();
    throw err;
  });
  return {
    catalog,
    async finish(ok: boolean) {
      try {
        await catalog.close();
      } finally {
        await lock?.release();
      }
      // What was read while the lock was lost may be gone already: not a success.
      if (ok) lock?.assertHeld();
    },
  };
}

/** Run `fn` on an open catalog, finished whatever happens. */
export async function withCatalog<T>(config: Config, open: () => Promise<Repository>, opts: { liveOnly?: boolean; lockWaitMs?: number }, fn: (c: SessionCatalog) => Promise<T>): Promise<T> {
  return finishing(await openCatalog(config, open, opts), fn);
}

/** Run `fn` on the session catalog of an engine (native or restic), finished whatever happens. */
export async function withEngineCatalog<T>(engine: Pick<Engine, "sessions">, opts: EngineSessionsOptions, fn: (c: SessionCatalog) => Promise<T>): Promise<T> {
  return finishing(await engine.sessions(opts), fn);
}

/**
 * Run `fn` on the catalog that holds session `id` (an id or a unique prefix) and its record. A
 * live session named by its whole id is found among the live files without opening the
 * repository (on restic: without restic or a password). A prefix is resolved over the live files
 * and every snapshot, so that one a deleted session shares stays ambiguous, as everywhere else.
 */
export async function withSession<T>(engine: Pick<Engine, "sessions">, id: string, opts: EngineSessionsOptions, fn: (c: SessionCatalog, record: SessionRecord) => Promise<T>): Promise<T> {
  const { resolveSession } = await import("../sessions/query.js");
  const live = await engine.sessions({ ...opts, liveOnly: true });
  const whole = live.catalog.sessions.find((r) => r.id === id);
  if (whole) return finishing(live, (c) => fn(c, whole));
  await live.finish(false);
  return withEngineCatalog(engine, opts, (c) => fn(c, resolveSession(c.sessions, id)));
}

async function finishing<T>(opened: OpenedCatalog, fn: (c: SessionCatalog) => Promise<T>): Promise<T> {
  let ok = false;
  try {
    const result = await fn(opened.catalog);
    ok = true;
    return result;
  } finally {
    await opened.finish(ok);
  }
}
