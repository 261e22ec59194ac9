// Tags are pi-guard's own metadata (<dataDir>/tags.json), never written into pi's files. The file
// is small and rewritten atomically on every change.

import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { makeDirs } from "../fs-safe.js";

export type TagMap = Record<string, string[]>;

export function tagsFile(dataDir: string): string {
  return path.join(dataDir, "tags.json");
}

export async function readTags(dataDir: string): Promise<TagMap> {
  try {
    const value = JSON.parse(await fs.readFile(tagsFile(dataDir), "utf8")) as { sessions?: TagMap };
    return value?.sessions && typeof value.sessions === "object" ? value.sessions : {};
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw err;
  }
}

async function writeTags(dataDir: string, tags: TagMap): Promise<void> {
  const file = tagsFile(dataDir);
  await makeDirs(path.dirname(file), 0o700);
  const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  await fs.writeFile(tmp, JSON.stringify({ version: 1, sessions: tags }, null, 2) + "\n", { mode: 0o600 });
  await fs.rename(tmp, file);
}

/** Add (or with `remove`, drop) tags on one session; returns its tags afterwards. */
export async function changeTags(dataDir: string, sessionId: string, names: string[], remove = false): Promise<string[]> {
  const all = await readTags(dataDir);
  const current = new Set(all[sessionId] ?? []);
  for (const n of names) (remove ? current.delete(n) : current.add(n));
  if (current.size) all[sessionId] = [...current].sort();
  else delete all[sessionId];
  await writeTags(dataDir, all);
  return all[sessionId] ?? [];
}
