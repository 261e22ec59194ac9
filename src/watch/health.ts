/**
 * What makes pi-guard unhealthy, decided in one place for `status`, `status --alert` and the
 * watcher's alerts (docs/OPERATIONS.md §3): each problem has a kind (and, for a mirror, a subject),
 * so that an alert fires when the set of problems changes, not when a count in a message does.
 * Kept free of heavy imports: the config loader reads its durations with parseDuration.
 */
import type { WatcherState, MirrorLag } from "./state.js";

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** "90s", "15m", "1h", "1h30m", "2d", "1ms" → milliseconds; undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d|w))+$/.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)) ms += Number(m[1]) * UNITS[m[2]];
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

export type ProblemKind =
  | "no-snapshot"
  | "suspect-loss"
  | "snapshot-too-old"
  | "watcher-failing"
  | "changes-pending"
  | "watcher-hung"
  | "mirror-behind"
  | "mirror-unreachable"
  | "job-failed";

export interface Problem {
  kind: ProblemKind;
  /** The mirror a mirror problem is about. */
  subject?: string;
  /** One line for a human. */
  message: string;
}

/** What an alert compares: a problem's kind and subject, not its wording. */
export const problemKey = (p: Pick<Problem, "kind" | "subject">): string => (p.subject === undefined ? p.kind : `${p.kind} ${p.subject}`);

/** The bounds (config `health`, docs/OPERATIONS.md). */
export interface HealthBounds {
  /** The last good snapshot may be this old; null: age alone never fails. */
  maxAgeMs: number | null;
  /** A mirror may lack a snapshot for this long. */
  mirrorMaxLagMs: number;
  /** The watcher may fail, or hold unsaved changes, for this long. */
  stuckAfterMs: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** "2m 30s"-like, for problem lines (the CLI has its own, richer formatAge). */
export function shortAge(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** A mirror lagging longer than the bound, or not reachable at all. */
export function mirrorProblem(m: MirrorLag, nowMs: number, bounds: Pick<HealthBounds, "mirrorMaxLagMs">): Problem | undefined {
  if (m.unreachable) return { kind: "mirror-unreachable", subject: m.mirror, message: `mirror ${m.mirror} cannot be reached, so how far behind it is is unknown: ${m.unreachable}` };
  if (!m.behind || !m.behindSince) return undefined;
  const lagMs = nowMs - Date.parse(m.behindSince);
  if (!(lagMs > bounds.mirrorMaxLagMs)) return undefined;
  const why = m.lastAttempt && !m.lastAttempt.ok && m.lastAttempt.error ? `: ${m.lastAttempt.error}` : "";
  return {
    kind: "mirror-behind",
    subject: m.mirror,
    message: `mirror ${m.mirror} is behind by ${m.behind} snapshot(s) since ${m.behindSince} (${shortAge(lagMs)}, more than ${shortAge(bounds.mirrorMaxLagMs)})${why}`,
  };
}

/**
 * The problems a watcher's state shows by itself: a suspected loss, attempts failing or changes
 * waiting longer than the bound, mirrors behind. (The age of the last good snapshot, and whether
 * the watcher runs at all, are for the caller: it knows the repository, or its own clock.)
 */
export function watcherProblems(s: Pick<WatcherState, "suspectLoss" | "failingSince" | "failures" | "lastError" | "pendingSince" | "mirrors">, nowMs: number, bounds: HealthBounds): Problem[] {
  const out: Problem[] = [];
  const loss = s.suspectLoss;
  if (loss) {
    out.push({
      kind: "suspect-loss",
      message: `the watcher reports a suspected loss since ${loss.since}: ${loss.filesNow} of ${loss.filesBefore} files left (snapshot ${loss.snapshot.slice(0, 8)}); \`pi-guard restore latest\` brings back the last good state`,
    });
  }
  const failingMs = s.failingSince ? nowMs - Date.parse(s.failingSince) : NaN;
  if (failingMs > bounds.stuckAfterMs) {
    out.push({
      kind: "watcher-failing",
      message: `the watcher's snapshots have been failing since ${s.failingSince} (${s.failures ?? "several"} attempts, more than ${shortAge(bounds.stuckAfterMs)})${s.lastError ? `: ${s.lastError.message}` : ""}`,
    });
  }
  const pendingMs = s.pendingSince ? nowMs - Date.parse(s.pendingSince) : NaN;
  if (pendingMs > bounds.stuckAfterMs) {
    out.push({ kind: "changes-pending", message: `changes made since ${s.pendingSince} (${shortAge(pendingMs)}, more than ${shortAge(bounds.stuckAfterMs)}) are in no snapshot yet` });
  }
  for (const m of s.mirrors ?? []) {
    const p = mirrorProblem(m, nowMs, bounds);
    if (p) out.push(p);
  }
  return out;
}

/**
 * A scheduled job whose last run failed (a refused retention, damage found by a check, a snapshot
 * that failed): the guard is not doing what it was set up to do until a run succeeds again.
 */
export function jobProblem(job: string, run: { ok: boolean; start: string; summary: string } | undefined): Problem | undefined {
  if (!run || run.ok) return undefined;
  return { kind: "job-failed", subject: job, message: `scheduled job ${job} failed at ${run.start}: ${run.summary}` };
}

/** The last good snapshot (taken at `timeMs`) is older than the bound. */
export function ageProblem(id: string, timeMs: number, nowMs: number, maxAgeMs: number | null): Problem | undefined {
  if (maxAgeMs === null || !(nowMs - timeMs > maxAgeMs)) return undefined;
  return { kind: "snapshot-too-old", message: `the last good snapshot (${id.slice(0, 8)}, ${iso(timeMs)}) is ${shortAge(nowMs - timeMs)} old, older than the max age of ${shortAge(maxAgeMs)}` };
}
