// The restic engine's entry points besides snapshot and restore: opening (which password, which
// repository), init, forget and check. Nothing here prints.
import type { Config, RetentionPolicy } from "../config/config.js";
import { isInside } from "../config/config.js";
import { RepoError } from "../repo/errors.js";
import type { Snapshot } from "../repo/format.js";
import type { SnapshotRecord } from "../repo/repository.js";
import { applyPolicy, assertRemoveAllScoped, emptiedGroups, type EmptiedGroup } from "../repo/retention.js";
import { parseRepoLocation } from "../targets/location.js";
import { findRestic } from "./binary.js";
import { resticError, runRestic, type ResticSession, unexpectedOutput } from "./run.js";
import { listResticSnapshots } from "./snapshots.js";

/** The restic repository string a config names, or undefined when it is not a restic location. */
export function resticRepositoryOf(config: Pick<Config, "repo">): string | undefined {
  const loc = parseRepoLocation(config.repo);
  return loc.kind === "restic" ? loc.repository : undefined;
}

/**
 * How restic will unlock the repository. restic knows passwords only: pi-guard's key files are its
 * own format, so a config with only a key file gets a clear way out instead of a restic prompt.
 */
export async function resticSession(config: Config, promptPassword?: () => Promise<string>, opts: { confirm?: boolean } = {}): Promise<ResticSession> {
  const repository = resticRepositoryOf(config);
  if (repository === undefined) throw new RepoError(`${config.repo} is not a restic: location`, "usage");
  // A local restic repository inside the agent dir would go with it, exactly like a pi-guard one.
  const local = /^(?:local:)?(\/.*)$/.exec(repository)?.[1];
  if (local && isInside(local, config.agentDir)) {
    throw new RepoError(`refusing to use ${config.repo}: it is inside the agent dir ${config.agentDir}, where the same accident that deletes sessions would delete the backups`, "usage");
  }
  await findRestic();
  if (config.passwordFile) return { repository, passwordFile: config.passwordFile };
  if (config.password !== undefined) {
    if (!config.password) throw new RepoError("PI_GUARD_PASSWORD is set but empty", "no-password");
    return { repository, password: config.password };
  }
  if (promptPassword) {
    const password = await promptPassword();
    // A new repository's password is typed twice: a typo would lock the user out of it.
    if (password && opts.confirm && (await promptPassword()) !== password) throw new RepoError("the passwords do not match", "usage");
    if (password) return { repository, password };
  }
  throw new RepoError(
    "a restic repository needs a password: set PI_GUARD_PASSWORD or PI_GUARD_PASSWORD_FILE (pi-guard key files work only for pi-guard's own repositories; restic has no key files)",
    "no-password",
  );
}

export async function resticInit(s: ResticSession): Promise<{ id: string }> {
  // restic 0.14's init has no JSON output; later versions print {"message_type":"initialized","id":…} with --json.
  const r = await runRestic(s, ["init"]);
  const id = /created restic repository ([0-9a-f]{8,64}) at /.exec(r.stdout)?.[1];
  if (!id) throw unexpectedOutput("init", r.stdout.trim().split("\n")[0] ?? "(nothing)");
  // Verified: the new repository opens with the password and lists (no) snapshots.
  await runRestic(s, ["snapshots", "--json"], { onJson: () => undefined });
  return { id };
}

export interface ResticForgetEntry {
  id: string;
  time: string;
  host: string;
  tags: string[];
  /** Why the policy keeps it (empty for one it removes). */
  reasons: string[];
}

export interface ResticForgetReport {
  dryRun: boolean;
  keep: ResticForgetEntry[];
  remove: ResticForgetEntry[];
  /** Snapshots restic forgot (0 in a dry run). */
  removed: number;
  pruned: boolean;
  /** Groups this forget empties (allowed by allowRemoveAll) or would empty (then it is `refused`). */
  emptiedGroups: EmptiedGroup[];
  /** It would have emptied a group without allowRemoveAll: restic was asked to forget nothing. */
  refused: boolean;
}

/**
 * Forget by pi-guard's own policy (retention.ts), then `restic forget <ids>`. Deciding here rather
 * than passing --keep-* to restic keeps both engines' decisions the same: pre-restore snapshots
 * are kept and do not use up a period (restic would count the pre-restore snapshot as the
 * "last" one and drop the real one), and the groups are host and roots. Only pi-guard's
 * snapshots (tag pi-guard) are considered; with `prune`, restic prune follows. A decision that
 * would empty a group forgets nothing (restic 0.14 does not refuse that itself; 0.17 does), unless
 * allowRemoveAll.
 */
export async function resticForget(
  s: ResticSession,
  policy: RetentionPolicy,
  opts: { dryRun?: boolean; prune?: boolean; host?: string; includeSpecial?: boolean; maxUnused?: string; now?: Date; allowRemoveAll?: boolean } = {},
): Promise<ResticForgetReport> {
  assertRemoveAllScoped(opts);
  const now = opts.now ?? new Date();
  const snapshots = (await listResticSnapshots(s)).filter((r) => !opts.host || r.host === opts.host);
  // applyPolicy reads time, host, tags and roots: the fields a restic snapshot record has.
  const records = snapshots.map((r) => ({ id: r.id, snapshot: { time: r.time, host: r.host, tags: r.tags, roots: r.roots } as unknown as Snapshot, r }));
  const decided = applyPolicy(records, policy, now, { includeSpecial: opts.includeSpecial });
  const emptied = emptiedGroups(records, new Set(decided.remove.map((k) => k.record.id)), now, { includeSpecial: opts.includeSpecial });
  const entry = (rec: SnapshotRecord, reasons: string[]): ResticForgetEntry => {
    const r = (rec as (typeof records)[number]).r;
    return { id: r.id, time: r.time, host: r.host, tags: r.tags, reasons };
  };
  const report: ResticForgetReport = {
    dryRun: !!opts.dryRun,
    keep: decided.keep.map((k) => entry(k.record, k.reasons)),
    remove: decided.remove.map((k) => entry(k.record, [])),
    removed: 0,
    pruned: false,
    emptiedGroups: emptied,
    refused: emptied.length > 0 && !opts.allowRemoveAll,
  };
  if (opts.dryRun || report.refused || report.remove.length === 0) return report;
  await runRestic(s, ["forget", ...report.remove.map((r) => r.id)]);
  // Verified: none of them is listed any more.
  const left = new Set((await listResticSnapshots(s)).map((r) => r.id));
  const still = report.remove.filter((r) => left.has(r.id));
  if (still.length) throw new RepoError(`restic forget left ${still.length} snapshot(s) in place (${still[0].id.slice(0, 8)}…)`, "io");
  report.removed = report.remove.length;
  if (opts.prune) {
    await runRestic(s, ["prune", ...(opts.maxUnused ? ["--max-unused", opts.maxUnused] : [])]);
    report.pruned = true;
  }
  return report;
}

export interface ResticCheckReport {
  ok: boolean;
  readData: boolean;
  /** restic's own lines that name a problem. */
  problems: string[];
}

/** restic check; "repository contains errors" is damage (exit 3), not a failure to run. */
export async function resticCheck(s: ResticSession, opts: { readData?: boolean } = {}): Promise<ResticCheckReport> {
  const args = ["check", ...(opts.readData ? ["--read-data"] : [])];
  const r = await runRestic(s, args, { okExitCodes: [1] });
  const ok = r.exitCode === 0;
  if (!ok && !/repository contains errors/i.test(r.stderr)) throw resticError("check", r.exitCode, r.stderr);
  // eslint-disable-next-line no-control-regex
  const clean = (l: string) => l.trim().replace(/[\u0000-\u001f\u007f]/g, "?").slice(0, 300);
  const problems = ok ? [] : `${r.stdout}\n${r.stderr}`.split("\n").map(clean).filter((l) => /error|invalid|missing|does not match|not found|unreferenced/i.test(l) && !/^no errors/i.test(l));
  return { ok, readData: !!opts.readData, problems: ok ? [] : problems.length ? problems : ["restic: repository contains errors"] };
}
