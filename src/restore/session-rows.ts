// One session of an agent that keeps its sessions in a SQLite database (opencode.db; Codex's
// state_5.sqlite, whose `threads` row lists a rollout), restored where that database lives now.
// The snapshot holds the whole database as of then: swapping it in would roll back every other
// session in it. Restoring only the session's rows is a merge into the live database
// (sqlite-merge.ts), with the adapter's description of which rows are one session's; a database
// without one is refused here, before anything is written. Where the database is not there (a
// wiped dir, --target), the unit's files are restored whole, which is correct. A --path restore
// whose units bring such a database the paths did not name is refused too.

import path from "node:path";
import picomatch from "picomatch";
import type { AgentAdapter, CopyRule, FileRef, SessionRows } from "../agents/types.js";
import { sessionRowsOf, type SqliteMergeReport } from "./sqlite-merge.js";
import { type FoundSession, shownName } from "../agents/find-session.js";
import type { Config } from "../config/config.js";
import { RepoError } from "../repo/errors.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { SQLITE_SIDE_SUFFIXES } from "../snapshot/sqlite-copy.js";
import type { RestorePlan } from "./restorer.js";

/** A database of the session's units that the plan would replace (or whose side files it would delete) where it is live. */
export interface LiveDatabase {
  ref: FileRef;
  /** Where it lives now. */
  dest: string;
}

/**
 * The SQLite databases (copy rule `sqlite-wal`) among `files` that `plan` would change where they
 * are now: the db replaced, or a -wal/-shm/-journal of it deleted. A db the plan creates (none
 * there) or leaves unchanged is not one.
 */
export function liveDatabases(plan: { items: readonly Pick<RestorePlan["items"][number], "root" | "rel" | "action" | "rootDir">[] }, files: readonly FileRef[], rules: readonly CopyRule[]): LiveDatabase[] {
  const sqlite = rules.filter((r) => r.kind === "sqlite-wal").map((r) => ({ root: r.root, match: picomatch(r.glob, { dot: true }) }));
  const isDb = (f: FileRef) => sqlite.some((r) => r.root === f.root && r.match(f.path)) && !SQLITE_SIDE_SUFFIXES.some((s) => f.path.endsWith(s));
  const out: LiveDatabase[] = [];
  for (const db of files.filter(isDb)) {
    const touched = plan.items.find(
      (i) => i.root === db.root && (i.rel === db.path || SQLITE_SIDE_SUFFIXES.some((s) => i.rel === db.path + s)) && (i.action === "replace" || i.action === "delete"),
    );
    if (touched) out.push({ ref: db, dest: path.join(touched.rootDir, db.path) });
  }
  return out;
}

/** The copy rules of `adapter` where it is now (which of its files are SQLite databases): what liveDatabases takes. */
export function copyRulesOf(config: Pick<Config, "agents">, adapter: AgentAdapter): readonly CopyRule[] {
  const location = config.agents.find((a) => a.location.agent === adapter.name)?.location;
  return location ? adapter.copyRules(location) : [];
}

/**
 * A --path restore whose units bring a live database the paths did not name (a Codex rollout's
 * state_5.sqlite): replacing it would roll back the other sessions it lists, which nobody asked
 * for. Refused before anything is written; naming the database in --path too replaces it (saved
 * first, undoable).
 */
export function refuseLiveCompanions(live: readonly LiveDatabase[], why: string): void {
  if (!live.length) return;
  throw new RepoError(
    `the files --path names come back with ${shownName(live[0].ref.path)} (${shownName(why)}), and replacing the live ${shownName(live[0].dest)} would roll back its other sessions; nothing was restored (name it in --path too to replace it, or restore into --target)`,
    "exists",
  );
}

/** One session's rows to merge into one live database (sqlite-merge.ts), instead of replacing it. */
export interface SessionMerge {
  db: LiveDatabase;
  rows: SessionRows;
  adapter: AgentAdapter;
  sessionId: string;
}

/**
 * The merges a --session restore makes instead of replacing live databases: each database of
 * `live` with the adapter's description of a session's rows (AgentAdapter.sessionRows). One
 * without a description cannot be restored for one session without rolling back the others: that
 * restore is refused in one line, before anything is written.
 */
export function sessionMerges(session: FoundSession, live: readonly LiveDatabase[]): SessionMerge[] {
  return live.map((db) => {
    const rows = sessionRowsOf(session.adapter, db.ref);
    if (!rows) {
      const agent = session.adapter.name;
      throw new RepoError(
        `restoring one ${session.adapter.title} session into the live ${shownName(db.dest)} is not possible: which of its rows are one session's is not described for ${agent}, and replacing it would roll back its other sessions; nothing was restored (restore the session into an empty folder with --target, or all of ${agent} with --agent ${agent})`,
        "exists",
      );
    }
    return { db, rows, adapter: session.adapter, sessionId: session.meta.id };
  });
}

/** The plan without what it would do to the merged databases: each is merged, not replaced, and its side files stay. */
export function withoutMerged(plan: RestorePlan, merges: readonly SessionMerge[]): RestorePlan {
  const merged = (root: string, rel: string) => merges.some((m) => m.db.ref.root === root && (rel === m.db.ref.path || SQLITE_SIDE_SUFFIXES.some((s) => rel === m.db.ref.path + s)));
  const items = plan.items.filter((i) => !merged(i.root, i.rel));
  const changes = items.filter((i) => i.type !== "dir" && i.action !== "unchanged").length;
  return { ...plan, items, changes };
}

/** A merge carried out (or counted), with the digest of the session's rows after it (a real one only). */
export interface MergeDone {
  merge: SessionMerge;
  report: SqliteMergeReport;
  digest?: string;
}

/**
 * Carry out (or with `dryRun` count) the merges, each from a private copy of the snapshot's
 * database: the live database ends up holding exactly the snapshot's rows of the session, and no
 * other session's row changes. Returns each merge's report and, after a real merge, the digest of
 * the session's rows the restore journal records (the undo's "changed since" test).
 */
export async function applyMerges(
  repo: Repository,
  snapshot: SnapshotRecord,
  merges: readonly SessionMerge[],
  opts: { dryRun?: boolean },
): Promise<MergeDone[]> {
  if (!merges.length) return [];
  const [{ SnapshotReader }, { snapshotFiles }] = await Promise.all([import("./snapshot-reader.js"), import("../agents/files.js")]);
  const reader = await SnapshotReader.open(repo);
  try {
    const files = await snapshotFiles(reader, { ...snapshot.snapshot, id: snapshot.id });
    const out: MergeDone[] = [];
    for (const merge of merges) {
      const copy = await files.materialize([merge.db.ref]);
      try {
        out.push(await mergeFrom(merge, copy.path(merge.db.ref), opts));
      } finally {
        await copy.dispose();
      }
    }
    return out;
  } finally {
    await reader.close();
  }
}

/** One merge from `snapshotCopy`, a private copy of the snapshot's database (any engine's: a native snapshot's, restic's staged file). */
export async function mergeFrom(merge: SessionMerge, snapshotCopy: string, opts: { dryRun?: boolean }): Promise<MergeDone> {
  const { mergeSessionRows, sessionRowsDigest } = await import("./sqlite-merge.js");
  const report = mergeSessionRows({ rows: merge.rows, snapshotCopy, live: merge.db.dest, sessionId: merge.sessionId, dryRun: opts.dryRun });
  return { merge, report, ...(opts.dryRun ? {} : { digest: sessionRowsDigest(merge.rows, merge.db.dest, merge.sessionId) }) };
}
