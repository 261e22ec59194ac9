// `restore --undo`: put back exactly what one in-place restore changed (its journal, journal.ts),
// and nothing written since. A file the restore replaced or deleted comes back from its
// pre-restore snapshot; a file it created is deleted; a session started after the restore is never
// looked at. Only files still as the restore left them are touched: one that changed since (pi
// appended to the restored session, say) is named and refused, unless --force, and then the
// current state is snapshotted first, so that even the forced undo can be undone.
import type { Stats } from "node:fs";
import { RepoError } from "../repo/errors.js";
import { ObjectNotFound } from "../targets/target.js";
import type { Repository } from "../repo/repository.js";
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
    const verdict = judge(c, st);
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
  const back = todo.filter((c) => c.action !== "create");
  const created = todo.filter((c) => c.action === "create");
  const report: RestoreReport = { snapshotId: journal.preRestore ?? journal.snapshot, files: [], failed: [], bytesWritten: 0, durationMs: 0 };
  if (back.length) {
    if (!journal.preRestore) throw new RepoError(`restore ${journal.id} recorded replaced files but no pre-restore snapshot: nothing was undone`, "input");
    const pre = journal.preRestore;
    const snapshot = await repo.loadSnapshotFromTarget(pre).catch((err) => {
      if (!(err instanceof ObjectNotFound)) throw err;
      throw new RepoError(`the pre-restore snapshot ${pre.slice(0, 8)} of restore ${journal.id} is not in the repository (forgotten?): nothing was undone`, "not-found");
    });
    const record = { id: pre, snapshot };
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
