/**
 * One watcher per agent dir: a lock file created with O_EXCL holding the owner's pid and process
 * start time. After `kill -9` the file stays behind; it is stale when that pid is gone or is now
 * another process (the start time differs: pids are reused), and the next watcher takes it over.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { makeDirs, writeFully } from "../fs-safe.js";
import { RepoError } from "../repo/errors.js";
import { pidAlive } from "../pid.js";

interface LockOwner {
  pid: number;
  host: string;
  /** Field 22 of /proc/<pid>/stat (clock ticks after boot); absent where there is no /proc. */
  procStart?: string;
  token: string;
  since: string;
}

export interface WatcherLock {
  release(): Promise<void>;
}

function procStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

function alive(owner: LockOwner): boolean {
  if (owner.host !== os.hostname()) return true; // cannot tell: a shared home on another machine
  if (!pidAlive(owner.pid)) return false;
  const now = procStart(owner.pid);
  return owner.procStart === undefined || now === undefined || now === owner.procStart;
}

function parseOwner(text: string): LockOwner | undefined {
  try {
    const o = JSON.parse(text) as Partial<LockOwner>;
    if (Number.isSafeInteger(o.pid) && (o.pid as number) > 0 && typeof o.host === "string" && typeof o.token === "string") return o as LockOwner;
  } catch {
    // fall through
  }
  return undefined;
}

/** Take the lock or throw a one-line RepoError naming the running watcher's pid. */
export async function acquireWatcherLock(file: string, agentDir: string): Promise<WatcherLock> {
  await makeDirs(path.dirname(file), 0o700);
  const me: LockOwner = { pid: process.pid, host: os.hostname(), procStart: procStart(process.pid), token: randomBytes(8).toString("hex"), since: new Date().toISOString() };
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      const handle = await fs.open(file, "wx", 0o600);
      try {
        await writeFully(handle, Buffer.from(JSON.stringify(me) + "\n"), 0);
        await handle.sync();
      } finally {
        await handle.close();
      }
      return { release: () => releaseLock(file, me.token) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw new RepoError(`cannot create the watcher lock ${file}: ${(err as Error).message}`, "io");
    }
    const text = await fs.readFile(file, "utf8").catch(() => undefined);
    if (text === undefined) continue; // released meanwhile
    const owner = parseOwner(text);
    if (owner && alive(owner)) {
      throw new RepoError(`another pi-guard watch (pid ${owner.pid}) is already watching ${agentDir}; stop it first (kill ${owner.pid})`, "locked");
    }
    if (!owner) {
      // Being written by a starting watcher, or left half-written by one that crashed.
      const age = Date.now() - ((await fs.stat(file).catch(() => undefined))?.mtimeMs ?? 0);
      if (age < 2000) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
    }
    await takeOver(file, text);
  }
  throw new RepoError(`cannot take the watcher lock ${file}: it keeps changing`, "locked");
}

/** Move the stale file aside; if what moved is not the file we judged stale, put it back. */
async function takeOver(file: string, staleText: string): Promise<void> {
  const aside = `${file}.stale-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    await fs.rename(file, aside);
  } catch {
    return; // someone else moved it first
  }
  const moved = await fs.readFile(aside, "utf8").catch(() => "");
  if (moved !== staleText) await fs.link(aside, file).catch(() => undefined);
  await fs.rm(aside, { force: true });
}

async function releaseLock(file: string, token: string): Promise<void> {
  const text = await fs.readFile(file, "utf8").catch(() => undefined);
  if (text !== undefined && parseOwner(text)?.token === token) await fs.rm(file, { force: true });
}
