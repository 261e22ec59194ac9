// What can be learned about a repository without its key: the plaintext config (id, format) and
// the names of its snapshot objects. The sessions catalog uses this to tell, without a password,
// whether anything changed since it last looked.

import { ObjectNotFound, type Target } from "../targets/target.js";
import { RepoError } from "./errors.js";
import { CONFIG_KEY, FORMAT_VERSION, snapshotKey } from "./format.js";
import type { RepoConfig } from "./repository.js";

/**
 * The repository's plaintext config: its id, format and chunker parameters. Nothing is decrypted,
 * so no password is needed.
 */
export async function readRepoConfig(target: Target): Promise<RepoConfig> {
  let raw: Buffer;
  try {
    raw = await target.get(CONFIG_KEY);
  } catch (err) {
    if (err instanceof ObjectNotFound) {
      throw new RepoError(`no repository at ${target.location} (run \`pi-guard init\` first)`, "not-found");
    }
    throw err;
  }
  let config: RepoConfig;
  try {
    config = JSON.parse(raw.toString("utf8")) as RepoConfig;
  } catch {
    throw new RepoError(`${target.location}/config is not valid JSON`, "corrupt");
  }
  if (config.format !== "pi-guard") throw new RepoError(`${target.location} is not a pi-guard repository`, "corrupt");
  if (config.version > FORMAT_VERSION) {
    throw new RepoError(`repository format ${config.version} is newer than this pi-guard understands (${FORMAT_VERSION})`, "corrupt");
  }
  return config;
}

/** The ids of the snapshot objects: a listing only, nothing is read or decrypted. */
export async function listSnapshotIds(target: Target): Promise<string[]> {
  const ids: string[] = [];
  for await (const info of target.list(snapshotKey(""))) ids.push(info.key.slice(snapshotKey("").length));
  return ids;
}
