// The repository as the sessions catalog sees it: known by its plaintext id and its snapshot
// names, and unlocked only when something must be decrypted. A warm `sessions list` or `search`
// finds the same snapshot names as last time and never needs the key.

import { isRepoError } from "../repo/errors.js";
import { listSnapshotIds, readRepoId } from "../repo/peek.js";
import type { Repository } from "../repo/repository.js";
import type { Target } from "../targets/target.js";

export interface RepositorySource {
  /** The repository id from its plaintext config: names the catalog's cache folder. */
  readonly id: string;
  /** Names of the snapshot objects; nothing is read or decrypted. */
  snapshotIds(): Promise<string[]>;
  /** The unlocked repository (may ask for the password), opened once. */
  open(): Promise<Repository>;
}

/** The repository at `target`, unlocked on first use by `open`; null when there is none yet. */
export async function lazyRepository(target: Target, open: () => Promise<Repository>): Promise<RepositorySource | null> {
  let id: string;
  try {
    id = await readRepoId(target);
  } catch (err) {
    if (isRepoError(err) && err.kind === "not-found") return null;
    throw err;
  }
  let opened: Promise<Repository> | undefined;
  return { id, snapshotIds: () => listSnapshotIds(target), open: () => (opened ??= open()) };
}

/** A repository that is open already (commands that write to it anyway). */
export function openedRepository(repo: Repository): RepositorySource {
  return { id: repo.config.id, snapshotIds: () => listSnapshotIds(repo.target), open: async () => repo };
}
