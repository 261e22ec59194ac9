// `sessions delete`: a snapshot that holds the session (and pi-guard's tags) first, then the file
// is moved — never unlinked without a copy — into <dataDir>/trash/<time>--<id>/, next to a note of
// where it came from. The printed `pi-guard restore <snapshot id> --session ID` (or a move back)
// undoes it: it names the delete's own snapshot, because `latest` stops holding the session as
// soon as a later snapshot is taken.

import { promises as fs } from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import { snapshotAgentDir } from "../engine.js";
import { makeDirs } from "../fs-safe.js";
import { RepoError } from "../repo/errors.js";
import type { Repository } from "../repo/repository.js";
import type { SessionRecord } from "./catalog.js";
import { rootsWithMeta } from "./meta.js";

export interface DeleteResult {
  id: string;
  from: string;
  to: string;
  snapshotId: string;
  /** The command that brings the session back, whatever snapshots are taken later. */
  restoreCommand: string;
}

export function restoreCommandFor(snapshotId: string, sessionId: string): string {
  return `pi-guard restore ${snapshotId} --session ${sessionId}`;
}

export function trashDir(dataDir: string): string {
  return path.join(dataDir, "trash");
}

const sameFile = (a: { size: number; mtimeMs: number; ino: number }, b: typeof a) => a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino;

export async function deleteSession(config: Config, repo: Repository, session: SessionRecord, lockWaitMs?: number): Promise<DeleteResult> {
  const from = session.live;
  if (!from) throw new RepoError(`session ${session.id} is not on disk any more (only in snapshots): nothing to delete`, "not-found");
  const before = await fs.stat(from);
  const snap = await snapshotAgentDir(config, repo, { roots: await rootsWithMeta(config), tags: ["pre-delete"], lockWaitMs });
  // pi may have appended between the stat and the snapshot: then the snapshot may hold older bytes.
  if (!sameFile(before, await fs.stat(from))) {
    throw new RepoError(`session ${session.id} changed while it was being snapshotted (is pi still writing to it?); nothing was moved, try again`, "io");
  }
  const dir = path.join(trashDir(config.dataDir), `${new Date().toISOString().replace(/[:.]/g, "-")}--${session.id}`);
  const to = path.join(dir, path.basename(from));
  try {
    await makeDirs(dir, 0o700);
    await fs.writeFile(path.join(dir, "origin.json"), JSON.stringify({ id: session.id, path: from, snapshotId: snap.id, restoreCommand: restoreCommandFor(snap.id, session.id), deletedAt: new Date().toISOString() }, null, 2) + "\n", { mode: 0o600 });
    await moveFile(from, to);
  } catch (err) {
    throw new RepoError(`cannot move ${from} to ${to}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message} (snapshot ${snap.id.slice(0, 8)} holds it)`, "io");
  }
  return { id: session.id, from, to, snapshotId: snap.id, restoreCommand: restoreCommandFor(snap.id, session.id) };
}

/** rename, or across filesystems: copy, fsync, then remove the original. */
async function moveFile(from: string, to: string): Promise<void> {
  try {
    await fs.rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EXDEV") throw err;
    await fs.copyFile(from, to, fs.constants.COPYFILE_EXCL);
    const h = await fs.open(to, "r+");
    await h.sync().finally(() => h.close());
    await fs.unlink(from);
  }
  await syncDir(path.dirname(to));
  await syncDir(path.dirname(from));
}

/** Make a rename durable; filesystems that cannot fsync a folder still renamed atomically. */
async function syncDir(dir: string): Promise<void> {
  const h = await fs.open(dir, "r").catch(() => undefined);
  if (h) await h.sync().catch(() => undefined).finally(() => h.close());
}
