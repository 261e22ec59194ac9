/** Writing and reading the watcher's state file (the contract is in state.ts). */
import { promises as fs } from "node:fs";
import path from "node:path";
import { makeDirs, syncDir, writeFully } from "../fs-safe.js";
import type { WatcherState } from "./state.js";

/** Temp file, full write, fsync, rename: a reader sees the old state or the new one, never half. */
export function writeWatcherState(file: string, state: WatcherState): Promise<void> {
  return writeJsonFile(file, state);
}

/** The same for any small JSON file of the state dir (the alert file), mode 0600. */
export async function writeJsonFile(file: string, value: unknown): Promise<void> {
  await makeDirs(path.dirname(file), 0o700);
  const tmp = `${file}.tmp-${process.pid}`;
  const handle = await fs.open(tmp, "w", 0o600);
  try {
    await writeFully(handle, Buffer.from(JSON.stringify(value, null, 2) + "\n"), 0);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  await fs.rename(tmp, file);
  await syncDir(path.dirname(file));
}

/**
 * The state file, if there is one that looks like a WatcherState. Hostile input: anything that
 * is not an object with the version and a pid is treated as absent.
 */
export async function readWatcherState(file: string): Promise<WatcherState | undefined> {
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, "utf8"));
  } catch {
    return undefined;
  }
  if (typeof raw !== "object" || raw === null) return undefined;
  const s = raw as Partial<WatcherState>;
  if (s.version !== 1 || !Number.isSafeInteger(s.pid) || (s.pid as number) <= 0) return undefined;
  return s as WatcherState;
}
