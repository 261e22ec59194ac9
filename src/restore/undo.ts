// `restore --undo`: put back exactly what one in-place restore changed (its journal, journal.ts),
// and nothing written since. A file the restore replaced or deleted comes back from its
// pre-restore snapshot; a file it created is deleted; a session started after the restore is never
// looked at. Only files still as the restore left them are touched: one that changed since (pi
// appended to the restored session, say) is named and refused, unless --force, and then the
// current state is snapshotted first, so that even the forced undo can be undone.
import type { Stats } from "node:fs";
import path from "node:path";
import type { SessionRows } from "../agents/types.js";
import { RepoError } from "../repo/errors.js";
import { ObjectNotFound } from "../targets/target.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import type { JournalChange, RestoreJournal } from "./journal.js";
import { applyRestore, deleteFile, failure, planRestore, type RestoreReport } from "./restorer.js";
import { type FsPath, lstatFile, nodeComponents, resolveDestRoot } from "./safe-path.js";

export interface UndoCheck {
  /** Still as the restore left them: the undo may change these. */
  ready: JournalChange[];
  /** Changed since the restore (or not known to be as it left them), with why. A file the restore created that is gone already is in neither. */
  changed: { change: JournalChange; why: string }[];
}

const keyOf = (root: string, key: string) => `${root}\0${key}`;

function components(c: JournalChange): FsPath[] {
  return nodeComponents(c.key === c.path ? { path: c.path } : { path: c.path, pathBytes: c.key });
}

/**
 * The journal's roots must still be where the current configuration puts them: the undo writes
 * into the folders the restore wrote into, or nowhere.
 */
export function checkRoots(journal: RestoreJournal, destinations: Record<string, string>): void {
  for (const [root, dir] of Object.entries(journal.roots)) {
    if (!journal.changes.some((c) => c.root === root)) continue;
    if (destinations[root] !== dir) {
      throw new RepoError(`restore ${journal.id} wrote into ${dir} (root ${root}), which is ${destinations[root] ? `now ${destinations[root]}` : "not configured now"}: nothing was undone`, "usage");
    }
  }
}

/** Sort the journal's changes by whether the file is still as the restore left it. */
export async function checkUndo(journal: RestoreJournal): Promise<UndoCheck> {
  const out: UndoCheck = { ready: [], changed: [] };
  for (const c of journal.changes) {
    let st: Stats | undefined;
    try {
      st = await lstatFile(await resolveDestRoot(journal.roots[c.root]), components(c));
    } catch (err) {
      out.changed.push({ change: c, why: failure(c.path, c.root, err).error });
      continue;
    }
    const verdict = c.rows && st?.isFile() ? await judgeRows(journal, c) : judge(c, st);
    if (verdict === "ready") out.ready.push(c);
    else if (verdict !== "gone") out.changed.push({ change: c, why: verdict });
  }
  return out;
}

/** "ready", "gone" (a created file removed since: nothing to undo), or why the file is not as the restore left it. */
function judge(c: JournalChange, st: Stats | undefined): string {
  if (c.action === "delete") return st ? "a file is there again since the restore deleted it" : "ready";
  if (!st) return c.action === "create" ? "gone" : "deleted since the restore";
  if (!c.landed) return "not known to be as the restore left it (it was written to meanwhile, or the restore was interrupted)";
  if (st.isDirectory()) return "a folder is there now";
  const same = st.ino === c.landed.ino && st.size === c.landed.size && st.ctimeMs === c.landed.ctimeMs;
  return same ? "ready" : "changed since the restore";
}

/** The description of a merged session's rows (session-rows.ts), by the journal's agent. */
async function rowsSpecOf(c: JournalChange): Promise<SessionRows> {
  const [{ findAgent }, { sessionRowsOf }] = await Promise.all([import("../agents/registry.js"), import("./sqlite-merge.js")]);
  const adapter = c.rows ? findAgent(c.rows.agent) : undefined;
  const spec = adapter && sessionRowsOf(adapter, c);
  if (!spec) throw new RepoError(`the restore merged session rows into ${c.path} for agent ${c.rows?.agent}, which this pi-guard has no description of`, "input");
  return spec;
}

/** A merged session: "ready" while its rows are as the merge left them (they have no file identity of their own). */
async function judgeRows(journal: RestoreJournal, c: JournalChange): Promise<string> {
  if (!c.rows?.digest) return "not known to be as the restore left it (the merge did not get to record it)";
  const { sessionRowsDigest } = await import("./sqlite-merge.js");
  const now = sessionRowsDigest(await rowsSpecOf(c), dbPath(journal, c), c.rows.session);
  return now === c.rows.digest ? "ready" : `session ${c.rows.session}'s rows changed since the restore`;
}

const dbPath = (journal: RestoreJournal, c: JournalChange) => path.join(journal.roots[c.root], ...c.path.split("/"));

/**
 * Undo merges: each session's rows back as the pre-restore snapshot's db holds them (none, when
 * the restore brought a deleted session back), no other session's row touched.
 */
async function undoMerges(repo: Repository, record: SnapshotRecord, journal: RestoreJournal, merged: JournalChange[], report: RestoreReport): Promise<void> {
  const [{ SnapshotReader }, { snapshotFiles }, { mergeSessionRows }] = await Promise.all([import("./snapshot-reader.js"), import("../agents/files.js"), import("./sqlite-merge.js")]);
  const reader = await SnapshotReader.open(repo);
  try {
    const files = await snapshotFiles(reader, { ...record.snapshot, id: record.id });
    for (const c of merged) {
      const ref = { root: c.root, path: c.path };
      try {
        if (!(await files.stat(ref))) throw new RepoError(`not in the pre-restore snapshot ${record.id.slice(0, 8)}`, "not-found");
        const copy = await files.materialize([ref]);
        try {
          mergeSessionRows({ rows: await rowsSpecOf(c), snapshotCopy: copy.path(ref), live: dbPath(journal, c), sessionId: c.rows!.session, absentDeletes: true });
        } finally {
          await copy.dispose();
        }
        report.files.push({ path: c.path, root: c.root, action: "replace", size: 0, dest: dbPath(journal, c) });
      } catch (err) {
        if (!(err instanceof RepoError)) throw err;
        report.failed.push({ path: c.path, root: c.root, error: err.message, kind: err.kind === "corrupt" || err.kind === "not-found" ? "damaged" : "io" });
      }
    }
  } finally {
    await reader.close();
  }
}

/** What an undo would do, for --dry-run: the inverse of each change. */
export function undoPreview(journal: RestoreJournal, todo: JournalChange[]): RestoreReport {
  const inverse = { create: "delete", replace: "replace", delete: "create" } as const;
  const files = todo.map((c) => ({ path: c.path, root: c.root, action: inverse[c.action], size: 0, dest: `${journal.roots[c.root]}/${c.path}` }));
  return { snapshotId: journal.preRestore ?? journal.snapshot, files, failed: [], bytesWritten: 0, durationMs: 0 };
}

/**
 * Carry out the undo of `todo` (from checkUndo): the replaced and deleted files back from the
 * pre-restore snapshot, then the created ones deleted. Every path is either done (in `files`) or
 * listed in `failed`.
 */
export async function applyUndo(repo: Repository, journal: RestoreJournal, todo: JournalChange[], signal?: AbortSignal): Promise<RestoreReport> {
  const started = Date.now();
  const back = todo.filter((c) => c.action !== "create" && !c.rows);
  const merged = todo.filter((c) => c.rows);
  const created = todo.filter((c) => c.action === "create");
  const report: RestoreReport = { snapshotId: journal.preRestore ?? journal.snapshot, files: [], failed: [], bytesWritten: 0, durationMs: 0 };
  if (back.length || merged.length) {
    if (!journal.preRestore) throw new RepoError(`restore ${journal.id} recorded replaced files but no pre-restore snapshot: nothing was undone`, "input");
    const pre = journal.preRestore;
    const snapshot = await repo.loadSnapshotFromTarget(pre).catch((err) => {
      if (!(err instanceof ObjectNotFound)) throw err;
      throw new RepoError(`the pre-restore snapshot ${pre.slice(0, 8)} of restore ${journal.id} is not in the repository (forgotten?): nothing was undone`, "not-found");
    });
    const record = { id: pre, snapshot };
    await undoMerges(repo, record, journal, merged, report);
    if (back.length) {
      const wanted = new Set(back.map((c) => keyOf(c.root, c.key)));
      const plan = await planRestore(repo, record, { destinations: journal.roots, select: (root, key) => wanted.has(keyOf(root, key)), durable: true });
      for (const item of plan.items) wanted.delete(keyOf(item.root, item.key));
      const done = await applyRestore(repo, { ...plan, opts: { ...plan.opts, signal } });
      report.files.push(...done.files);
      report.failed.push(...done.failed);
      report.bytesWritten += done.bytesWritten;
      for (const c of back) {
        if (wanted.has(keyOf(c.root, c.key))) report.failed.push({ path: c.path, root: c.root, error: `not in the pre-restore snapshot ${pre.slice(0, 8)}`, kind: "damaged" });
      }
    }
  }
  // Each root's folder is resolved before anything is deleted: a root may lie behind a link that
  // the restore created (a sessions symlink, sessions-root.ts) and that this undo deletes first.
  const rootDirs = new Map<string, Promise<string>>();
  for (const c of created) if (!rootDirs.has(c.root)) rootDirs.set(c.root, resolveDestRoot(journal.roots[c.root]));
  for (const p of rootDirs.values()) p.catch(() => undefined);
  for (const c of created) {
    signal?.throwIfAborted();
    try {
      const rootDir = await rootDirs.get(c.root)!;
      if (await deleteFile({ rootDir, comps: components(c) })) report.files.push({ path: c.path, root: c.root, action: "delete", size: 0, dest: `${rootDir}/${c.path}` });
    } catch (err) {
      report.failed.push(failure(c.path, c.root, err));
    }
  }
  report.durationMs = Date.now() - started;
  return report;
}
