// Unattended use: `init` without a password and without a terminal makes a key file (0600) and
// says where; later commands need nothing else. A wrong key file fails clearly. And invariant 4:
// no byte of auth.json is in the repository in plaintext.

import { readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok, restoreJson, snapshot } from "../helpers/cli.js";
import { fingerprint, listFiles, makeSandbox, type Sandbox, treeState, writePiConfigFiles } from "../helpers/tmp.js";

describe("key file", () => {
  let sb: Sandbox;
  let keyFile: string;
  let initOut: string;

  beforeAll(async () => {
    sb = makeSandbox("keyfile");
    writePiConfigFiles(sb.agentDir);
    keyFile = path.join(sb.configHome, "pi-guard", "key");
    initOut = (await ok(sb, ["init"])).stdout;
  });

  afterAll(() => sb?.cleanup());

  it("init with no password and no TTY creates a 0600 key file and says where it is", () => {
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(keyFile, "utf8").trim(), "base64")).toHaveLength(32);
    expect(initOut).toContain(keyFile);
    expect(initOut).toMatch(/0600/);
    expect(initOut).toMatch(/keep a copy/i);
  });

  it("init --json reports the key file too", async () => {
    const other = path.join(sb.root, "other-repo");
    const otherKey = path.join(sb.root, "keys", "other.key");
    const r = (await ok(sb, ["init", "--json", "--repo", other, "--key-file", otherKey])).json();
    expect(r).toMatchObject({ repo: other, credential: "keyfile", keyFile: otherKey });
    expect(statSync(otherKey).mode & 0o777).toBe(0o600);
  });

  it("snapshot, snapshots, check and restore work with the key file alone", async () => {
    const env = { PI_GUARD_PASSWORD: undefined, PI_GUARD_PASSWORD_FILE: undefined };
    const s = await snapshot(sb, [], { env });
    const list = (await ok(sb, ["snapshots", "--json"], { env })).json<{ id: string }[]>();
    expect(list.map((x) => x.id)).toEqual([s.snapshotId]);
    await ok(sb, ["check", "--read-data"], { env });
    const target = path.join(sb.root, "restored");
    await restoreJson(sb, ["latest", "--target", target], { env });
    expect(fingerprint(treeState(target))).toEqual(fingerprint(treeState(sb.agentDir)));
  });

  it("a key file of another repository fails clearly", async () => {
    const otherKey = path.join(sb.root, "keys", "other.key");
    const line = expectOneLineError(await cli(sb, ["snapshots"], { env: { PI_GUARD_KEY_FILE: otherKey } }), 1);
    expect(line).toMatch(/key/i);
  });

  it("a damaged or missing key file fails clearly", async () => {
    const bad = path.join(sb.root, "bad.key");
    writeFileSync(bad, "not a key\n", { mode: 0o600 });
    expect(expectOneLineError(await cli(sb, ["snapshots", "--key-file", bad]))).toContain(bad);
    const missing = path.join(sb.root, "missing.key");
    expect(expectOneLineError(await cli(sb, ["snapshots", "--key-file", missing]), 1)).toMatch(/no password|key file/i);
  });

  it("a second init reuses the existing key file and never replaces it", async () => {
    const before = readFileSync(keyFile, "utf8");
    const third = path.join(sb.root, "third-repo");
    await ok(sb, ["init", "--repo", third]);
    expect(readFileSync(keyFile, "utf8")).toBe(before);
    await ok(sb, ["snapshots", "--repo", third]);
    // Asking for a new key file where one exists is refused: it may be the only way into a repository.
    const line = expectOneLineError(await cli(sb, ["init", "--key-file-only", "--repo", path.join(sb.root, "fourth-repo")]), 1);
    expect(line).toMatch(/key file .* already exists/);
    expect(readFileSync(keyFile, "utf8")).toBe(before);
  });

  it("no byte string of auth.json appears in plaintext in any repository object", () => {
    const auth = JSON.parse(readFileSync(path.join(sb.agentDir, "auth.json"), "utf8")) as Record<string, { key: string }>;
    const secret = Buffer.from(auth.anthropic.key);
    const needles = [secret, secret.subarray(0, 16), secret.subarray(secret.length - 16), Buffer.from('"anthropic"')];
    const files = listFiles(sb.repo);
    expect(files.length).toBeGreaterThan(3);
    for (const f of files) {
      const data = readFileSync(f);
      for (const n of needles) expect(data.includes(n), `${f} contains ${n.toString()}`).toBe(false);
    }
  });
});
