/**
 * pi-guard's own repository format beyond the engine interface: what `init` refuses and notes,
 * the snapshot listings (never "no snapshots" when every snapshot object is damaged), `check` of
 * the repository and its mirrors, `verify`, `doctor`, copies to mirrors, and the two repairs of a
 * repository. Each takes parsed options and returns its report; the CLI prints it.
 */
import type { Config, ConfigFlags } from "../config/config.js";
import type { CheckProblem, CheckReport } from "../repo/check.js";
import type { RepairFromReport } from "../repo/repair-from.js";
import type { RepairIndexReport } from "../repo/repair-index.js";
import type { Repository, SnapshotBriefRecord, SnapshotRecord } from "../repo/repository.js";
import type { RenderedListing } from "../repo/rendered-listing.js";
import type { MirrorShipment } from "../repo/ship.js";
import type { DoctorCheck } from "../doctor.js";
import type { VerifyOptions, VerifyReport } from "../snapshot/verify.js";

/** The config with another repository location: the same credentials open every replica. */
export async function configAt(config: Config, location: string): Promise<Config> {
  const { normalizeRepoLocation } = await import("../targets/location.js");
  return { ...config, repo: normalizeRepoLocation(location) };
}

/** The repository at `location`, opened with the config's credentials. */
export async function openRepositoryAt(config: Config, location: string, onWarning?: (message: string) => void): Promise<Repository> {
  const { openRepository } = await import("../engine.js");
  const repo = await openRepository(await configAt(config, location));
  if (onWarning) repo.onWarning = onWarning;
  return repo;
}

/** `init` refuses a location the config names as a mirror: a mirror is made by copy, never by init. */
export async function assertNotAMirror(config: Config): Promise<void> {
  (await import("../repo/replicate.js")).assertNotAMirror(config);
}

/** A password or key file the config already gives (then init asks for none). */
export async function haveCredential(config: Config): Promise<boolean> {
  const { resolveCredentials } = await import("../config/credentials.js");
  return !!(await resolveCredentials(config).catch(() => undefined));
}

/**
 * After `init --repo X` (or PI_GUARD_REPO=X): the repository where pi-guard would otherwise look,
 * when there is one; X is then a separate repository, not a copy of it.
 */
export async function otherRepositoryNear(config: Config, flags: Omit<ConfigFlags, "repo">): Promise<{ location: string; id: string } | undefined> {
  const [{ loadConfig }, { otherRepository }, { openTarget }] = await Promise.all([import("../config/config.js"), import("../repo/replicate.js"), import("../targets/open.js")]);
  const usual = [loadConfig(flags).repo, loadConfig(flags, { ...process.env, PI_GUARD_REPO: undefined }).repo];
  return otherRepository(usual, config.repo, (location) => openTarget({ repo: location }));
}

export interface SnapshotFilter {
  tag?: string;
  host?: string;
}

const wanted = (f: SnapshotFilter) => (s: { tags: string[]; host: string }) => (!f.tag || s.tags.includes(f.tag)) && (!f.host || s.host === f.host);

/** Snapshot objects that are all unreadable are damage, never "no snapshots yet". */
async function readableOrDamage<T extends { length: number } | { count: number }>(repo: Repository, config: Config, list: T): Promise<T> {
  const { listingDamage } = await import("../repo/snapshot-damage.js");
  const damage = listingDamage("count" in list ? list.count : list.length, repo.unreadableSnapshots, config);
  if (damage) throw damage;
  return list;
}

/** Every snapshot as `snapshots --json` prints it, rendered in advance (local times left out). */
export async function renderedSnapshots(repo: Repository, config: Config): Promise<RenderedListing> {
  return readableOrDamage(repo, config, await repo.renderedSnapshots());
}

/** The snapshots that match, parsed in full. */
export async function snapshotRecords(repo: Repository, config: Config, filter: SnapshotFilter = {}): Promise<SnapshotRecord[]> {
  return (await readableOrDamage(repo, config, await repo.listSnapshots())).filter((r) => wanted(filter)(r.snapshot));
}

/** The snapshots that match, by their briefs only: 100,000 list without parsing each in full. */
export async function snapshotBriefs(repo: Repository, config: Config, filter: SnapshotFilter = {}): Promise<SnapshotBriefRecord[]> {
  return (await readableOrDamage(repo, config, await repo.listSnapshotBriefs())).filter((r) => wanted(filter)(r.snapshot));
}

/** The filter of `snapshots --tag/--host`, for any engine's list. */
export const snapshotFilter = wanted;

/** A snapshot as `snapshots --json` shows it, `localTime` being its time in the caller's zone. */
export { snapshotJson } from "../repo/snapshot-rows.js";

export interface CheckRun {
  report: CheckReport;
  /** One problem per damaged pack, however many files and snapshots need it (--json has them all). */
  problems: CheckProblem[];
}

/**
 * `check` of the repository at `location`: its structure, and with readData every byte; the next
 * steps name the other copies (the repository and its mirrors) that can heal it.
 */
export async function checkRepositoryAt(
  config: Config,
  repo: Repository,
  location: string,
  opts: { readData?: boolean; lockWaitMs?: number; onProgress?: (p: { packs: number; total: number }) => void } = {},
): Promise<CheckRun> {
  const [{ runCheck }, { groupedProblems }] = await Promise.all([import("../repo/check-run.js"), import("../repo/check.js")]);
  const otherCopies = [config.repo, ...config.mirrors].filter((t) => t !== location);
  const report = await runCheck(repo, { readData: opts.readData, lockWaitMs: opts.lockWaitMs, location, otherCopies, onProgress: opts.onProgress });
  return { report, problems: groupedProblems(report) };
}

/** `verify`: the live sources against a snapshot, byte for byte; `exit` 0 identical, 1 different, 3 damaged. */
export async function verifyAgainstSnapshot(config: Config, repo: Repository, opts: VerifyOptions = {}): Promise<VerifyReport & { exit: 0 | 1 | 3 }> {
  const { verifySnapshot } = await import("../snapshot/verify.js");
  const report = await verifySnapshot(config, repo, opts);
  const damaged = report.differences.some((d) => d.status === "damaged");
  return { ...report, exit: damaged ? 3 : report.identical ? 0 : 1 };
}

/** `doctor`: the setup's hazards, each with its fix; `agent`: only that agent's checks beside the repository's. */
export async function doctor(config: Config, agent?: string): Promise<{ ok: boolean; checks: DoctorCheck[] }> {
  const { runDoctor } = await import("../doctor.js");
  const name = agent === undefined ? undefined : (await import("../agents/registry.js")).agentByName(agent).name;
  const checks = await runDoctor(config, Date.now(), name);
  return { ok: !checks.some((c) => c.status === "error"), checks };
}

export interface CopyRequest {
  /** The source location (default: the repository). */
  from?: string;
  /** The destination (default: every mirror of the config). */
  to?: string;
  /** Snapshot ids or unique prefixes; none: every snapshot. */
  ids?: string[];
  host?: string;
  /** Only the newest snapshot of each host. */
  latest?: boolean;
  lockWaitMs?: number;
  onProgress?: (p: { snapshot: number; snapshots: number; blobs: number; bytes: number }) => void;
  onWarning?: (message: string) => void;
}

/** `copy`: snapshots from one location of a repository to another (a mirror), each verified on the way. */
export async function copyToMirrors(config: Config, req: CopyRequest): Promise<MirrorShipment[]> {
  const [{ normalizeRepoLocation }, { RepoError }] = await Promise.all([import("../targets/location.js"), import("../repo/errors.js")]);
  const from = req.from ? normalizeRepoLocation(req.from) : config.repo;
  const destinations = req.to ? [normalizeRepoLocation(req.to)] : config.mirrors;
  if (!destinations.length) throw new RepoError("copy needs a destination: --to <location>, or \"mirrors\" in the config file", "usage");
  if (destinations.includes(from)) throw new RepoError(`--from and --to are the same location (${from})`, "usage");
  const source = await openRepositoryAt(config, from, req.onWarning);
  const { shipToMirrors } = await import("../repo/ship.js");
  const ids = req.ids ?? [];
  return shipToMirrors({ mirrors: destinations, dataDir: config.dataDir }, source, {
    ids,
    host: req.host,
    latestOnly: req.latest,
    // Everything, unless narrowed: shipToMirrors' policy applies only without any choice.
    select: ids.length || req.host || req.latest ? undefined : (all) => all,
    lockWaitMs: req.lockWaitMs,
    onProgress: req.onProgress,
  });
}

/**
 * What a copy came to: 3 when a snapshot could not be copied or the source had unreadable ones
 * (one may have been asked for: the copy is not whole), 1 when a destination got nothing or no
 * snapshot matched anywhere, else 0.
 */
export function copyExit(shipments: MirrorShipment[]): 0 | 1 | 3 {
  let code: 0 | 1 | 3 = 0;
  const worse = (c: 1 | 3) => (code = Math.max(code, c) as 0 | 1 | 3);
  for (const s of shipments) {
    if (!s.report) worse(1);
    else if (s.report.failed.length || s.report.unreadable.length) worse(3);
  }
  if (shipments.every((s) => s.report && s.report.selected === 0)) worse(1);
  return code;
}

/** `repair --from A --to B`: heal B, a copy of the same repository, from A. */
export async function repairFromCopy(
  config: Config,
  fromLocation: string,
  toLocation: string,
  opts: { dryRun?: boolean; lockWaitMs?: number; onProgress?: (line: string) => void; onWarning?: (message: string) => void } = {},
): Promise<{ from: string; to: string; report: RepairFromReport }> {
  const [{ normalizeRepoLocation }, { RepoError }] = await Promise.all([import("../targets/location.js"), import("../repo/errors.js")]);
  const from = normalizeRepoLocation(fromLocation);
  const to = normalizeRepoLocation(toLocation);
  if (from === to) throw new RepoError(`--from and --to are the same location (${from})`, "usage");
  const source = await openRepositoryAt(config, from, opts.onWarning);
  const [{ openTarget }, { openReplica }, { repairFrom }] = await Promise.all([import("../engine.js"), import("../repo/replicate.js"), import("../repo/repair-from.js")]);
  const { repo: dest } = await openReplica(source, openTarget({ repo: to, retry: config.retry }), { create: false, dataDir: config.dataDir });
  return { from, to, report: await repairFrom(source, dest, { dryRun: opts.dryRun, lockWaitMs: opts.lockWaitMs, onProgress: opts.onProgress }) };
}

/** `repair index`: the index rebuilt from the packs' own headers. */
export async function rebuildIndex(repo: Repository, opts: { lockWaitMs?: number } = {}): Promise<RepairIndexReport> {
  return (await import("../repo/repair-index.js")).repairIndex(repo, opts);
}
