// Tags are pi-guard's own metadata (<dataDir>/meta/tags.json), never written into pi's files. The
// file is small and rewritten atomically on every change. It sits in the meta folder (meta.ts) so
// snapshots can back it up without taking the repository along.

import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { makeDirs } from "../fs-safe.js";
import { RepoError } from "../repo/errors.js";
import { metaDir } from "./meta.js";

export type TagMap = Record<string, string[]>;

export function tagsFile(dataDir: string): string {
  return path.join(metaDir(dataDir), "tags.json");
}

export async function readTags(dataDir: string): Promise<TagMap> {
  try {
    const value = JSON.parse(await fs.readFile(tagsFile(dataDir), "utf8")) as { sessions?: TagMap };
    return value?.sessions && typeof value.sessions === "object" ? value.sessions : {};
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return {};
    throw new RepoError(`cannot read ${tagsFile(dataDir)}: ${code ?? (err as Error).message}`, "io");
  }
}

async function writeTags(dataDir: string, tags: TagMap): Promise<void> {
  const file = tagsFile(dataDir);
  const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await makeDirs(path.dirname(file), 0o700);
    await fs.writeFile(tmp, JSON.stringify({ version: 1, sessions: tags }, null, 2) + "\n", { mode: 0o600 });
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    throw new RepoError(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, "io");
  }
}

// Tags are typed on a command line and shown as #tag: keep them to one shell word.
const TAG = /^[\p{L}\p{N}_.:+/-]{1,64}$/u;

export function checkTagNames(names: string[]): string[] {
  if (names.length === 0) throw new RepoError("no tag given (e.g. `pi-guard sessions tag ID python`)", "usage");
  for (const n of names) {
    if (!TAG.test(n)) throw new RepoError(`"${n}" is not a tag: use 1-64 letters, digits or _ . : + / -`, "usage");
  }
  return names;
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
