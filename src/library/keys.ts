/**
 * The credentials that open a repository, as `pi-guard key …` manages them: each change goes to
 * every mirror of the config first and to the repository last, verified (src/repo/keys.ts), so
 * that no copy is left without a key; the caller hears per copy what happened (KeyPlace).
 */
import type { Config } from "../config/config.js";
import type { KeyInfo, KeyPlace } from "../repo/keys.js";
import type { Repository } from "../repo/repository.js";

export type { KeyPlace };

/** A key as `key list` shows it: its id, kind, creation, host, and whether it opened the repository now. */
export type KeyListing = KeyInfo & { current: boolean };

/** The mirrors of the config as targets (not the repository itself, when --repo names one). */
async function mirrorTargets(config: Config) {
  const { openTarget } = await import("../targets/open.js");
  return config.mirrors.filter((m) => m !== config.repo).map((m) => openTarget({ repo: m }));
}

/** Every key, and whether it is the one that opened `repo`. */
export async function listKeys(repo: Repository): Promise<KeyListing[]> {
  const keys = await (await import("../repo/keys.js")).listKeys(repo.target);
  return keys.map((k) => ({ ...k, current: k.id === repo.keyId }));
}

/** A new credential for the repository: a new key file (mode 0600) at `keyFile`, or `password`. */
export async function addKey(repo: Repository, cred: { keyFile: string } | { password: string }): Promise<{ id: string; kind: "password" | "keyfile" }> {
  const [{ addKey: add }, { createKeyFile }] = await Promise.all([import("../repo/keys.js"), import("../config/credentials.js")]);
  const c = "keyFile" in cred ? await createKeyFile(cred.keyFile) : { kind: "password" as const, password: cred.password, source: "new password" };
  return { id: await add(repo.target, repo.key, c), kind: c.kind };
}

/**
 * A recovery key in the repository and each mirror, whose code goes to `deliver` once: it is
 * recorded as kept off the machine only after `deliver` succeeded, never for a code nobody got.
 */
export async function exportRecoveryKey(config: Config, repo: Repository, deliver: (r: { keyId: string; code: string; places: KeyPlace[] }) => Promise<void>): Promise<{ keyId: string; places: KeyPlace[] }> {
  const [{ exportRecoveryKey: make }, { recordCredentialCopy }] = await Promise.all([import("../repo/keys.js"), import("../config/credentials.js")]);
  const r = await make(repo, await mirrorTargets(config));
  await deliver(r);
  await recordCredentialCopy(config.stateDir, { repoId: repo.config.id, keyId: r.keyId, kind: "recovery-code", time: new Date().toISOString() });
  return { keyId: r.keyId, places: r.places };
}

/** Revoke a key (an id or unique prefix) in each mirror, then the repository; never the last one, nor the current one unless allowCurrent. */
export async function removeKey(config: Config, repo: Repository, id: string, opts: { allowCurrent?: boolean } = {}): Promise<{ keyId: string; places: KeyPlace[] }> {
  return (await import("../repo/keys.js")).removeKey(repo, await mirrorTargets(config), id, opts);
}

/** A new password for the key in use: a new key added and checked everywhere, then the old one removed. */
export async function changePassword(config: Config, repo: Repository, password: string): Promise<{ oldKeyId: string; newKeyId: string; places: KeyPlace[] }> {
  return (await import("../repo/keys.js")).changePassword(repo, await mirrorTargets(config), password);
}
