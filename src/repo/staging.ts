import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { pidAlive } from "../pid.js";

/**
 * Files a writer makes before they are complete (staging packs, `.tmp-` names of a local put) carry
 * an owner tag `<host>-<pid>-<random hex>`, so that with several writers at once (append locks,
 * docs/FORMAT.md §9) each can tell which leftovers belong to a writer that died.
 */
export function ownerTag(): string {
  return `${os.hostname()}-${process.pid}-${randomBytes(6).toString("hex")}`;
}

/** Staging files are named <owner tag>.pack. */
export function stagingName(): string {
  return `${ownerTag()}.pack`;
}

/**
 * True when `tag` (an owner tag, optionally followed by `.pack`) names a process of this host that
 * is gone. A tag of another host, or none at all (older names), is never known to be dead.
 */
export function ownerDead(tag: string): boolean {
  const m = /^(.*)-(\d+)-[0-9a-f]+(?:\.pack)?$/.exec(tag);
  if (!m || m[1] !== os.hostname()) return false;
  const pid = Number(m[2]);
  return Number.isSafeInteger(pid) && pid > 0 && !pidAlive(pid);
}

/** True when `tag` names a live process of this host (so its file may still be being written). */
export function ownerAlive(tag: string): boolean {
  const m = /^(.*)-(\d+)-[0-9a-f]+(?:\.pack)?$/.exec(tag);
  return !!m && m[1] === os.hostname() && !ownerDead(tag);
}

/**
 * Remove staging files whose process is gone (same host) or that are older than maxAgeMs
 * (0: every one, for a holder of the exclusive lock; Infinity: only those of dead writers).
 */
export async function cleanStaging(dir: string, maxAgeMs = 60 * 60 * 1000): Promise<number> {
  let removed = 0;
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const file = path.join(dir, name);
    const st = await fs.stat(file).catch(() => undefined);
    if (!st) continue;
    if (ownerDead(name) || Date.now() - st.mtimeMs >= maxAgeMs) {
      await fs.unlink(file).catch(() => undefined);
      removed++;
    }
  }
  return removed;
}
