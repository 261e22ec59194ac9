/**
 * The engine interface over a restic repository (`restic:<restic repository>`), driven through the
 * restic binary (src/restic/). What restic cannot do as pi-guard does is refused in one line
 * (exit 2), never done differently in silence: see docs/RESTIC.md.
 */
import { NotWarm } from "../sessions/not-warm.js";
import type { Config } from "../config/config.js";
import { RepoError } from "../repo/errors.js";
import type { ResticSession } from "../restic/run.js";
import type { ResticSnapshotRecord } from "../restic/snapshots.js";
import type { Engine, EngineSnapshot } from "./types.js";

const listed = (r: ResticSnapshotRecord): EngineSnapshot => ({ id: r.id, time: r.time, host: r.host, user: r.user, tags: r.tags, roots: r.roots.map((x) => ({ name: x.name, path: x.path })), ...(r.agents ? { agents: { ...r.agents } } : {}) });

/** `session(true)` is for a new repository, whose prompted password is asked twice. */
export function resticEngine(config: Config, session: (isNew?: boolean) => Promise<ResticSession>): Engine {
  let opened: Promise<ResticSession> | undefined;
  const s = () => (opened ??= session());
  return {
    kind: "restic",
    location: config.repo,
    async init(opts = {}) {
      if (opts.useKeyFile) throw new RepoError("--key-file-only: restic has no key files; a restic repository is opened by a password (PI_GUARD_PASSWORD or PI_GUARD_PASSWORD_FILE)", "usage");
      const { resticInit } = await import("../restic/repository.js");
      // The password comes from the config or restic's own prompt (asked twice): not from opts.
      opened = session(true);
      const made = await resticInit(await opened);
      return { id: made.id, credential: "password" };
    },
    async backup(opts = {}) {
      if (opts.fromTar || opts.time) throw new RepoError("--from-tar is not available on a restic repository (import the tarball into a pi-guard repository, or use restic backup --stdin)", "usage");
      const { resticSnapshot } = await import("../restic/backup.js");
      const { result, created, mirrors } = await resticSnapshot(config, s, opts);
      return {
        engine: "restic",
        created: created ? {} : undefined,
        lossAccepted: !!result?.loss && !!opts.acceptLoss,
        mirrors,
        snapshot: result && {
          id: result.id,
          time: result.snapshot.time,
          parent: result.parent ?? null,
          tags: result.snapshot.tags,
          summary: result.summary,
          skipped: result.skipped,
          changedWhileRead: [],
          special: [],
          loss: result.loss,
        },
      };
    },
    async listSnapshots(opts = {}) {
      const { listResticSnapshots } = await import("../restic/snapshots.js");
      return (await listResticSnapshots(await s(), { onUnreadable: opts.onUnreadable })).map(listed);
    },
    async findSnapshot(when, opts = {}) {
      const { chooseResticSnapshot } = await import("../restic/restore.js");
      const chosen = await chooseResticSnapshot(await s(), when, opts.host);
      return { snapshot: listed(chosen.record), resolved: chosen.resolved, warnings: chosen.warnings };
    },
    async restore(when, opts = {}) {
      if (opts.delete) throw new RepoError("--delete is not available on a restic repository: a restore there creates and replaces files, never deletes (docs/RESTIC.md)", "usage");
      if (opts.noLock) throw new RepoError("--no-lock is not available on a restic repository: restic takes its own lock", "usage");
      const { resticRestore } = await import("../restic/restore.js");
      const r = await resticRestore(config, await s(), when, { targetDir: opts.targetDir, paths: opts.paths, session: opts.session, agent: opts.agent, dryRun: opts.dryRun, host: opts.host, withMeta: opts.withMeta, onProgress: opts.onProgress });
      return { ...r, engine: "restic", snapshot: { id: r.snapshot.id, snapshot: { time: r.snapshot.time, host: r.snapshot.host } } };
    },
    async forget(opts) {
      if (opts.ids?.length) throw new RepoError("on a restic repository pi-guard forgets by policy only; forget single snapshots with `restic forget <id>`", "usage");
      if (!opts.policy) throw new RepoError("nothing to forget by: give --keep-* options or --policy (forgetting every snapshot is never allowed)", "usage");
      if (opts.prune?.allowDamaged) throw new RepoError("--allow-damaged is not available on a restic repository (restic prune refuses a damaged repository; see restic repair)", "usage");
      if (opts.prune && opts.dryRun) throw new RepoError("--prune after a --dry-run would prune nothing; run them without --dry-run", "usage");
      const { validatePolicy } = await import("../repo/retention.js");
      validatePolicy(opts.policy);
      const { resticForget } = await import("../restic/repository.js");
      const maxUnused = opts.prune?.maxUnusedFraction === undefined ? undefined : `${Math.round(opts.prune.maxUnusedFraction * 10000) / 100}%`;
      const { pruned, ...r } = await resticForget(await s(), opts.policy, { dryRun: opts.dryRun, prune: !!opts.prune, maxUnused, host: opts.host, includeSpecial: opts.includeSpecial, allowRemoveAll: opts.allowRemoveAll, now: opts.now });
      return { ...r, unreadable: [], ...(pruned ? { prune: { engine: "restic" as const } } : {}) };
    },
    async sessions(opts = {}) {
      if (opts.warmOnly) throw new NotWarm("a restic repository's catalog is read through restic");
      const [{ SessionCatalog }, { resticCatalogSnapshots }] = await Promise.all([import("../sessions/catalog.js"), import("../restic/catalog.js")]);
      // restic locks the repository itself for each command it runs: nothing is held here.
      const catalog = await SessionCatalog.build({ config, repo: null, ...(opts.liveOnly ? {} : { snapshots: resticCatalogSnapshots(await s()) }) });
      return { catalog, finish: () => catalog.close() };
    },
    async check(opts = {}) {
      const { resticCheck } = await import("../restic/repository.js");
      const r = await resticCheck(await s(), { readData: opts.readData });
      return { ...r, details: r };
    },
    async status(opts = {}) {
      const { resticStatus } = await import("../restic/status.js");
      return resticStatus(config, await s(), opts);
    },
  };
}
