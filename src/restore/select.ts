import { createRequire } from "node:module";
import { RepoError } from "../repo/errors.js";
import { isImport } from "../repo/format.js";
import type { SnapshotRecord } from "../repo/repository.js";

export const WHEN_HELP = 'use "latest", a snapshot id, an ISO time such as 2026-11-30T14:00, or a phrase such as "2h ago" or "yesterday 14:00"';

/** Parse a time expression; undefined when it is not one. */
export function parseTime(expr: string, now = new Date()): Date | undefined {
  const text = expr.trim();
  if (/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/.test(text)) {
    const t = new Date(text.length === 10 ? `${text}T23:59:59.999` : text);
    if (!Number.isNaN(t.getTime())) return t;
  }
  // chrono-node is large; only phrases like "2h ago" need it.
  const chrono = createRequire(import.meta.url)("chrono-node") as typeof import("chrono-node");
  const parsed = chrono.parseDate(text, now, { forwardDate: false });
  return parsed ?? undefined;
}

/** Tag of the snapshots an in-place restore takes of what it replaces. */
export const PRE_RESTORE_TAG = "pre-restore";

/**
 * Resolve `<when>` to a snapshot: "latest", an id prefix, or a time (newest snapshot at or before it).
 * `snapshots` must be sorted oldest first. "latest" skips pre-restore snapshots, so that
 * `restore latest` twice does not undo itself; name those by id or time (restore prints the id).
 * It also skips imported snapshots, whose time an archive chose; name those by id.
 * `unreadable` are ids of damaged snapshots, so that asking for one says so.
 */
export function selectSnapshot(
  snapshots: SnapshotRecord[],
  when: string,
  now = new Date(),
  unreadable: { id: string; error: string }[] = [],
): SnapshotRecord {
  const expr = when.trim();
  if (expr === "") throw new RepoError(`no time given: ${WHEN_HELP}`, "usage");
  if (/^[0-9a-f]{4,64}$/i.test(expr)) {
    const prefix = expr.toLowerCase();
    const hits = snapshots.filter((s) => s.id.startsWith(prefix));
    if (hits.length === 1) return hits[0];
    if (hits.length > 1) {
      throw new RepoError(`snapshot id ${expr} is ambiguous: ${hits.slice(0, 5).map((h) => h.id.slice(0, 12)).join(", ")}…`, "usage");
    }
    const damaged = unreadable.find((u) => u.id.startsWith(prefix));
    if (damaged) throw new RepoError(damaged.error, "corrupt");
    if (!/^\d+$/.test(expr)) throw new RepoError(`no snapshot has an id starting with ${expr}`, "not-found");
  }
  if (snapshots.length === 0) throw new RepoError("the repository has no snapshots yet", "not-found");
  if (expr === "latest") {
    // An import's time is the archive's claim (it may lie in the future): name imports by id.
    const own = snapshots.filter((s) => !isImport(s.snapshot));
    if (own.length === 0) {
      const ids = snapshots.slice(-3).map((s) => s.id.slice(0, 8)).join(", ");
      throw new RepoError(`"latest" never means an imported snapshot, and all snapshots here are imports: name one by id (${ids})`, "not-found");
    }
    const real = own.filter((s) => !s.snapshot.tags?.includes(PRE_RESTORE_TAG));
    const candidates = real.length ? real : own;
    return candidates[candidates.length - 1];
  }
  const time = parseTime(expr, now);
  if (!time) throw new RepoError(`cannot read "${when}" as a time: ${WHEN_HELP}`, "usage");
  let best: SnapshotRecord | undefined;
  for (const s of snapshots) if (Date.parse(s.snapshot.time) <= time.getTime()) best = s;
  if (!best) {
    throw new RepoError(
      `no snapshot at or before ${time.toISOString()}: the first snapshot is from ${snapshots[0].snapshot.time}`,
      "not-found",
    );
  }
  return best;
}
