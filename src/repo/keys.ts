import os from "node:os";
import { randomBytes } from "node:crypto";
import { calibrateScrypt, decrypt, deriveFromKeyFile, deriveFromPassword, encrypt, scryptParamsProblem, type ScryptParams } from "./crypto.js";
import { RepoError } from "./errors.js";
import { AAD, CONFIG_KEY, keyKey } from "./format.js";
import type { Repository } from "./repository.js";
import { holds, number, object, oneOf, ShapeProblem, string } from "./shape.js";
import { listNames, ObjectNotFound, type Target } from "../targets/target.js";

/** The secrets of a repository. Generated once by `init`; only ever stored wrapped in keys/. */
export interface MasterKey {
  /** AES-256-GCM key for every object and blob. */
  encryption: Buffer;
  /** HMAC-SHA-256 key for blob ids. */
  id: Buffer;
  /** Seeds the chunker's gear table. */
  chunkerSeed: Buffer;
}

export type Credentials =
  | { kind: "password"; password: string; source: string }
  | { kind: "keyfile"; secret: Buffer; path: string };

/** keys/<id>: plaintext JSON, the master key sealed with a key derived from one credential. */
interface KeyObject {
  kdf: "scrypt" | "hkdf";
  scrypt?: ScryptParams;
  salt: string;
  created: string;
  host: string;
  user: string;
  data: string;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const base64 = (v: unknown, path: string[]) => string(v, path, BASE64, "not base64");

/** A key object's fields (unknown fields are dropped); throws a ShapeProblem. */
function keyObjectShape(v: unknown): KeyObject {
  const o = object(v, []);
  const kdf = oneOf(o.kdf, ["kdf"], ["scrypt", "hkdf"] as const);
  let scrypt: ScryptParams | undefined;
  if (o.scrypt !== undefined) {
    const p = object(o.scrypt, ["scrypt"], ["N", "r", "p"]);
    scrypt = { N: number(p.N, ["scrypt", "N"]), r: number(p.r, ["scrypt", "r"]), p: number(p.p, ["scrypt", "p"]) };
  }
  const salt = base64(o.salt, ["salt"]);
  holds(Buffer.from(salt, "base64").length >= 16, ["salt"], "salt shorter than 16 bytes");
  const obj: KeyObject = { kdf, ...(scrypt ? { scrypt } : {}), salt, created: string(o.created, ["created"]), host: string(o.host, ["host"]), user: string(o.user, ["user"]), data: base64(o.data, ["data"]) };
  if (kdf === "scrypt") {
    holds(!!scrypt, ["scrypt"], "missing for kdf scrypt");
    const problem = scryptParamsProblem(scrypt!);
    holds(!problem, ["scrypt"], problem ?? "");
  }
  return obj;
}

/** The master key as sealed inside a key object: three base64 strings of 32 bytes. */
function masterKeyShape(v: unknown): MasterKey {
  const o = object(v, [], ["encryption", "id", "chunkerSeed"]);
  const bytes = (name: "encryption" | "id" | "chunkerSeed") => {
    const b = Buffer.from(base64(o[name], [name]), "base64");
    holds(b.length === 32, [name], "not 32 bytes");
    return b;
  };
  return { encryption: bytes("encryption"), id: bytes("id"), chunkerSeed: bytes("chunkerSeed") };
}

export function newMasterKey(): MasterKey {
  return { encryption: randomBytes(32), id: randomBytes(32), chunkerSeed: randomBytes(32) };
}

async function wrappingKey(cred: Credentials, obj: Pick<KeyObject, "kdf" | "scrypt" | "salt">): Promise<Buffer> {
  const salt = Buffer.from(obj.salt, "base64");
  if (obj.kdf === "scrypt") {
    if (cred.kind !== "password" || !obj.scrypt) throw new Error("unreachable: scrypt key with a key file");
    return deriveFromPassword(cred.password, salt, obj.scrypt);
  }
  if (cred.kind !== "keyfile") throw new Error("unreachable: hkdf key with a password");
  return deriveFromKeyFile(cred.secret, salt);
}

const kdfOf = (cred: Credentials): KeyObject["kdf"] => (cred.kind === "password" ? "scrypt" : "hkdf");

/**
 * Wrap the master key for one credential and store it as keys/<random id>. Returns the key id.
 * Password keys are calibrated (see calibrateScrypt) unless `scrypt` is given.
 */
export async function addKey(target: Target, master: MasterKey, cred: Credentials, opts: { scrypt?: ScryptParams } = {}): Promise<string> {
  const base = {
    kdf: kdfOf(cred),
    scrypt: cred.kind === "password" ? (opts.scrypt ?? (await calibrateScrypt())) : undefined,
    salt: randomBytes(16).toString("base64"),
  };
  const wrap = await wrappingKey(cred, base);
  const plain = Buffer.from(
    JSON.stringify({
      encryption: master.encryption.toString("base64"),
      id: master.id.toString("base64"),
      chunkerSeed: master.chunkerSeed.toString("base64"),
    }),
  );
  const id = randomBytes(32).toString("hex");
  const obj: KeyObject = {
    ...base,
    created: new Date().toISOString(),
    host: os.hostname(),
    user: os.userInfo().username,
    data: encrypt(wrap, plain, AAD.key(id)).toString("base64"),
  };
  await target.put(keyKey(id), Buffer.from(JSON.stringify(obj, null, 2) + "\n"));
  return id;
}

/** One object under keys/, parsed and validated but not opened. */
export type KeyEntry = { id: string; obj: KeyObject; problem?: undefined } | { id: string; obj?: undefined; problem: string };

/** Parse and validate a key object's bytes; never throws. */
export async function parseKeyObject(id: string, raw: Buffer): Promise<KeyEntry> {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString("utf8"));
  } catch {
    return { id, problem: "not valid JSON" };
  }
  try {
    return { id, obj: keyObjectShape(json) };
  } catch (err) {
    if (err instanceof ShapeProblem) return { id, problem: err.describe() };
    throw err;
  }
}

/** Every object under keys/, each parsed on its own: one damaged key never hides the others. */
export async function readKeyEntries(target: Target): Promise<KeyEntry[]> {
  const out: KeyEntry[] = [];
  for await (const info of target.list("keys")) {
    const id = info.key.slice("keys/".length);
    let raw: Buffer;
    try {
      raw = await target.get(info.key);
    } catch (err) {
      // Removed since the listing: not a key any more. Unreadable (permissions): as good as damaged.
      if (err instanceof ObjectNotFound) continue;
      out.push({ id, problem: `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` });
      continue;
    }
    out.push(await parseKeyObject(id, raw));
  }
  return out;
}

/** The master key inside `obj` if `cred` opens it; undefined when it does not (or it is damaged). */
async function openKeyObject(id: string, obj: KeyObject, cred: Credentials): Promise<MasterKey | undefined> {
  let plain: Buffer;
  try {
    plain = decrypt(await wrappingKey(cred, obj), Buffer.from(obj.data, "base64"), "key", AAD.key(id));
  } catch (err) {
    if (err instanceof RepoError) return undefined;
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(plain.toString("utf8"));
  } catch {
    return undefined;
  }
  try {
    return masterKeyShape(json);
  } catch (err) {
    if (err instanceof ShapeProblem) return undefined;
    throw err;
  }
}

export interface KeyInfo {
  id: string;
  kdf: KeyObject["kdf"];
  created: string;
  host: string;
  user: string;
}

export async function listKeys(target: Target): Promise<KeyInfo[]> {
  const out: KeyInfo[] = [];
  for (const e of await readKeyEntries(target)) {
    // A damaged key object is not a key: `check` names it.
    if (e.obj) out.push({ id: e.id, kdf: e.obj.kdf, created: e.obj.created, host: e.obj.host, user: e.obj.user });
  }
  return out.sort((a, b) => a.created.localeCompare(b.created));
}

const count = (n: number, what: string) => (n === 0 ? `no ${what}s` : n === 1 ? `1 ${what}` : `${n} ${what}s`);

/**
 * Try every usable key object that fits the credential's kind; the first that opens wins. Key
 * objects that cannot be used (damaged, absurd scrypt parameters, another credential) are skipped.
 * A password that reads as a recovery code typed by hand (other case, spaces) is tried once more as
 * the code `key export` printed.
 */
export async function unlock(target: Target, cred: Credentials): Promise<{ master: MasterKey; keyId: string }> {
  const wanted = kdfOf(cred);
  const entries = await readKeyEntries(target);
  const typed = cred.kind === "password" ? canonicalRecoveryCode(cred.password) : undefined;
  const tries = typed && cred.kind === "password" && typed !== cred.password ? [cred, { ...cred, password: typed }] : [cred];
  for (const attempt of tries) {
    for (const e of entries) {
      if (!e.obj || e.obj.kdf !== wanted) continue;
      const master = await openKeyObject(e.id, e.obj, attempt);
      if (master) return { master, keyId: e.id };
    }
  }
  const passwords = entries.filter((e) => e.obj?.kdf === "scrypt").length;
  const keyFiles = entries.filter((e) => e.obj?.kdf === "hkdf").length;
  const damaged = entries.length - passwords - keyFiles;
  const what = cred.kind === "keyfile" ? `key file ${cred.path}` : cred.source === "prompt" ? "the password entered" : `the password from ${cred.source}`;
  const has = `it has ${count(passwords, "password key")} and ${count(keyFiles, "key-file key")}${damaged ? ` (and ${count(damaged, "damaged key object")}: run \`pi-guard check\`)` : ""}`;
  const hint =
    (cred.kind === "password" ? passwords : keyFiles) > 0
      ? cred.kind === "password"
        ? "wrong password?"
        : "is it the key file of another repository?"
      : cred.kind === "password"
        ? "open it with its key file (--key-file or PI_GUARD_KEY_FILE)"
        : "open it with its password (PI_GUARD_PASSWORD or PI_GUARD_PASSWORD_FILE)";
  throw new RepoError(`${what} does not open the repository at ${target.location}: ${has}; ${hint}`, "wrong-password");
}

// ---------------------------------------------------------------------------------------------
// Recovery codes, revoking keys and changing a password, in the repository and in its mirrors
// (every replica holds the same key objects, docs/FORMAT.md §14).

/** A recovery code: 128 random bits as 8 groups of 4 hex digits. It is a password key's password. */
export function newRecoveryCode(): string {
  return randomBytes(16).toString("hex").match(/.{4}/g)!.join("-");
}

/** A code as typed from paper (any case, spaces or dashes anywhere) in the form printed, or undefined. */
export function canonicalRecoveryCode(text: string): string | undefined {
  const hex = text.replace(/[\s-]/g, "").toLowerCase();
  return /^[0-9a-f]{32}$/.test(hex) ? hex.match(/.{4}/g)!.join("-") : undefined;
}

/** Where one key operation went: the repository or a mirror. */
export interface KeyPlace {
  location: string;
  ok: boolean;
  /** Why this copy could not be updated (the others were). */
  error: string | null;
  /** False for a mirror that holds no repository yet (the next snapshot makes it, with the keys of then). */
  present: boolean;
}

const short = (id: string) => id.slice(0, 8);
const failure = (err: unknown) => ((err as Error)?.message ?? String(err)).split("\n")[0];

/** The key object `id` must open to `master` with `cred`: a key is never trusted as written. */
async function verifyKey(target: Target, id: string, cred: Credentials, master: MasterKey): Promise<void> {
  const entry = await parseKeyObject(id, await target.get(keyKey(id)));
  const opened = entry.obj && (await openKeyObject(id, entry.obj, cred));
  const same = opened && opened.encryption.equals(master.encryption) && opened.id.equals(master.id) && opened.chunkerSeed.equals(master.chunkerSeed);
  if (!same) throw new RepoError(`key ${short(id)} at ${target.location} does not open the repository after it was written`, "io");
}

/**
 * Give a mirror every key object the repository has (verbatim, as shipping does), after checking
 * that it is a copy of the same repository. False when it holds no repository yet.
 */
async function syncKeys(repo: Repository, mirror: Target): Promise<boolean> {
  if (!(await mirror.head(CONFIG_KEY))) return false;
  const { createReplica } = await import("./replicate.js");
  await createReplica(repo, mirror);
  return true;
}

async function deleteVerified(target: Target, id: string): Promise<void> {
  await target.delete(keyKey(id));
  if (await target.head(keyKey(id))) throw new RepoError(`key ${short(id)} is still at ${target.location} after deleting it`, "io");
}

/**
 * A new password key whose password is a fresh recovery code, in the repository (verified to open
 * it) and in each mirror. The code is returned, never stored: printing it is the caller's one chance.
 */
export async function exportRecoveryKey(repo: Repository, mirrors: Target[], opts: { scrypt?: ScryptParams } = {}): Promise<{ keyId: string; code: string; places: KeyPlace[] }> {
  const code = newRecoveryCode();
  const cred: Credentials = { kind: "password", password: code, source: "recovery code" };
  const keyId = await addKey(repo.target, repo.key, cred, opts);
  await verifyKey(repo.target, keyId, cred, repo.key);
  const places: KeyPlace[] = [{ location: repo.target.location, ok: true, error: null, present: true }];
  for (const mirror of mirrors) {
    try {
      const present = await syncKeys(repo, mirror);
      if (present && !(await mirror.head(keyKey(keyId)))) throw new RepoError(`key ${short(keyId)} did not arrive`, "io");
      places.push({ location: mirror.location, ok: true, error: null, present });
    } catch (err) {
      places.push({ location: mirror.location, ok: false, error: failure(err), present: true });
    }
  }
  return { keyId, code, places };
}

/** The one key id that `prefix` names among `ids`. */
function resolveKeyId(prefix: string, ids: Iterable<string>, where: string): string {
  const p = prefix.trim().toLowerCase();
  if (!/^[0-9a-f]{4,64}$/.test(p)) throw new RepoError(`"${prefix}" is not a key id (4 to 64 hex digits; pi-guard key list shows them)`, "usage");
  const hits = [...new Set(ids)].filter((id) => id.startsWith(p));
  if (hits.length === 0) throw new RepoError(`no key ${prefix} in ${where} (pi-guard key list shows them)`, "not-found");
  if (hits.length > 1) throw new RepoError(`key id ${prefix} is ambiguous (${hits.length} keys start with it); give more digits`, "usage");
  return hits[0];
}

export interface RemoveKeyOptions {
  /** Also the key that opened `repo` (whatever runs with that credential is then locked out). */
  allowCurrent?: boolean;
  /** Called after the mirrors, before the repository itself (the test hook of `key passwd`). */
  beforeRepository?: () => Promise<void>;
}

/**
 * Revoke a key: delete its object from each mirror, then from the repository, each deletion
 * verified. Never the last key of the repository, never the one in use unless allowCurrent. A
 * mirror is first given every key the repository has, and must hold all the others before the key
 * goes there, so no copy is ever left without a working key. An unreachable mirror fails its part
 * only: the key is still removed elsewhere, and a second run (the id is looked up in the mirrors
 * too) finishes it. The repository goes last: until then shipping may copy the key back to a
 * mirror, and a second run removes it again.
 */
export async function removeKey(repo: Repository, mirrors: Target[], prefix: string, opts: RemoveKeyOptions = {}): Promise<{ keyId: string; places: KeyPlace[] }> {
  const entries = await readKeyEntries(repo.target);
  const valid = entries.filter((e) => e.obj).map((e) => e.id);
  const keyNames = (t: Target) => listNames(t, "keys").then((names) => names.filter((n) => /^[0-9a-f]{64}$/.test(n)));
  const inMirrors = await Promise.all(mirrors.map((m) => keyNames(m).catch(() => [] as string[])));
  const id = resolveKeyId(prefix, [...valid, ...inMirrors.flat()], `${repo.target.location}${mirrors.length ? " or its mirrors" : ""}`);
  if (id === repo.keyId && !opts.allowCurrent) {
    throw new RepoError(`key ${short(id)} is the key in use (it opened the repository now): what runs with this credential would be locked out; pass --allow-current if another credential opens the repository`, "usage");
  }
  const others = valid.filter((k) => k !== id);
  if (others.length === 0) throw new RepoError(`key ${short(id)} is the last key of ${repo.target.location}: without it nothing opens the repository; add another first (pi-guard key add)`, "usage");
  const places: KeyPlace[] = [];
  for (const mirror of mirrors) {
    try {
      if (!(await syncKeys(repo, mirror))) {
        places.push({ location: mirror.location, ok: true, error: null, present: false });
        continue;
      }
      const there = new Set(await keyNames(mirror));
      const lacking = others.find((k) => !there.has(k));
      if (lacking) throw new RepoError(`it lacks key ${short(lacking)}, so key ${short(id)} stays there`, "io");
      if (there.has(id)) await deleteVerified(mirror, id);
      places.push({ location: mirror.location, ok: true, error: null, present: true });
    } catch (err) {
      places.push({ location: mirror.location, ok: false, error: failure(err), present: true });
    }
  }
  await opts.beforeRepository?.();
  if (valid.includes(id) || (await repo.target.head(keyKey(id)))) await deleteVerified(repo.target, id);
  return { keyId: id, places: [{ location: repo.target.location, ok: true, error: null, present: true }, ...places] };
}

/** Test hook: PI_GUARD_TEST_KEY_PAUSE=<phase> stops `key passwd` there, until killed. */
async function pauseFor(phase: "added" | "mirrors-done"): Promise<void> {
  if (process.env.PI_GUARD_TEST_KEY_PAUSE !== phase) return;
  process.stderr.write(`pi-guard: key passwd paused at ${phase}\n`);
  await new Promise(() => setInterval(() => undefined, 1 << 30));
}

/**
 * Change the password of the key that opened `repo`: a new key with the new password, verified,
 * then the old key removed (removeKey: the mirrors, which get the new key first, then the
 * repository). A kill at any moment leaves every copy with the old key, the new one, or both.
 */
export async function changePassword(repo: Repository, mirrors: Target[], password: string, opts: { scrypt?: ScryptParams } = {}): Promise<{ oldKeyId: string; newKeyId: string; places: KeyPlace[] }> {
  const current = await parseKeyObject(repo.keyId, await repo.target.get(keyKey(repo.keyId)));
  if (current.obj?.kdf !== "scrypt") {
    throw new RepoError(
      `the repository was opened with a key file (key ${short(repo.keyId)}), which has no password: add the new credential (pi-guard key add --new-key-file <file>, or with PI_GUARD_NEW_PASSWORD), then pi-guard key remove ${short(repo.keyId)} --allow-current`,
      "usage",
    );
  }
  if (!password) throw new RepoError("the new password is empty", "usage");
  const cred: Credentials = { kind: "password", password, source: "new password" };
  const newKeyId = await addKey(repo.target, repo.key, cred, opts);
  await verifyKey(repo.target, newKeyId, cred, repo.key);
  await pauseFor("added");
  const { places } = await removeKey(repo, mirrors, repo.keyId, { allowCurrent: true, beforeRepository: () => pauseFor("mirrors-done") });
  return { oldKeyId: repo.keyId, newKeyId, places };
}
