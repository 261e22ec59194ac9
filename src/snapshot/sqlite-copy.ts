// A consistent copy of a live SQLite database (opencode.db, Codex's state_5.sqlite), taken without
// touching the agent's dir. Opening the live db, even read-only, would create or write its -wal and
// -shm there (a WAL reader writes read marks into -shm, and creates both when they are missing), so
// the live files are only ever read as bytes:
//   1. the db, then its -wal (or -journal), are copied into a private folder in pi-guard's staging
//      dir; the -shm is not: it is only an index of the WAL, which SQLite rebuilds from the WAL;
//   2. the db's stat (inode, size, mtime, ctime) before the copy and after the WAL's tells whether a
//      checkpoint wrote the db meanwhile. That is harmless while the WAL keeps one generation (its
//      header unchanged: every page the checkpoint wrote is still a frame of the copied WAL); after
//      a WAL restart the copy is taken again (bounded attempts). A WAL that grew meanwhile is
//      harmless too: frames carry checksums and salts, so SQLite's recovery of the copy keeps
//      exactly the transactions committed in what was read;
//   3. the copy is opened there (SQLite recovers the WAL into it) and written out through SQLite's
//      online backup API, a step of pages at a time, into one self-contained file with no side files;
//   4. that file must pass `PRAGMA integrity_check`, or the database is reported corrupt.
// Memory stays bounded (the kernel copies the files; the backup moves STEP_PAGES pages at a time),
// and so does time: the deadline is checked between attempts and between backup steps.

import type Database from "better-sqlite3";
import { sqlite, sqlIdent } from "../sqlite.js";
import { randomBytes } from "node:crypto";
import { constants, promises as fs, type Stats } from "node:fs";
import os from "node:os";
import path from "node:path";
import { RepoError } from "../repo/errors.js";
import { ownerDead } from "../repo/staging.js";

/** The files SQLite keeps beside a database, by suffix. A restore of the db must not leave old ones. */
export const SQLITE_SIDE_SUFFIXES = ["-wal", "-shm", "-journal"] as const;

/** The db a side file belongs to ("opencode.db-wal" → "opencode.db"), or undefined. */
export function sqliteDbOf(file: string): string | undefined {
  const suffix = SQLITE_SIDE_SUFFIXES.find((s) => file.endsWith(s) && file.length > s.length);
  return suffix ? file.slice(0, -suffix.length) : undefined;
}

export const DEFAULT_SQLITE_COPY_TIMEOUT_MS = 60_000;
const DEFAULT_ATTEMPTS = 10;
const STEP_PAGES = 256;
/** As the snapshotter's RACY_MS: a change within one clock tick of the last may leave the times as they were. */
const RACY_MS = 20;

export interface SqliteCopyOptions {
  /** pi-guard's staging dir (the repository's, never the agent's): copies go in a private folder under it. */
  stagingDir: string;
  timeoutMs?: number;
  /** Copies taken before giving up on a db that a checkpoint rewrites during every one. */
  attempts?: number;
  /** Count this table's rows in the copy (SqliteCopy.rows); a db without it has no count. */
  countRows?: string;
}

export interface SqliteCopy {
  /** The consistent copy: one file, no side files. */
  path: string;
  size: number;
  /** How many copies it took (1 unless a checkpoint ran during the first). */
  attempts: number;
  /** The pages the backup copied. */
  pages: number;
  /** With `countRows`: that table's rows in the copy, when it has the table. */
  rows?: { table: string; count: number };
  dispose(): Promise<void>;
}

/** A db that could not be copied consistently in time: the snapshot names it as skipped, it does not store a torn copy. */
export class SqliteBusy extends Error {}

const sameStat = (a: Stats, b: Stats) => a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;

const sqliteCode = (err: unknown): string => String((err as { code?: unknown })?.code ?? "");
const isCorruption = (err: unknown) => /^SQLITE_(CORRUPT|NOTADB)/.test(sqliteCode(err));

/** The db's stat once its ctime is older than a clock tick, so that a later write shows in it. */
async function settledStat(file: string): Promise<Stats> {
  let st = await fs.lstat(file);
  for (let waits = 0; waits < 5; waits++) {
    const age = Date.now() - st.ctimeMs;
    if (age >= RACY_MS || age < -1000) break;
    await new Promise((r) => setTimeout(r, RACY_MS - age + 1));
    st = await fs.lstat(file);
  }
  return st;
}

/** Copies `from` into `to` (a new file), refusing a symlink; false when `from` does not exist. */
async function copyIfThere(from: string, to: string): Promise<boolean> {
  let src;
  try {
    src = await fs.open(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
  try {
    if (!(await src.stat()).isFile()) return false;
    const dst = await fs.open(to, "wx", 0o600);
    try {
      // A block at a time: the WAL may grow while it is read, and what was read is a prefix SQLite can use.
      const buf = Buffer.allocUnsafe(1 << 20);
      for (let pos = 0; ; ) {
        const { bytesRead } = await src.read(buf, 0, buf.length, pos);
        if (bytesRead === 0) break;
        for (let off = 0; off < bytesRead; ) off += (await dst.write(buf, off, bytesRead - off, pos + off)).bytesWritten;
        pos += bytesRead;
      }
    } finally {
      await dst.close();
    }
    return true;
  } finally {
    await src.close();
  }
}

const WAL_HEADER = 32;

/** The WAL's header (magic, page size, checkpoint sequence, salts, checksum) and size, or undefined without a WAL. */
async function walHeader(file: string): Promise<{ header: Buffer; size: number } | undefined> {
  const h = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => undefined);
  if (!h) return undefined;
  try {
    const header = Buffer.alloc(WAL_HEADER);
    const { bytesRead } = await h.read(header, 0, WAL_HEADER, 0);
    return bytesRead === WAL_HEADER ? { header, size: (await h.stat()).size } : undefined;
  } finally {
    await h.close();
  }
}

/**
 * Whether a checkpoint that wrote the db during the copy is harmless: the WAL kept one generation
 * throughout (the same header, salts and checkpoint sequence, before the db was copied, in the
 * copy, and after it) and did not shrink. Every page the checkpoint wrote is then still a frame in
 * the copied WAL, which SQLite replays over the copied db; only a WAL restart, which overwrites
 * those frames, would leave a half-checkpointed db without them.
 */
async function sameWal(before: { header: Buffer; size: number } | undefined, copied: string, live: string): Promise<boolean> {
  if (!before) return false;
  const [mine, now] = [await walHeader(copied), await walHeader(live)];
  return !!mine && !!now && mine.header.equals(before.header) && now.header.equals(before.header) && mine.size >= before.size && now.size >= before.size;
}

/** Removes copy folders left by pi-guard processes that died mid-copy. */
async function cleanDeadCopies(base: string): Promise<void> {
  for (const name of await fs.readdir(base).catch(() => [] as string[])) {
    if (ownerDead(name)) await fs.rm(path.join(base, name), { recursive: true, force: true });
  }
}

/**
 * A consistent copy of the SQLite database at `dbPath` as it was at one commit, in a private folder
 * under `opts.stagingDir`. Throws RepoError "corrupt" for a file SQLite cannot read or whose copy
 * fails `integrity_check`, SqliteBusy when every attempt saw the db rewritten, ENOENT when it is gone.
 */
export async function copySqlite(dbPath: string, opts: SqliteCopyOptions): Promise<SqliteCopy> {
  const deadline = Date.now() + (opts.timeoutMs ?? DEFAULT_SQLITE_COPY_TIMEOUT_MS);
  const attempts = opts.attempts ?? DEFAULT_ATTEMPTS;
  const base = path.join(opts.stagingDir, "sqlite");
  await fs.mkdir(base, { recursive: true, mode: 0o700 });
  await cleanDeadCopies(base);
  const dir = path.join(base, `${os.hostname()}-${process.pid}-${randomBytes(6).toString("hex")}`);
  await fs.mkdir(dir, { mode: 0o700 });
  const dispose = () => fs.rm(dir, { recursive: true, force: true });
  try {
    const raw = path.join(dir, "raw.db");
    for (let attempt = 1; ; attempt++) {
      if (Date.now() > deadline) throw new SqliteBusy(`${dbPath}: rewritten by a checkpoint during every copy for ${opts.timeoutMs ?? DEFAULT_SQLITE_COPY_TIMEOUT_MS} ms`);
      for (const f of await fs.readdir(dir)) await fs.rm(path.join(dir, f), { force: true });
      const before = await settledStat(dbPath);
      if (!before.isFile()) throw Object.assign(new Error(`${dbPath}: not a regular file`), { code: "ENOENT" });
      const walBefore = await walHeader(`${dbPath}-wal`);
      if (!(await copyIfThere(dbPath, raw))) throw Object.assign(new Error(`${dbPath}: gone`), { code: "ENOENT" });
      // After the db: frames a checkpoint had not yet written into the db are still in the WAL.
      await copyIfThere(`${dbPath}-wal`, `${raw}-wal`);
      await copyIfThere(`${dbPath}-journal`, `${raw}-journal`);
      const after = await fs.lstat(dbPath).catch(() => undefined);
      if (after && (sameStat(before, after) || (await sameWal(walBefore, `${raw}-wal`, `${dbPath}-wal`)))) {
        return { ...(await backupCopy(dbPath, raw, path.join(dir, "copy.db"), deadline, opts.countRows)), attempts: attempt, dispose };
      }
      if (attempt >= attempts) throw new SqliteBusy(`${dbPath}: rewritten by a checkpoint during each of ${attempts} copies`);
      await new Promise((r) => setTimeout(r, 10 * attempt));
    }
  } catch (err) {
    await dispose();
    throw err;
  }
}

/** Opens the raw copy (SQLite recovers its WAL), backs it up into `out` and checks the result. */
async function backupCopy(dbPath: string, raw: string, out: string, deadline: number, countRows?: string): Promise<{ path: string; size: number; pages: number; rows?: { table: string; count: number } }> {
  const corrupt = (why: string) => new RepoError(`${dbPath}: not a sound SQLite database (${why})`, "corrupt");
  let pages = 0;
  let db: Database | undefined;
  try {
    db = new (sqlite())(raw, { fileMustExist: true });
    const done = await db.backup(out, {
      progress: (p) => {
        if (Date.now() > deadline) throw new SqliteBusy(`${dbPath}: the backup did not finish in time`);
        pages = p.totalPages;
        return STEP_PAGES;
      },
    });
    pages = done.totalPages;
  } catch (err) {
    if (isCorruption(err)) throw corrupt(String((err as Error).message));
    throw err;
  } finally {
    db?.close();
  }
  let check: Database | undefined;
  let rows: { table: string; count: number } | undefined;
  try {
    check = new (sqlite())(out, { fileMustExist: true });
    const result = check.pragma("integrity_check", { simple: true });
    if (result !== "ok") throw corrupt(`integrity_check: ${String(result).split("\n")[0]}`);
    if (countRows !== undefined) rows = countTable(check, countRows);
  } catch (err) {
    if (isCorruption(err)) throw corrupt(String((err as Error).message));
    throw err;
  } finally {
    check?.close();
  }
  // Opening the output may have made side files of its own in the staging folder; the copy is the db alone.
  for (const s of SQLITE_SIDE_SUFFIXES) await fs.rm(out + s, { force: true });
  return { path: out, size: (await fs.stat(out)).size, pages, ...(rows ? { rows } : {}) };
}

/** A table's row count, or undefined when the db has no such table (an older or newer schema). */
function countTable(db: Database, table: string): { table: string; count: number } | undefined {
  const there = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table);
  if (!there) return undefined;
  const row = db.prepare(`SELECT count(*) AS n FROM ${sqlIdent(table)}`).get() as { n: number };
  return { table, count: Number(row.n) };
}
