// What can be learned about a repository without its key: the plaintext config (id, format) and
// the names of its snapshot objects. The sessions catalog uses this to tell, without a password,
// whether anything changed since it last looked.

import { listNames, ObjectNotFound, type Target } from "../targets/target.js";
import { RepoError } from "./errors.js";
import { CONFIG_KEY, FORMAT_VERSION } from "./format-version.js";
import type { RepoConfig } from "./repository.js";
import { holds, int, object, ShapeProblem, string } from "./shape.js";

/** Bounds on `config` (docs/FORMAT.md §2): anyone who can write the repository can write it. */
export const CONFIG_BOUNDS = {
  chunkMin: 64,
  /** A chunk is one blob, and frames and packs record lengths in u32 fields: far below that. */
  chunkMax: 8 * 1024 * 1024,
  packMin: 1024 * 1024,
  packMax: 1024 * 1024 * 1024,
};

const ID_PATTERN = /^[0-9a-f]{32}$/;

async function parseConfigBytes(target: Target): Promise<Record<string, unknown>> {
  let raw: Buffer;
  try {
    raw = await target.get(CONFIG_KEY);
  } catch (err) {
    if (err instanceof ObjectNotFound) {
      throw new RepoError(`no repository at ${target.location} (run \`pi-guard init\` first)`, "not-found");
    }
    throw err;
  }
  let config: unknown;
  try {
    config = JSON.parse(raw.toString("utf8"));
  } catch {
    throw new RepoError(`${target.location}/config is not valid JSON`, "corrupt");
  }
  if (typeof config !== "object" || config === null) throw new RepoError(`${target.location}/config is not a JSON object`, "corrupt");
  const c = config as Record<string, unknown>;
  if (c.format !== "pi-guard") throw new RepoError(`${target.location} is not a pi-guard repository`, "corrupt");
  if (typeof c.version === "number" && c.version > FORMAT_VERSION) {
    throw new RepoError(`repository format ${c.version} is newer than this pi-guard understands (${FORMAT_VERSION})`, "corrupt");
  }
  return c;
}

/**
 * The repository id alone, without loading the validator: the sessions catalog reads it on every
 * run to name its cache folder (so it must be plain hex), and never uses the other parameters.
 */
export async function readRepoId(target: Target): Promise<string> {
  const { id } = await parseConfigBytes(target);
  if (typeof id !== "string" || !ID_PATTERN.test(id)) throw new RepoError(`${target.location}/config: id is not 32 hex digits`, "corrupt");
  return id;
}

/**
 * The repository's plaintext config: its id, format and chunker parameters, validated and bounded
 * so that a hostile config cannot hang the chunker or make it allocate gigabytes. Nothing is
 * decrypted, so no password is needed.
 */
export async function readRepoConfig(target: Target): Promise<RepoConfig> {
  const raw = await parseConfigBytes(target);
  try {
    return repoConfigShape(raw);
  } catch (err) {
    if (!(err instanceof ShapeProblem)) throw err;
    throw new RepoError(`${target.location}/config: ${err.describe("(top level)")}`, "corrupt");
  }
}

/** The config's fields checked and bounded (docs/FORMAT.md §2); unknown fields pass: `version` guards them. */
function repoConfigShape(c: Record<string, unknown>): RepoConfig {
  const b = CONFIG_BOUNDS;
  holds(c.format === "pi-guard", ["format"], 'expected "pi-guard"');
  int(c.version, ["version"], 1, FORMAT_VERSION);
  string(c.id, ["id"], ID_PATTERN, "not 32 hex digits");
  string(c.created, ["created"]);
  const chunkers = object(c.chunker, ["chunker"], ["data", "tree", "list"]);
  for (const which of ["data", "tree", "list"] as const) {
    if (which === "list" && chunkers.list === undefined) continue; // written before the tree list
    const path = ["chunker", which];
    const k = object(chunkers[which], path, ["min", "avg", "max"]);
    const min = int(k.min, [...path, "min"], b.chunkMin);
    const avg = int(k.avg, [...path, "avg"]);
    const max = int(k.max, [...path, "max"], undefined, b.chunkMax);
    holds(min < avg && avg < max, path, "needs min < avg < max");
    holds((avg & (avg - 1)) === 0, path, "avg must be a power of two");
  }
  int(c.packSize, ["packSize"], b.packMin, b.packMax);
  return c as unknown as RepoConfig;
}

/** The ids of the snapshot objects: a listing only, nothing is read or decrypted. */
export async function listSnapshotIds(target: Target): Promise<string[]> {
  return listNames(target, "snapshots");
}
