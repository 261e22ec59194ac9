// One session of an agent that keeps its sessions in a SQLite database (opencode.db; Codex's
// state_5.sqlite, whose `threads` row lists a rollout), restored where that database lives now.
// The snapshot holds the whole database as of then: swapping it in would roll back every other
// session in it. Restoring only the session's rows is a merge into the live database; until that
// exists, such a restore is refused here, before anything is written. Where the database is not
// there (a wiped dir, --target), the unit's files are restored whole, which is correct. A --path
// restore whose units bring such a database the paths did not name is refused too.

import path from "node:path";
import picomatch from "picomatch";
import type { CopyRule, FileRef } from "../agents/types.js";
import { type FoundSession, shownName } from "../agents/find-session.js";
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
export function liveDatabases(plan: RestorePlan, files: readonly FileRef[], rules: readonly CopyRule[]): LiveDatabase[] {
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

export interface SessionRowsRequest {
  repo: Repository;
  snapshot: SnapshotRecord;
  session: FoundSession;
  /** The live databases the session's rows would go into. */
  databases: LiveDatabase[];
  plan: RestorePlan;
}

/**
 * Restore one session's rows into the live databases that hold other sessions too. Not available
 * yet: refused in one line (exit 1), saying what works instead. Nothing has been written.
 */
export async function restoreSessionRows(req: SessionRowsRequest): Promise<never> {
  const { session, databases } = req;
  const agent = session.adapter.name;
  throw new RepoError(
    `restoring one ${session.adapter.title} session into a live database is not available yet: ${shownName(databases[0].dest)} holds other sessions that replacing it would roll back; nothing was restored (restore the session into an empty folder with --target, or all of ${agent} with --agent ${agent})`,
    "exists",
  );
}
