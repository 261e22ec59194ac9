import os from "node:os";
import { randomBytes } from "node:crypto";
import { decrypt, deriveFromKeyFile, deriveFromPassword, encrypt, DEFAULT_SCRYPT, type ScryptParams } from "./crypto.js";
import { RepoError } from "./errors.js";
import { AAD, keyKey } from "./format.js";
import type { Target } from "../targets/target.js";

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

interface KeyObject {
  kdf: "scrypt" | "hkdf";
  scrypt?: ScryptParams;
  salt: string;
  created: string;
  host: string;
  user: string;
  data: string;
}

export function newMasterKey(): MasterKey {
  return { encryption: randomBytes(32), id: randomBytes(32), chunkerSeed: randomBytes(32) };
}

async function wrappingKey(cred: Credentials, obj: Pick<KeyObject, "kdf" | "scrypt" | "salt">): Promise<Buffer> {
  const salt = Buffer.from(obj.salt, "base64");
  if (obj.kdf === "scrypt") {
    if (cred.kind !== "password") throw new Error("unreachable: scrypt key with a key file");
    return deriveFromPassword(cred.password, salt, obj.scrypt ?? DEFAULT_SCRYPT);
  }
  if (cred.kind !== "keyfile") throw new Error("unreachable: hkdf key with a password");
  return deriveFromKeyFile(cred.secret, salt);
}

/** Wrap the master key for one credential and store it as keys/<random id>. Returns the key id. */
export async function addKey(target: Target, master: MasterKey, cred: Credentials): Promise<string> {
  const base = {
    kdf: cred.kind === "password" ? ("scrypt" as const) : ("hkdf" as const),
    scrypt: cred.kind === "password" ? DEFAULT_SCRYPT : undefined,
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

export interface KeyInfo {
  id: string;
  kdf: KeyObject["kdf"];
  created: string;
  host: string;
  user: string;
}

export async function listKeys(target: Target): Promise<KeyInfo[]> {
  const out: KeyInfo[] = [];
  for await (const info of target.list("keys")) {
    try {
      const obj = JSON.parse((await target.get(info.key)).toString("utf8")) as KeyObject;
      out.push({ id: info.key.slice("keys/".length), kdf: obj.kdf, created: obj.created, host: obj.host, user: obj.user });
    } catch {
      // not a key object: ignore, as unlock does
    }
  }
  return out.sort((a, b) => a.created.localeCompare(b.created));
}

/** Try every key object that fits the credential's kind; the first that authenticates wins. */
export async function unlock(target: Target, cred: Credentials): Promise<{ master: MasterKey; keyId: string }> {
  const wanted = cred.kind === "password" ? "scrypt" : "hkdf";
  let tried = 0;
  for await (const info of target.list("keys")) {
    let obj: KeyObject;
    try {
      obj = JSON.parse((await target.get(info.key)).toString("utf8")) as KeyObject;
    } catch {
      continue;
    }
    if (obj.kdf !== wanted) continue;
    tried++;
    const wrap = await wrappingKey(cred, obj);
    let plain: Buffer;
    try {
      plain = decrypt(wrap, Buffer.from(obj.data, "base64"), "key", AAD.key(info.key.slice("keys/".length)));
    } catch {
      continue;
    }
    const parsed = JSON.parse(plain.toString("utf8")) as Record<string, string>;
    return {
      keyId: info.key.slice("keys/".length),
      master: {
        encryption: Buffer.from(parsed.encryption, "base64"),
        id: Buffer.from(parsed.id, "base64"),
        chunkerSeed: Buffer.from(parsed.chunkerSeed, "base64"),
      },
    };
  }
  const what = cred.kind === "password" ? `password (from ${cred.source})` : `key file ${cred.path}`;
  if (tried === 0) {
    throw new RepoError(
      `the repository at ${target.location} has no ${cred.kind === "password" ? "password" : "key-file"} key; wrong ${what}?`,
      "wrong-password",
    );
  }
  throw new RepoError(`wrong ${what}: no key of ${target.location} opens with it`, "wrong-password");
}
