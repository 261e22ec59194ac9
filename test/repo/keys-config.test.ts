// Keys and config are plaintext objects anyone with write access to the repository can plant or
// edit. A damaged key must not lock out the valid ones, scrypt parameters are bounded before use,
// config parameters are bounded before the chunker sees them, and credential errors say what was
// tried.

import { createHash, randomBytes, scryptSync } from "node:crypto";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readKeyFile } from "../../src/config/credentials.js";
import { encrypt } from "../../src/repo/crypto.js";
import { Repository } from "../../src/repo/repository.js";
import { LocalTarget } from "../../src/targets/local.js";
import { cli, expectOneLineError, initRepo, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

const keyObject = (over: Record<string, unknown>) =>
  JSON.stringify({
    kdf: "scrypt",
    scrypt: { N: 1024, r: 8, p: 1 },
    salt: randomBytes(16).toString("base64"),
    created: "2020-01-01T00:00:00.000Z",
    host: "h",
    user: "u",
    data: randomBytes(64).toString("base64"),
    ...over,
  });

/** Key ids that sort first (unlock meets the planted keys before the real one), distinct in 12 digits. */
const plantedId = (n: number) => "00" + n.toString(16).padStart(2, "0") + "0".repeat(60);
const plant = (repo: string, n: number, body: string) => writeFileSync(path.join(repo, "keys", plantedId(n)), body);

describe("keys", () => {
  let sb: Sandbox;
  const pw = { PI_GUARD_PASSWORD: "correct horse" };

  beforeAll(async () => {
    sb = makeSandbox("keys");
    writePiConfigFiles(sb.agentDir);
    await ok(sb, ["init"], { env: pw });
  });

  afterAll(() => sb?.cleanup());

  it("new password keys are calibrated to 64 MiB of scrypt memory", () => {
    const [name] = readdirSync(path.join(sb.repo, "keys"));
    const obj = JSON.parse(readFileSync(path.join(sb.repo, "keys", name), "utf8"));
    expect(obj.kdf).toBe("scrypt");
    expect(128 * obj.scrypt.N * obj.scrypt.r).toBe(64 * 1024 * 1024);
    expect(obj.scrypt.p).toBeGreaterThanOrEqual(1);
  });

  it("damaged key objects are skipped: the valid password still opens the repository", async () => {
    const salt = randomBytes(16);
    // Opens with the right password, but what it holds is not a master key.
    const wrap = scryptSync("correct horse", salt, 32, { N: 1024, r: 8, p: 1 });
    const notAMaster = encrypt(wrap, Buffer.from('{"encryption":"x"}')).toString("base64");
    const planted = [
      "not json at all",
      keyObject({ scrypt: { N: 3, r: 8, p: 1 } }), // "Invalid scrypt params" before
      keyObject({ scrypt: { N: 2 ** 40, r: 8, p: 1 } }), // a malloc failure before
      keyObject({ scrypt: { N: 1024, r: 8, p: 1e9 } }), // an unlock that never ends
      keyObject({ scrypt: undefined }),
      keyObject({ salt: "%%%not base64%%%" }),
      keyObject({ data: "***" }),
      keyObject({ data: randomBytes(8).toString("base64") }), // too short to be sealed
      keyObject({ salt: salt.toString("base64"), data: notAMaster }),
      "[]",
    ];
    planted.forEach((body, i) => plant(sb.repo, i + 1, body));
    const r = await cli(sb, ["snapshots", "--json"], { env: pw, timeoutMs: 30_000 });
    expect(r.code, r.stderr).toBe(0);
    // A wrong password still gets one clear line that counts the damaged objects.
    const wrong = expectOneLineError(await cli(sb, ["snapshots"], { env: { PI_GUARD_PASSWORD: "battery staple" }, timeoutMs: 30_000 }), 1);
    expect(wrong).toMatch(/password from PI_GUARD_PASSWORD does not open/);
    expect(wrong).toMatch(/3 password keys and no key-file keys \(and 8 damaged key objects/);
  });

  it("check reads every key object: damaged ones are errors, keys of other credentials are not", async () => {
    const r = await cli(sb, ["check", "--json"], { env: pw, timeoutMs: 30_000 });
    expect(r.code, r.stderr).toBe(3);
    const messages = r.json<{ problems: { severity: string; message: string }[] }>().problems.map((p) => p.message);
    const named = (n: number) => messages.filter((m) => m.startsWith(`key ${plantedId(n).slice(0, 12)} is damaged`));
    for (const n of [1, 2, 3, 4, 5, 6, 7, 10]) expect(named(n), messages.join("\n")).toHaveLength(1);
    expect(named(2)[0]).toMatch(/scrypt N=3 is not a power of two/);
    expect(named(3)[0]).toMatch(/scrypt N=1099511627776/);
    // Well-formed keys this password does not open (8, 9) may belong to other passwords.
    expect(named(8)).toEqual([]);
    expect(named(9)).toEqual([]);
    expect(messages).toHaveLength(8);
  });
});

describe("credential messages", () => {
  let sb: Sandbox;

  beforeAll(async () => {
    sb = makeSandbox("cred-msg");
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);
  });

  afterAll(() => sb?.cleanup());

  it("--key-file naming a missing file says so, with the path", async () => {
    const missing = path.join(sb.root, "nope.key");
    const line = expectOneLineError(await cli(sb, ["snapshots", "--key-file", missing]), 1);
    expect(line).toContain(`key file ${missing} (from --key-file) does not exist`);
    expect(line).not.toMatch(/^pi-guard: no password/);
  });

  it("a password on a key-file repository says what was tried and what the repository has", async () => {
    const line = expectOneLineError(await cli(sb, ["snapshots"], { env: { PI_GUARD_PASSWORD: "guess" } }), 1);
    expect(line).toMatch(/password from PI_GUARD_PASSWORD does not open the repository at /);
    expect(line).toMatch(/no password keys and 1 key-file key/);
    expect(line).toMatch(/--key-file/);
  });

  it("check names damaged key objects that unlock never had to read", async () => {
    const before = (await cli(sb, ["check", "--json"])).code;
    expect(before).toBe(0);
    plant(sb.repo, 1, "{ not json");
    plant(sb.repo, 2, keyObject({ kdf: "hkdf", scrypt: undefined, salt: "short" }));
    plant(sb.repo, 3, keyObject({ scrypt: { N: 2 ** 40, r: 8, p: 1 } }));
    plant(sb.repo, 4, keyObject({})); // a well-formed password key: another credential, not damage
    try {
      const r = await cli(sb, ["check", "--json"]);
      expect(r.code, r.stderr).toBe(3);
      const messages = r.json<{ problems: { message: string }[] }>().problems.map((p) => p.message);
      expect(messages.filter((m) => m.includes(" is damaged ")).map((m) => m.slice(0, 16))).toEqual([1, 2, 3].map((n) => `key ${plantedId(n).slice(0, 12)}`));
      expect(messages.join("\n")).not.toContain(plantedId(4).slice(0, 12));
    } finally {
      for (const n of [1, 2, 3, 4]) rmSync(path.join(sb.repo, "keys", plantedId(n)));
    }
  });

  it("the repository id is random, not derived from the blob-id key", async () => {
    const cred = (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!;
    const repo = await Repository.open(new LocalTarget(sb.repo), cred);
    expect(repo.config.id).toMatch(/^[0-9a-f]{32}$/);
    const derived = createHash("sha256").update(repo.key.id).update("repository id").digest("hex").slice(0, 32);
    expect(repo.config.id).not.toBe(derived);
  });
});

describe("config bounds", () => {
  let sb: Sandbox;
  let original: string;
  const configFile = () => path.join(sb.repo, "config");

  beforeAll(async () => {
    sb = makeSandbox("config-bounds");
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);
    original = readFileSync(configFile(), "utf8");
  });

  afterAll(() => sb?.cleanup());

  const withConfig = (edit: (c: any) => void) => {
    const c = JSON.parse(original);
    edit(c);
    writeFileSync(configFile(), JSON.stringify(c));
  };

  const cases: [string, (c: any) => void, RegExp][] = [
    ["max 0 (hung the chunker)", (c) => (c.chunker.data.max = 0), /chunker\.data: needs min < avg < max/],
    ["max 1 (a stack trace)", (c) => (c.chunker.data.max = 1), /chunker\.data: needs min < avg < max/],
    ["a negative min (grew to 1.3 GB)", (c) => (c.chunker.data.min = -5), /chunker\.data\.min/],
    ["avg not a power of two", (c) => (c.chunker.tree.avg = 3000), /chunker\.tree.*power of two/],
    ["a tree list chunker with min 0", (c) => (c.chunker.list.min = 0), /chunker\.list\.min/],
    ["a chunker it does not know", (c) => (c.chunker.other = c.chunker.list), /chunker: unknown key "other"/],
    ["min above avg", (c) => (c.chunker.data.min = 65536), /chunker\.data.*min < avg < max/],
    ["max above 8 MiB", (c) => (c.chunker.data.max = 2 ** 32), /chunker\.data\.max/],
    ["packSize 0", (c) => (c.packSize = 0), /packSize/],
    ["packSize a string", (c) => (c.packSize = "16M"), /packSize/],
    ["no chunker", (c) => delete c.chunker, /chunker/],
    ["an id that is a path", (c) => (c.id = "../../../etc"), /id/],
  ];

  for (const [name, edit, message] of cases) {
    it(`refuses ${name} in one line`, async () => {
      withConfig(edit);
      try {
        const line = expectOneLineError(await cli(sb, ["snapshot"], { timeoutMs: 20_000 }), 3);
        expect(line).toContain(`${sb.repo}/config: `);
        expect(line).toMatch(message);
      } finally {
        writeFileSync(configFile(), original);
      }
    });
  }

  it("sessions list, which reads only the id, refuses an id that is a path", async () => {
    withConfig((c) => (c.id = "../../../escape"));
    try {
      const line = expectOneLineError(await cli(sb, ["sessions", "list"]), 3);
      expect(line).toContain(`${sb.repo}/config: id is not 32 hex digits`);
    } finally {
      writeFileSync(configFile(), original);
    }
  });

  it("the untouched config still works", async () => {
    await ok(sb, ["snapshot"]);
  });
});
