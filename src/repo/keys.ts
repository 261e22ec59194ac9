import os from "node:os";
import { createRequire } from "node:module";
import { randomBytes } from "node:crypto";
import type { z as Zod } from "zod";
import { calibrateScrypt, decrypt, deriveFromKeyFile, deriveFromPassword, encrypt, scryptParamsProblem, type ScryptParams } from "./crypto.js";
import { RepoError } from "./errors.js";
import { AAD, keyKey } from "./format.js";
import { ObjectNotFound, type Target } from "../targets/target.js";

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

// zod is loaded on first use, not at start-up: commands that never open a repository skip it.
// Required, not imported: the ES module loader opens zod's ~90 files at once, which fails with
// EMFILE under a low `ulimit -n`; require opens them one after another.
let schemas: ReturnType<typeof keySchemas> | undefined;
const loadSchemas = () => (schemas ??= keySchemas((createRequire(import.meta.url)("zod") as { z: typeof Zod }).z));

function keySchemas(z: typeof Zod) {
  const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, "not base64");
  const bytes = (n: number) => base64.refine((s) => Buffer.from(s, "base64").length === n, `not ${n} bytes`);
  const keyObject = z
    .object({
      kdf: z.enum(["scrypt", "hkdf"]),
      scrypt: z.object({ N: z.number(), r: z.number(), p: z.number() }).strict().optional(),
      salt: base64.refine((s) => Buffer.from(s, "base64").length >= 16, "salt shorter than 16 bytes"),
      created: z.string(),
      host: z.string(),
      user: z.string(),
      data: base64,
    })
    .superRefine((obj, ctx) => {
      if (obj.kdf !== "scrypt") return;
      if (!obj.scrypt) return void ctx.addIssue({ code: "custom", path: ["scrypt"], message: "missing for kdf scrypt" });
      const problem = scryptParamsProblem(obj.scrypt);
      if (problem) ctx.addIssue({ code: "custom", path: ["scrypt"], message: problem });
    });
  /** The master key as sealed inside a key object. */
  const masterKey = z.object({ encryption: bytes(32), id: bytes(32), chunkerSeed: bytes(32) }).strict();
  return { keyObject, masterKey };
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
  const parsed = loadSchemas().keyObject.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { id, problem: `${issue.path.length ? issue.path.join(".") + ": " : ""}${issue.message}` };
  }
  return { id, obj: parsed.data };
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
  const parsed = loadSchemas().masterKey.safeParse(json);
  if (!parsed.success) return undefined;
  return {
    encryption: Buffer.from(parsed.data.encryption, "base64"),
    id: Buffer.from(parsed.data.id, "base64"),
    chunkerSeed: Buffer.from(parsed.data.chunkerSeed, "base64"),
  };
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
 */
export async function unlock(target: Target, cred: Credentials): Promise<{ master: MasterKey; keyId: string }> {
  const wanted = kdfOf(cred);
  const entries = await readKeyEntries(target);
  for (const e of entries) {
    if (!e.obj || e.obj.kdf !== wanted) continue;
    const master = await openKeyObject(e.id, e.obj, cred);
    if (master) return { master, keyId: e.id };
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
