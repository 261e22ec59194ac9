import { makeDirs, writeFully } from "../fs-safe.js";
import { writeFileAtomic } from "../agents/pi/writer.js";
import { promises as fs } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { RepoError } from "../repo/errors.js";
import type { Credentials } from "../repo/keys.js";
import type { Config } from "./config.js";

/**
 * Find the credential to open a repository with, in restic's order: a password file, then
 * PI_GUARD_PASSWORD, then pi-guard's key file. Prompting is the CLI's business, not ours.
 */
export async function resolveCredentials(config: Config): Promise<Credentials | undefined> {
  if (config.passwordFile) {
    let text: string;
    try {
      text = await fs.readFile(config.passwordFile, "utf8");
    } catch {
      throw new RepoError(`cannot read password file ${config.passwordFile}`, "no-password");
    }
    const password = text.replace(/\r?\n$/, "");
    if (!password) throw new RepoError(`password file ${config.passwordFile} is empty`, "no-password");
    return { kind: "password", password, source: `password file ${config.passwordFile}` };
  }
  if (config.password !== undefined) {
    if (!config.password) throw new RepoError("PI_GUARD_PASSWORD is set but empty", "no-password");
    return { kind: "password", password: config.password, source: "PI_GUARD_PASSWORD" };
  }
  return readKeyFile(config.keyFile);
}

export async function readKeyFile(file: string): Promise<Credentials | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new RepoError(`cannot read key file ${file}: ${(err as NodeJS.ErrnoException).code}`, "no-password");
  }
  const secret = Buffer.from(text.trim(), "base64");
  if (secret.length !== 32) throw new RepoError(`key file ${file} is not a pi-guard key file (expected 32 bytes in base64)`, "corrupt");
  return { kind: "keyfile", secret, path: file };
}

/** Create a new key file (mode 0600); refuses to overwrite one, which may be the only way into a repo. */
export async function createKeyFile(file: string): Promise<Credentials> {
  await makeDirs(path.dirname(file), 0o700);
  const secret = randomBytes(32);
  let handle;
  try {
    handle = await fs.open(file, "wx", 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") {
      throw new RepoError(`key file ${file} already exists; it may open another repository, so it is kept`, "exists");
    }
    throw err;
  }
  try {
    try {
      await writeFully(handle, Buffer.from(secret.toString("base64") + "\n"), 0);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (err) {
    // A cut-short key file would be kept by the next init ("already exists") and open nothing.
    await fs.unlink(file).catch(() => undefined);
    throw err;
  }
  return { kind: "keyfile", secret, path: file };
}

/**
 * The error when resolveCredentials found nothing. A key file the user named explicitly and that
 * does not exist is the likely mistake, so it is named rather than asking for a password.
 */
export function noCredentialsError(config: Config): RepoError {
  if (config.keyFileSource) return new RepoError(`key file ${config.keyFile} (from ${config.keyFileSource}) does not exist (a password repository needs PI_GUARD_PASSWORD or PI_GUARD_PASSWORD_FILE instead)`, "no-password");
  return new RepoError(NO_CREDENTIALS_HINT, "no-password");
}

export const NO_CREDENTIALS_HINT =
  "no password: set PI_GUARD_PASSWORD or PI_GUARD_PASSWORD_FILE, or use the key file made by `pi-guard init`";

// ---------------------------------------------------------------------------------------------
// What pi-guard knows about copies of a credential kept off this machine: `key export` records
// each recovery key it printed, and `doctor` warns while a repository has none whose key still
// exists. The file holds ids and times only, never a secret: <stateDir>/credential-copies.json.

export interface CredentialCopy {
  /** The repository (config id) the key opens, and the key object's id. */
  repoId: string;
  keyId: string;
  /** "recovery-code": printed once by `key export`. */
  kind: "recovery-code";
  time: string;
}

export const credentialCopiesFile = (stateDir: string): string => path.join(stateDir, "credential-copies.json");

/** A bound on the file: it is ours, but anyone who can write the state dir can make it huge. */
const COPIES_MAX_BYTES = 1024 * 1024;
const COPIES_KEPT = 1000;

/** The records, each one checked; a missing, oversized or damaged file is no record (never an error). */
export async function readCredentialCopies(stateDir: string): Promise<CredentialCopy[]> {
  const file = credentialCopiesFile(stateDir);
  const size = await fs.stat(file).then((st) => st.size, () => 0);
  if (size === 0 || size > COPIES_MAX_BYTES) return [];
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, "utf8"));
  } catch {
    return [];
  }
  const copies = (raw as { copies?: unknown })?.copies;
  if (!Array.isArray(copies)) return [];
  return copies.filter(
    (c): c is CredentialCopy =>
      !!c && typeof c === "object" && /^[0-9a-f]{32}$/.test(c.repoId) && /^[0-9a-f]{64}$/.test(c.keyId) && c.kind === "recovery-code" && typeof c.time === "string" && Number.isFinite(Date.parse(c.time)),
  );
}

/** Add one record: the file is rewritten whole (temp file, fsync, rename), the newest 1000 kept. */
export async function recordCredentialCopy(stateDir: string, copy: CredentialCopy): Promise<void> {
  const copies = [...(await readCredentialCopies(stateDir)), copy].slice(-COPIES_KEPT);
  await writeFileAtomic(credentialCopiesFile(stateDir), JSON.stringify({ version: 1, copies }, null, 2) + "\n", { overwrite: true, mode: 0o600, mkdir: true });
}
