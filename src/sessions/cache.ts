// pi-guard's own catalog cache under <dataDir>/catalog. Everything here can be rebuilt from the
// live files and the repository, so a damaged or stale file is simply ignored and rewritten.
// Files are written to a temp name and renamed: a crash leaves the old copy or the new one.

import { randomBytes } from "node:crypto";
import { promises as fs, readFileSync } from "node:fs";
import path from "node:path";
import { makeDirs } from "../fs-safe.js";

/** Bump when the shape of cached values changes; older files are then ignored. */
export const CATALOG_CACHE_VERSION = 8;

/**
 * Read synchronously: the cache is a local file read once per command, and a megabyte read
 * through the thread pool in chunks costs more in round trips than the read itself.
 */
export async function readJsonCache<T>(file: string): Promise<T | undefined> {
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as { version?: number; value?: T };
    return parsed?.version === CATALOG_CACHE_VERSION ? parsed.value : undefined;
  } catch {
    return undefined;
  }
}

export function writeJsonCache(file: string, value: unknown): Promise<void> {
  return writeCacheText(file, JSON.stringify({ version: CATALOG_CACHE_VERSION, value }));
}

/** Write a cache file atomically (temp name, rename), mode 0600. */
export async function writeCacheText(file: string, text: string): Promise<void> {
  try {
    await makeDirs(path.dirname(file), 0o700);
    const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
    await fs.writeFile(tmp, text, { mode: 0o600 });
    await fs.rename(tmp, file);
  } catch {
    // A cache that cannot be written only costs speed next time; never fail a command for it.
  }
}

/** A key -> value map persisted as one JSON file, written back only when something changed. */
export class JsonMapCache<V> {
  private map = new Map<string, V>();
  private used = new Set<string>();
  private dirty = false;

  private constructor(private readonly file: string) {}

  static async load<V>(file: string): Promise<JsonMapCache<V>> {
    const cache = new JsonMapCache<V>(file);
    const value = await readJsonCache<Record<string, V>>(file);
    if (value && typeof value === "object") cache.map = new Map(Object.entries(value));
    return cache;
  }

  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) this.used.add(key);
    return v;
  }

  set(key: string, value: V): void {
    this.map.set(key, value);
    this.used.add(key);
    this.dirty = true;
  }

  /** Write back; with `prune`, drop keys not used in this run (e.g. live files that changed). */
  async save(prune = false): Promise<void> {
    if (prune && this.used.size !== this.map.size) {
      for (const k of [...this.map.keys()]) if (!this.used.has(k)) this.map.delete(k);
      this.dirty = true;
    }
    if (this.dirty) await writeJsonCache(this.file, Object.fromEntries(this.map));
    this.dirty = false;
  }
}
