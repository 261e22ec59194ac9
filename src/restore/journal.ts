// Restore journals: what an in-place restore changed, so that `restore --undo` puts back exactly
// that and nothing written since. One JSON file per restore in <stateDir>/restores/, written
// before the first file is swapped in (the plan) and again when the restore is over (what landed,
// with each file's identity right after it landed). Why here and not in the pre-restore snapshot:
// the journal records the outcome, which is known only after that snapshot is written; it exists
// for a restore that takes no snapshot (one that only creates files) and for a read-only
// repository; and a file's identity (inode, ctime) is about this machine, not the repository.
// The file is ours but read as hostile: a malformed one is refused, never half trusted.
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import { makeDirs, syncDir, writeFully } from "../fs-safe.js";
import { RepoError } from "../repo/errors.js";
import type { Repository } from "../repo/repository.js";
import type { PlanItem, RestorePlan, RestoreReport } from "./restorer.js";
import type { MergeDone, SessionMerge } from "./session-rows.js";
import { lstatFile } from "./safe-path.js";

export type ChangeAction = "create" | "replace" | "delete";

/** A file's identity right after the restore put it there: any later write changes its ctime. */
export interface LandedFile {
  ino: number;
  size: number;
  ctimeMs: number;
}

export interface JournalChange {
  root: string;
  /** For people: the path (escaped when not UTF-8). */
  path: string;
  /** The tree's key for it (RestoreOptions.select). */
  key: string;
  action: ChangeAction;
  /** create and replace, once the file landed (absent: the restore did not get to record it). */
  landed?: LandedFile;
  /**
   * A replace that merged one session's rows into a live SQLite db instead of replacing the file
   * (session-rows.ts): the undo merges that session's rows back from the pre-restore snapshot, and
   * `digest` (its rows right after the merge; absent: not known) tells whether they changed since.
   */
  rows?: { agent: string; session: string; digest?: string };
}

export interface RestoreJournal {
  version: 1;
  id: string;
  time: string;
  /** The repository (location and id) the restore read. */
  repo: string;
  repoId: string;
  /** The snapshot restored, and the pre-restore snapshot of what it replaced (null: it replaced nothing). */
  snapshot: string;
  preRestore: string | null;
  /** Root name → folder, as they were at the restore. */
  roots: Record<string, string>;
  /** "started" until the restore is over: then `changes` holds only what it did change. */
  state: "started" | "done";
  changes: JournalChange[];
  undone: { time: string; snapshot: string | null } | null;
}

const MAX_JOURNAL_BYTES = 64 * 1024 * 1024;
const ID = /^\d{8}-\d{6}-[0-9a-f]{6}$/;

export const journalDir = (stateDir: string): string => path.join(stateDir, "restores");

/** A sortable, readable id: the UTC time of the restore and a random suffix (20261130-140512-a1b2c3). */
export function newJournalId(now = new Date()): string {
  const t = now.toISOString().replace(/[-:]/g, "");
  return `${t.slice(0, 8)}-${t.slice(9, 15)}-${randomBytes(3).toString("hex")}`;
}

/** The journal of an in-place restore about to carry out `plan` (state "started": its whole plan). */
export function newJournal(config: Config, repo: Repository, plan: RestorePlan, preRestore: string | undefined, merges: readonly SessionMerge[] = []): RestoreJournal {
  return {
    version: 1,
    id: newJournalId(),
    time: new Date().toISOString(),
    repo: config.repo,
    repoId: repo.config.id,
    snapshot: plan.record.id,
    preRestore: preRestore ?? null,
    roots: plan.opts.destinations,
    state: "started",
    changes: [...plan.items.filter(changes).map(changeOf), ...merges.map((m) => mergeChange(m))],
    undone: null,
  };
}

/**
 * Once the restore is over: only what it did change, each created or replaced file with its
 * identity right after it landed. A file that is not the snapshot's size by then was written to
 * meanwhile (pi appends to a live session): it gets no identity, so the undo will not take it
 * for untouched.
 */
export async function journalOutcome(journal: RestoreJournal, plan: RestorePlan, report: RestoreReport, merged: readonly MergeDone[] = []): Promise<RestoreJournal> {
  const done = new Set(report.files.filter((f) => f.action !== "unchanged").map((f) => `${f.root}\0${f.path}`));
  const out: JournalChange[] = [];
  for (const item of plan.items) {
    if (!changes(item) || !done.has(`${item.root}\0${item.rel}`)) continue;
    const change = changeOf(item);
    if (item.action !== "delete") {
      const st = await lstatFile(item.rootDir, item.comps).catch(() => undefined);
      if (st && (item.type !== "file" || st.size === (item.node!.size ?? 0))) change.landed = { ino: st.ino, size: st.size, ctimeMs: st.ctimeMs };
    }
    out.push(change);
  }
  for (const m of merged) out.push(mergeChange(m.merge, m.digest));
  return { ...journal, state: "done", changes: out };
}

const mergeChange = (m: SessionMerge, digest?: string): JournalChange => ({
  root: m.db.ref.root,
  path: m.db.ref.path,
  key: m.db.ref.path,
  action: "replace",
  rows: { agent: m.adapter.name, session: m.sessionId, ...(digest ? { digest } : {}) },
});

const changes = (item: PlanItem) => item.type !== "dir" && item.action !== "unchanged";
const changeOf = (item: PlanItem): JournalChange => ({ root: item.root, path: item.rel, key: item.key, action: item.action as ChangeAction });

/** Written to a temp file, fsynced and renamed: a crash leaves the old journal or the new one. */
export async function writeJournal(stateDir: string, journal: RestoreJournal): Promise<void> {
  const dir = journalDir(stateDir);
  await makeDirs(dir, 0o700);
  const file = path.join(dir, `${journal.id}.json`);
  const temp = `${file}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  const handle = await fs.open(temp, "wx", 0o600);
  try {
    try {
      await writeFully(handle, Buffer.from(JSON.stringify(journal, null, 1) + "\n"), 0);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, file);
  } catch (err) {
    await fs.unlink(temp).catch(() => undefined);
    throw err;
  }
  await syncDir(dir);
}

/**
 * The journal `which` names: its id (or a prefix of it), the id (prefix) of its pre-restore
 * snapshot, or "latest" (the newest restore not undone yet).
 */
export async function findJournal(stateDir: string, which: string): Promise<RestoreJournal> {
  const dir = journalDir(stateDir);
  const names = (await fs.readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith(".json") && ID.test(n.slice(0, -5))).sort();
  const want = which.trim().toLowerCase();
  if (want === "latest") {
    for (const name of names.reverse()) {
      const j = await readJournal(path.join(dir, name));
      if (!j.undone) return j;
    }
    throw new RepoError(`no in-place restore to undo: none is recorded in ${dir}, or all are undone`, "not-found");
  }
  if (!/^[0-9a-f-]{4,64}$/.test(want)) throw new RepoError(`--undo takes the id a restore printed (or "latest"), not "${which}"`, "usage");
  const byId = names.filter((n) => n.startsWith(want));
  if (byId.length > 1) throw new RepoError(`restore id ${which} is ambiguous: ${byId.slice(0, 4).map((n) => n.slice(0, -5)).join(", ")}`, "usage");
  if (byId.length === 1) return readJournal(path.join(dir, byId[0]));
  const hits: RestoreJournal[] = [];
  if (/^[0-9a-f]+$/.test(want)) {
    for (const name of names) {
      const j = await readJournal(path.join(dir, name));
      if (j.preRestore?.startsWith(want)) hits.push(j);
    }
  }
  if (hits.length === 1) return hits[0];
  if (hits.length > 1) throw new RepoError(`snapshot id ${which} names the pre-restore snapshot of several restores: use a restore id (${hits.map((h) => h.id).join(", ")})`, "usage");
  const recent = names.slice(-3).map((n) => n.slice(0, -5));
  throw new RepoError(`no restore ${which} is recorded in ${dir}${recent.length ? ` (recent: ${recent.join(", ")})` : ""}`, "not-found");
}

async function readJournal(file: string): Promise<RestoreJournal> {
  const bad = (why: string) => new RepoError(`restore journal ${file} ${why}`, "input");
  const st = await fs.stat(file);
  if (st.size > MAX_JOURNAL_BYTES) throw bad(`is larger than ${MAX_JOURNAL_BYTES} bytes`);
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, "utf8"));
  } catch {
    throw bad("is not valid JSON");
  }
  const j = raw as RestoreJournal;
  const str = (v: unknown) => typeof v === "string";
  const num = (v: unknown) => typeof v === "number" && Number.isFinite(v);
  if (!j || typeof j !== "object" || j.version !== 1 || !str(j.id) || !ID.test(j.id) || !str(j.time) || !str(j.repo) || !str(j.repoId) || !str(j.snapshot)) throw bad("is not a restore journal");
  if (j.preRestore !== null && !str(j.preRestore)) throw bad("has a bad preRestore");
  if (j.state !== "started" && j.state !== "done") throw bad("has a bad state");
  if (!j.roots || typeof j.roots !== "object" || !Object.values(j.roots).every(str)) throw bad("has bad roots");
  if (j.undone !== null && (typeof j.undone !== "object" || !str(j.undone.time) || (j.undone.snapshot !== null && !str(j.undone.snapshot)))) throw bad("has a bad undone field");
  const actions = new Set(["create", "replace", "delete"]);
  const okChange = (c: JournalChange) =>
    c &&
    str(c.root) &&
    str(c.path) &&
    str(c.key) &&
    actions.has(c.action) &&
    (c.landed === undefined || (num(c.landed.ino) && num(c.landed.size) && num(c.landed.ctimeMs))) &&
    (c.rows === undefined || (c.action === "replace" && typeof c.rows === "object" && str(c.rows.agent) && str(c.rows.session) && (c.rows.digest === undefined || str(c.rows.digest))));
  if (!Array.isArray(j.changes) || !j.changes.every(okChange)) throw bad("has bad changes");
  return j;
}
