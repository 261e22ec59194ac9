import type { RetentionPolicy } from "../config/config.js";
import { PRE_RESTORE_TAG } from "../restore/select.js";
import { RepoError } from "./errors.js";
import { isImport, snapshotKey, SUSPECT_LOSS_TAG, type Snapshot } from "./format.js";
import { acquireLock } from "./lock.js";
import { listSnapshotIds } from "./peek.js";
import type { Repository, SnapshotRecord } from "./repository.js";

/**
 * Retention: which snapshots a policy keeps (pure, `applyPolicy`) and deleting the others' snapshot
 * objects (`forget`). Data goes only with `prune`. Semantics are restic's (docs/RETENTION.md):
 * snapshots are grouped by host and roots; in each group, newest first, `keepLast` keeps the n
 * newest, `keepWithin` everything within the duration before the group's newest snapshot, and each
 * of hourly/daily/weekly/monthly/yearly keeps the newest snapshot of each of the n most recent
 * periods (local time) that have one.
 */

export interface PolicyOptions {
  /** Let the policy decide about pre-restore, pre-delete, import and suspect-loss snapshots too (default: always kept). */
  includeSpecial?: boolean;
}

export interface PolicyResult {
  keep: { record: SnapshotRecord; reasons: string[] }[];
  remove: { record: SnapshotRecord }[];
}

const BUCKETS = [
  ["keepHourly", "hourly", (d: Date) => `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}-${d.getHours()}`],
  ["keepDaily", "daily", (d: Date) => `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}`],
  ["keepWeekly", "weekly", isoWeek],
  ["keepMonthly", "monthly", (d: Date) => `${d.getFullYear()}-${d.getMonth()}`],
  ["keepYearly", "yearly", (d: Date) => `${d.getFullYear()}`],
] as const;

/** ISO 8601 week of the local date: weeks start on Monday; week 1 holds the year's first Thursday. */
export function isoWeek(d: Date): string {
  const thursday = new Date(d.getFullYear(), d.getMonth(), d.getDate() - ((d.getDay() + 6) % 7) + 3);
  // Rounded: a daylight-saving change makes a day 23 or 25 hours long.
  const dayOfYear = Math.round((thursday.getTime() - new Date(thursday.getFullYear(), 0, 1).getTime()) / 86_400_000);
  return `${thursday.getFullYear()}-W${Math.floor(dayOfYear / 7) + 1}`;
}

/** "1y2m3w4d5h": years, months, weeks, days, hours (restic's units, plus weeks). */
export function parseKeepWithin(text: string): { y: number; m: number; w: number; d: number; h: number } {
  const t = text.trim();
  if (!/^(\d{1,6}[ymwdh])+$/.test(t)) {
    throw new RepoError(`keep-within "${text}" is not a duration like 1h, 2d, 1y6m (units y, m = months, w, d, h)`, "usage");
  }
  const out = { y: 0, m: 0, w: 0, d: 0, h: 0 };
  for (const m of t.matchAll(/(\d+)([ymwdh])/g)) out[m[2] as keyof typeof out] += Number(m[1]);
  return out;
}

/** `ref` minus the duration, in local calendar terms (a month back from March 31 is March 3). */
export function subtractDuration(ref: Date, text: string): Date {
  const d = parseKeepWithin(text);
  return new Date(ref.getFullYear() - d.y, ref.getMonth() - d.m, ref.getDate() - d.d - 7 * d.w, ref.getHours() - d.h, ref.getMinutes(), ref.getSeconds(), ref.getMilliseconds());
}

/** A policy that names nothing to keep would forget everything: never allowed. */
export function isEmptyPolicy(p: RetentionPolicy): boolean {
  return (
    !p.keepLast && !p.keepWithin && !p.keepHourly && !p.keepDaily && !p.keepWeekly && !p.keepMonthly && !p.keepYearly && !(p.keepTags ?? []).length
  );
}

export function validatePolicy(p: RetentionPolicy): void {
  for (const key of ["keepLast", "keepHourly", "keepDaily", "keepWeekly", "keepMonthly", "keepYearly"] as const) {
    const v = p[key];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) throw new RepoError(`${key} must be a whole number >= 0, not ${String(v)}`, "usage");
  }
  if (p.keepWithin !== undefined) parseKeepWithin(p.keepWithin);
  if (isEmptyPolicy(p)) {
    throw new RepoError("the retention policy keeps nothing; forgetting every snapshot is never allowed (give --keep-* options, --policy, or snapshot ids)", "usage");
  }
}

/** Tag of the snapshot `sessions delete` takes first; the undo command it prints names that snapshot. */
export const PRE_DELETE_TAG = "pre-delete";

/** Why a snapshot is kept whatever the policy says, unless PolicyOptions.includeSpecial. */
export function specialReason(s: Snapshot): string | undefined {
  const tags = Array.isArray(s.tags) ? s.tags : [];
  if (tags.includes(SUSPECT_LOSS_TAG)) return SUSPECT_LOSS_TAG;
  if (tags.includes(PRE_RESTORE_TAG)) return PRE_RESTORE_TAG;
  if (tags.includes(PRE_DELETE_TAG)) return PRE_DELETE_TAG;
  if (isImport(s)) return "import";
  return undefined;
}

/**
 * Why a snapshot is kept outside the counting: special (unless `includeSpecial`), or a time that is
 * unreadable or after `now`. Empty when it counts.
 */
function outsideReasons(s: Snapshot, time: number, now: Date, opts: PolicyOptions): string[] {
  const out: string[] = [];
  const special = opts.includeSpecial ? undefined : specialReason(s);
  if (special) out.push(special);
  if (Number.isNaN(time)) out.push("unreadable time");
  else if (time > now.getTime()) out.push("in the future");
  return out;
}

const timeOf = (s: Snapshot): number => new Date(typeof s.time === "string" ? s.time : NaN).getTime();

type Member = { record: SnapshotRecord; time: number };

/** Snapshots grouped by host and roots, each group newest first. */
function groupsOf(members: Member[]): Member[][] {
  const groups = new Map<string, Member[]>();
  for (const m of members) {
    const key = JSON.stringify([m.record.snapshot.host, m.record.snapshot.roots]);
    let group = groups.get(key);
    if (!group) groups.set(key, (group = []));
    group.push(m);
  }
  const order = (t: number) => (Number.isNaN(t) ? -Infinity : t);
  for (const group of groups.values()) group.sort((a, b) => order(b.time) - order(a.time) || b.record.id.localeCompare(a.record.id));
  return [...groups.values()];
}

/**
 * What an agent's own age-based cleanup removed stays restorable whatever the policy, even with
 * includeSpecial: the snapshot its record names as `against` (the last one that holds those files)
 * is kept, and so is the snapshot with the record, without which the next forget would not know.
 * Forgetting either by id is still the user's to do.
 */
function keepCleanups(snapshots: SnapshotRecord[], add: (r: SnapshotRecord, why: string) => void): void {
  const byId = new Map(snapshots.map((r) => [r.id, r]));
  for (const record of snapshots) {
    const c = cleanupOf(record.snapshot);
    if (!c) continue;
    const holder = byId.get(c.against);
    const agents = c.agents.join(", ");
    add(record, `records ${agents}'s cleanup of ${c.sessions} session file(s)${holder ? `, kept in ${c.against.slice(0, 8)}` : ""}`);
    if (holder) add(holder, `holds ${c.sessions} session file(s) ${agents}'s cleanup removed (snapshot ${record.id.slice(0, 8)})`);
  }
}

/** A snapshot's cleanup record, checked field by field (a snapshot object is untrusted). */
function cleanupOf(s: Snapshot): { against: string; agents: string[]; sessions: number } | undefined {
  const c: unknown = s.cleanup;
  if (typeof c !== "object" || c === null) return undefined;
  const { against, agents } = c as { against?: unknown; agents?: unknown };
  if (typeof against !== "string" || !Array.isArray(agents)) return undefined;
  const valid = agents.filter((a): a is { agent: string; sessions: number } => typeof a?.agent === "string" && Number.isSafeInteger(a?.sessions));
  // eslint-disable-next-line no-control-regex
  const names = valid.map((a) => a.agent.replace(/[\u0000-\u001f\u007f]/g, "?").slice(0, 32));
  return { against, agents: [...new Set(names)], sessions: valid.reduce((n, a) => n + a.sessions, 0) };
}

/**
 * Decide, for every snapshot, keep (with the reasons) or remove. Special snapshots take no part in
 * the counting unless `includeSpecial`: a suspect-loss snapshot must not use up the hour whose real
 * data it would then push out. A snapshot whose time is unreadable or after `now` is kept and does
 * not count either: a hostile or skewed clock must not make `keepWithin` drop every real one.
 * This only decides: that a decision may empty a group is for `emptiedGroups` to find.
 */
export function applyPolicy(snapshots: SnapshotRecord[], policy: RetentionPolicy, now: Date, opts: PolicyOptions = {}): PolicyResult {
  validatePolicy(policy);
  const reasons = new Map<SnapshotRecord, string[]>();
  const add = (r: SnapshotRecord, why: string) => reasons.get(r)!.push(why);
  const counted: Member[] = [];
  for (const record of snapshots) {
    const s = record.snapshot;
    const time = timeOf(s);
    const outside = outsideReasons(s, time, now, opts);
    reasons.set(record, [...outside]);
    const tags = Array.isArray(s.tags) ? s.tags : [];
    for (const want of policy.keepTags ?? []) {
      if (want.split(",").every((t) => tags.includes(t.trim()))) add(record, `tag ${want}`);
    }
    if (!outside.length) counted.push({ record, time });
  }
  for (const group of groupsOf(counted)) {
    group.slice(0, policy.keepLast ?? 0).forEach((g) => add(g.record, "last"));
    if (policy.keepWithin && group.length) {
      const cutoff = subtractDuration(new Date(group[0].time), policy.keepWithin).getTime();
      for (const g of group) if (g.time >= cutoff) add(g.record, `within ${policy.keepWithin}`);
    }
    for (const [key, name, bucketOf] of BUCKETS) {
      let left = policy[key] ?? 0;
      let last: string | undefined;
      for (const g of group) {
        if (left <= 0) break;
        const bucket = bucketOf(new Date(g.time));
        if (bucket === last) continue;
        last = bucket;
        left--;
        add(g.record, name);
      }
    }
  }
  keepCleanups(snapshots, add);
  const result: PolicyResult = { keep: [], remove: [] };
  for (const record of snapshots) {
    const why = reasons.get(record)!;
    if (why.length) result.keep.push({ record, reasons: why });
    else result.remove.push({ record });
  }
  return result;
}

/** A host+roots group that a forget would leave without a snapshot (docs/RETENTION.md). */
export interface EmptiedGroup {
  host: string;
  roots: Snapshot["roots"];
  /** How many snapshots of the group count (see emptiedGroups). */
  snapshots: number;
  /** Its newest snapshot's id. */
  newest: string;
}

/**
 * The groups that removing the snapshots `remove` names would leave empty. For a policy, a group
 * is made of the snapshots the policy counts: special snapshots and ones with an unreadable or
 * future time are kept anyway, but they are not the group's newest truth (a pre-restore snapshot
 * left alone must not let a typo remove every real one). By id (`everySnapshot`), each snapshot of
 * the same host and roots counts: naming the last of them, special or not, empties the group.
 */
export function emptiedGroups(snapshots: SnapshotRecord[], remove: ReadonlySet<string>, now: Date, opts: PolicyOptions & { everySnapshot?: boolean } = {}): EmptiedGroup[] {
  const members = snapshots.map((record) => ({ record, time: timeOf(record.snapshot) })).filter((m) => opts.everySnapshot || !outsideReasons(m.record.snapshot, m.time, now, opts).length);
  return groupsOf(members)
    .filter((group) => group.every((m) => remove.has(m.record.id)))
    .map((group) => ({ host: group[0].record.snapshot.host, roots: group[0].record.snapshot.roots, snapshots: group.length, newest: group[0].record.id }));
}

// The text of a group is presentation: it lives with the CLI's other formatters.
export { emptiedGroupText } from "../present/retention.js";

/**
 * --unsafe-allow-remove-all by policy needs a host: it may empty that host's groups, never every
 * group of the repository at once (as restic requires a snapshot filter for it).
 */
export function assertRemoveAllScoped(opts: { allowRemoveAll?: boolean; host?: string; byIds?: boolean }): void {
  if (opts.allowRemoveAll && !opts.byIds && opts.host === undefined) {
    throw new RepoError("--unsafe-allow-remove-all needs --host when forgetting by policy: it may empty that host's groups, never the whole repository", "usage");
  }
}

export interface ForgetEntry {
  id: string;
  time: string;
  host: string;
  tags: string[];
}

export interface ForgetReport {
  dryRun: boolean;
  policy?: RetentionPolicy;
  ids?: string[];
  host?: string;
  keep: (ForgetEntry & { reasons: string[] })[];
  remove: ForgetEntry[];
  /** Snapshot objects deleted (0 in a dry run); equals remove.length when the run succeeded. */
  removed: number;
  /** Snapshot objects that could not be read: a policy leaves them alone (forget them by id). */
  unreadable: { id: string; error: string }[];
  /** Groups this forget empties (allowed by allowRemoveAll) or would empty (then it is `refused`). */
  emptiedGroups: EmptiedGroup[];
  /** It would have emptied a group without allowRemoveAll: nothing was forgotten. */
  refused: boolean;
}

export interface ForgetOptions extends PolicyOptions {
  policy?: RetentionPolicy;
  ids?: string[];
  dryRun?: boolean;
  host?: string;
  lockWaitMs?: number;
  now?: Date;
  /** Let the policy or the ids remove every snapshot of a group (--unsafe-allow-remove-all). */
  allowRemoveAll?: boolean;
}

const entry = (r: SnapshotRecord): ForgetEntry => ({ id: r.id, time: r.snapshot.time, host: r.snapshot.host, tags: Array.isArray(r.snapshot.tags) ? r.snapshot.tags : [] });

/** Snapshot ids (or unique prefixes of at least 4 hex digits) to full ids; all or nothing. */
function resolveIds(wanted: string[], all: string[]): string[] {
  const out = new Set<string>();
  for (const w of wanted) {
    const p = w.trim().toLowerCase();
    if (!/^[0-9a-f]{4,64}$/.test(p)) throw new RepoError(`"${w}" is not a snapshot id (4 to 64 hex digits)`, "usage");
    const hits = all.filter((id) => id.startsWith(p));
    if (hits.length === 0) throw new RepoError(`no snapshot ${w}; nothing was forgotten (list them with \`pi-guard snapshots\`)`, "not-found");
    if (hits.length > 1) throw new RepoError(`snapshot id ${w} is ambiguous (${hits.length} snapshots start with it); nothing was forgotten`, "usage");
    out.add(hits[0]);
  }
  return [...out];
}

/**
 * Delete the snapshot objects a policy does not keep, or the ones named by id. Under the exclusive
 * lock (a dry run: shared), so no restore is reading a snapshot as it goes. Each deletion is
 * checked: the object must be gone afterwards. If that would leave a host+roots group without a
 * snapshot, nothing at all is deleted (`refused`, the groups named) unless allowRemoveAll: a policy
 * that empties one group is likely wrong (a typo in keepTags) for the others too.
 */
export async function forget(repo: Repository, opts: ForgetOptions): Promise<ForgetReport> {
  const byIds = (opts.ids ?? []).length > 0;
  if (byIds && opts.policy) throw new RepoError("give snapshot ids or a policy, not both", "usage");
  if (!byIds && !opts.policy) throw new RepoError("nothing to forget by: give --keep-* options, --policy, or snapshot ids (forgetting every snapshot is never allowed)", "usage");
  if (opts.policy) validatePolicy(opts.policy);
  assertRemoveAllScoped({ ...opts, byIds });
  const dryRun = !!opts.dryRun;
  const lock = await acquireLock(repo, { mode: dryRun ? "shared" : "exclusive", command: "forget", waitMs: opts.lockWaitMs ?? 60_000 });
  try {
    const all = await repo.listSnapshots();
    const now = opts.now ?? new Date();
    const unreadable = repo.unreadableSnapshots;
    const inScope = opts.host === undefined ? all : all.filter((r) => r.snapshot.host === opts.host);
    let keep: ForgetReport["keep"];
    let remove: ForgetEntry[];
    if (byIds) {
      const ids = new Set(resolveIds(opts.ids!, await listSnapshotIds(repo.target)));
      const unreadableById = new Map(unreadable.map((u) => [u.id, u]));
      remove = all.filter((r) => ids.has(r.id)).map(entry);
      // A damaged snapshot object can be forgotten by id: that is the way to get rid of it.
      for (const id of ids) if (unreadableById.has(id)) remove.push({ id, time: "", host: "", tags: [] });
      if (opts.host !== undefined) {
        const other = remove.find((e) => e.host !== opts.host);
        if (other) throw new RepoError(`snapshot ${other.id.slice(0, 8)} is not from host ${opts.host}; nothing was forgotten`, "usage");
      }
      keep = inScope.filter((r) => !ids.has(r.id)).map((r) => ({ ...entry(r), reasons: ["not named"] }));
    } else {
      const decided = applyPolicy(inScope, opts.policy!, now, opts);
      keep = decided.keep.map((k) => ({ ...entry(k.record), reasons: k.reasons }));
      remove = decided.remove.map((r) => entry(r.record));
    }
    const emptied = emptiedGroups(byIds ? all : inScope, new Set(remove.map((r) => r.id)), now, { includeSpecial: opts.includeSpecial, everySnapshot: byIds });
    const refused = emptied.length > 0 && !opts.allowRemoveAll;
    let removed = 0;
    if (!dryRun && !refused) {
      for (const r of remove) {
        lock.assertHeld();
        await repo.target.delete(snapshotKey(r.id));
        if (await repo.target.head(snapshotKey(r.id))) throw new RepoError(`snapshot ${r.id.slice(0, 8)} is still there after deleting it; ${removed} of ${remove.length} forgotten`, "io");
        removed++;
      }
      lock.assertHeld();
      // The forget is done: a listing that failed to shrink only costs the next cold start.
      if (removed) await repo.consolidateListing({ after: "forget" }).catch((err: unknown) => repo.onWarning(`snapshot listing skipped: ${err instanceof Error ? err.message : String(err)}`));
    }
    return {
      dryRun,
      policy: opts.policy,
      ids: byIds ? opts.ids : undefined,
      host: opts.host,
      keep,
      remove,
      removed,
      unreadable: opts.host === undefined ? unreadable : [],
      emptiedGroups: emptied,
      refused,
    };
  } finally {
    await lock.release();
  }
}

/** "10%", "10" or "0.5%": the share of the kept packs' bytes prune may leave unused (default 10%). */
export function parseUnusedShare(value: string | undefined): number {
  if (value === undefined) return 0.1;
  const m = /^(\d{1,3}(?:\.\d+)?)%?$/.exec(value.trim());
  const pct = m ? Number(m[1]) : NaN;
  if (!(pct >= 0 && pct <= 100)) throw new RepoError(`--max-unused needs a percentage from 0% to 100%, not "${value}"`, "usage");
  return pct / 100;
}
