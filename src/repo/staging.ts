import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";

/** Staging files are named <host>-<pid>-<random>.pack so leftovers of a killed process can be told apart. */
export function stagingName(): string {
  return `${os.hostname()}-${process.pid}-${randomBytes(6).toString("hex")}.pack`;
}

function ownerDead(name: string): boolean {
  const m = /^(.*)-(\d+)-[0-9a-f]+\.pack$/.exec(name);
  if (!m || m[1] !== os.hostname()) return false;
  try {
    process.kill(Number(m[2]), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== "EPERM";
  }
}

/** Remove staging files whose process is gone (same host) or that are older than maxAgeMs. */
export async function cleanStaging(dir: string, maxAgeMs = 60 * 60 * 1000): Promise<number> {
  let removed = 0;
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const file = path.join(dir, name);
    const st = await fs.stat(file).catch(() => undefined);
    if (!st) continue;
    if (ownerDead(name) || Date.now() - st.mtimeMs > maxAgeMs) {
      await fs.unlink(file).catch(() => undefined);
      removed++;
    }
  }
  return removed;
}
