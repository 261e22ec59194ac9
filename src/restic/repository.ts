// The restic engine's entry points besides snapshot and restore: opening (which password, which
// repository), init, forget and check. Nothing here prints.
import type { Config, RetentionPolicy } from "../config/config.js";
import { isInside } from "../config/config.js";
import { RepoError } from "../repo/errors.js";
import { parseKeepWithin } from "../repo/retention.js";
import { PRE_RESTORE_TAG } from "../restore/select.js";
import { parseRepoLocation } from "../targets/location.js";
import { findRestic } from "./binary.js";
import { resticError, runRestic, type ResticSession, unexpectedOutput } from "./run.js";
import { PI_GUARD_TAG, readSnapshot } from "./snapshots.js";

/** The restic repository string a config names, or undefined when it is not a restic location. */
export function resticRepositoryOf(config: Pick<Config, "repo">): string | undefined {
  const loc = parseRepoLocation(config.repo);
  return loc.kind === "restic" ? loc.repository : undefined;
}

/**
 * How restic will unlock the repository. restic knows passwords only: pi-guard's key files are its
 * own format, so a config with only a key file gets a clear way out instead of a restic prompt.
 */
export async function resticSession(config: Config, promptPassword?: () => Promise<string>): Promise<ResticSession> {
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

/** restic's --keep-within takes y, m, d and h; pi-guard's also takes w (7 days). */
function resticDuration(text: string): string {
  const d = parseKeepWithin(text);
  const days = d.d + 7 * d.w;
  const out = `${d.y ? `${d.y}y` : ""}${d.m ? `${d.m}m` : ""}${days ? `${days}d` : ""}${d.h ? `${d.h}h` : ""}`;
  return out || "0h";
}

export function policyArgs(p: RetentionPolicy): string[] {
  const args: string[] = [];
  const n = (flag: string, v: number | undefined) => (v === undefined ? undefined : args.push(flag, String(v)));
  n("--keep-last", p.keepLast);
  n("--keep-hourly", p.keepHourly);
  n("--keep-daily", p.keepDaily);
  n("--keep-weekly", p.keepWeekly);
  n("--keep-monthly", p.keepMonthly);
  n("--keep-yearly", p.keepYearly);
  if (p.keepWithin !== undefined) args.push("--keep-within", resticDuration(p.keepWithin));
  for (const t of p.keepTags ?? []) {
    if (t.includes(",")) throw new RepoError(`--keep-tag "${t}": restic tags cannot hold a comma`, "usage");
    args.push("--keep-tag", t);
  }
  return args;
}

export interface ResticForgetReport {
  dryRun: boolean;
  keep: { id: string; time: string; host: string; tags: string[] }[];
  remove: { id: string; time: string; host: string; tags: string[] }[];
  pruned: boolean;
}

/**
 * restic forget over pi-guard's snapshots only (tag pi-guard), grouped by host as pi-guard's own
 * policy is; with `prune`, restic prune afterwards (a separate run: its output is not JSON).
 */
export async function resticForget(
  s: ResticSession,
  policy: RetentionPolicy,
  opts: { dryRun?: boolean; prune?: boolean; host?: string; includeSpecial?: boolean; maxUnused?: string } = {},
): Promise<ResticForgetReport> {
  const args = ["forget", "--json", "--tag", PI_GUARD_TAG, "--group-by", "host", ...policyArgs(policy)];
  // As pi-guard's own forget does, the snapshots an in-place restore took to be undone are kept
  // (restic cannot also keep them from using up a period of the policy).
  if (!opts.includeSpecial) args.push("--keep-tag", PRE_RESTORE_TAG);
  if (opts.host) args.push("--host", opts.host);
  if (opts.dryRun) args.push("--dry-run");
  let groups: unknown;
  let lines = 0;
  await runRestic(s, args, {
    onJson: (v) => {
      lines++;
      groups = v;
    },
  });
  // restic prints nothing at all when no snapshot matched the tag.
  if (lines === 0) groups = [];
  if (!Array.isArray(groups)) throw unexpectedOutput("forget", JSON.stringify(groups)?.slice(0, 60) ?? "");
  const report: ResticForgetReport = { dryRun: !!opts.dryRun, keep: [], remove: [], pruned: false };
  for (const g of groups as unknown[]) {
    const o = g as Record<string, unknown>;
    if (!o || typeof o !== "object") throw unexpectedOutput("forget", JSON.stringify(g)?.slice(0, 60) ?? "");
    for (const [list, into] of [[o.keep, report.keep], [o.remove, report.remove]] as const) {
      if (list === null || list === undefined) continue;
      if (!Array.isArray(list)) throw unexpectedOutput("forget", JSON.stringify(list).slice(0, 60));
      for (const raw of list) {
        const r = readSnapshot(raw);
        if (r) into.push({ id: r.id, time: r.time, host: r.host, tags: r.tags });
      }
    }
  }
  if (opts.prune && !opts.dryRun && report.remove.length) {
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
