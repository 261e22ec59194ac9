// Keys (issue 17): `key export` makes a recovery key and prints its code once (never onto a
// terminal without --yes), a code that opens the repository and its S3 mirror as a password;
// `doctor` warns until such a copy is known; `key remove` revokes a key in the repository and in
// every mirror, verified gone, never the last key nor the one in use without --allow-current;
// `key passwd` changes the current password so that a kill -9 at any step leaves a working key.
// Real CLI, real repositories, the real S3 server, a real terminal (script(1)) and real kill -9.

import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, cli, collect, expectOneLineError, ok, spawnCli } from "../helpers/cli.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";
import { writeConfig } from "../mirror/mirror-helpers.js";

const BUCKET = "pi-keys";
let server: S3Server;
const sandboxes: Sandbox[] = [];

beforeAll(async () => {
  const dir = makeSandbox("keys-s3");
  sandboxes.push(dir);
  server = await startS3Server(dir.dir("s3rver"), BUCKET);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  for (const sb of sandboxes) sb.cleanup();
});

interface KeyJson {
  id: string;
  kdf: string;
  current: boolean;
}
interface DoctorJson {
  checks: { name: string; status: string; message: string; fix?: string }[];
}

/** A repository with a key file, one snapshot, shipped to an S3 mirror under `prefix`. */
async function world(prefix: string, extraEnv: Record<string, string> = {}): Promise<{ sb: Sandbox; env: Record<string, string>; mirror: string }> {
  const sb = makeSandbox("keys");
  sandboxes.push(sb);
  const mirror = `s3://${BUCKET}/${prefix}`;
  const env = { ...sb.env, ...server.env, ...extraEnv };
  writePiConfigFiles(sb.agentDir);
  writeConfig(sb, { mirrors: [mirror] });
  await ok(env, ["init"]);
  const snap = (await ok(env, ["snapshot", "--json"])).json<{ mirrors: { ok: boolean }[] }>();
  expect(snap.mirrors).toMatchObject([{ ok: true }]);
  return { sb, env, mirror };
}

const keys = async (env: Record<string, string>, repo?: string) => (await ok(env, ["key", "list", "--json", ...(repo ? ["--repo", repo] : [])])).json<KeyJson[]>();
const credentialCopy = async (env: Record<string, string>) => (await ok(env, ["doctor", "--json"])).json<DoctorJson>().checks.find((c) => c.name === "credential copy");
/** Open the repository (or `repo`) with this password only: the key file is hidden. */
const withPassword = (sb: Sandbox, env: Record<string, string>, password: string, repo?: string) =>
  cli({ ...env, PI_GUARD_PASSWORD: password, PI_GUARD_KEY_FILE: path.join(sb.root, "no-key-file") }, ["snapshots", "--json", ...(repo ? ["--repo", repo] : [])]);

describe("key export", () => {
  it("doctor warns until a credential is copied off the machine; export to a terminal needs --yes; the code opens the repository and the mirror", { timeout: 120_000 }, async () => {
    const { sb, env, mirror } = await world("export");
    const before = await credentialCopy(env);
    expect(before).toMatchObject({ status: "warn", message: expect.stringMatching(/no copy of any credential .* is known to exist off this machine/) });
    expect(before?.fix).toMatch(/pi-guard key export/);

    // On a terminal (script(1) gives the command a real pty) the code is not shown without --yes.
    const quoted = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const tty = spawnSync("script", ["-qec", `${quoted(process.execPath)} ${quoted(BIN)} key export`, "/dev/null"], { env, encoding: "utf8" });
    expect(tty.status, tty.stdout + tty.stderr).toBe(2);
    expect(tty.stdout).toMatch(/would show a secret on this terminal.*--yes/);
    expect(await keys(env)).toHaveLength(1);

    const r = await ok(env, ["key", "export"]);
    const code = r.stdout.trim();
    expect(r.stdout).toBe(`${code}\n`);
    expect(code).toMatch(/^[0-9a-f]{4}(-[0-9a-f]{4}){7}$/);
    expect(r.stderr).toMatch(/store it off this machine/);
    expect(r.stderr).toContain(mirror);
    expect(r.stderr).not.toContain(code);
    const listed = await keys(env);
    expect(listed).toHaveLength(2);
    const exported = listed.find((k) => !k.current)!;
    expect(exported.kdf).toBe("scrypt");

    // The code is a password: the repository and its S3 copy open with it alone, as typed from paper too.
    for (const repo of [undefined, mirror]) {
      const opened = await withPassword(sb, env, code, repo);
      expect(opened.code, opened.stderr).toBe(0);
      expect(opened.json<unknown[]>()).toHaveLength(1);
    }
    expect((await withPassword(sb, env, code.toUpperCase().replace(/-/g, " "), mirror)).code).toBe(0);

    const after = await credentialCopy(env);
    expect(after).toMatchObject({ status: "ok", message: expect.stringContaining(exported.id.slice(0, 8)) });

    // --json carries the code and where the key went.
    const j = (await ok(env, ["key", "export", "--json"])).json<{ keyId: string; code: string; mirrors: { location: string; ok: boolean }[] }>();
    expect(j.code).toMatch(/^[0-9a-f]{4}(-[0-9a-f]{4}){7}$/);
    expect(j.mirrors).toEqual([{ location: mirror, ok: true, error: null, present: true }]);
  });

  it("a mirror that cannot be reached: the code is still printed, the failure named, exit 1", async () => {
    const { sb, env } = await world("unreachable");
    writeFileSync(path.join(sb.root, "a-file"), "not a folder");
    const broken = path.join(sb.root, "a-file", "mirror");
    writeConfig(sb, { mirrors: [broken] });
    const r = await cli(env, ["key", "export"]);
    expect(r.code).toBe(1);
    expect(r.stdout.trim()).toMatch(/^[0-9a-f]{4}(-[0-9a-f]{4}){7}$/);
    expect(r.stderr).toMatch(new RegExp(`${broken}: .*did not get the recovery key`));
  });
});

describe("key remove", () => {
  it("revokes a key in the repository and in the mirror, verified; never the key in use without --allow-current, never the last", { timeout: 120_000 }, async () => {
    const { sb, env, mirror } = await world("remove");
    const code = (await ok(env, ["key", "export"])).stdout.trim();
    const [current, exported] = [(await keys(env)).find((k) => k.current)!, (await keys(env)).find((k) => !k.current)!];
    expect((await keys(env, mirror)).map((k) => k.id).sort()).toEqual([current.id, exported.id].sort());

    expect(expectOneLineError(await cli(env, ["key", "remove", current.id.slice(0, 8)]), 2)).toMatch(/is the key in use .*--allow-current/);
    expect(expectOneLineError(await cli(env, ["key", "remove", "abcdef12"]), 1)).toMatch(/no key abcdef12/);

    const removed = await ok(env, ["key", "remove", exported.id.slice(0, 8)]);
    expect(removed.stdout).toContain(`removed key ${exported.id.slice(0, 8)} from ${sb.repo}`);
    expect(removed.stdout).toContain(`from ${mirror}`);
    expect(existsSync(path.join(sb.repo, "keys", exported.id))).toBe(false);
    expect((await keys(env, mirror)).map((k) => k.id)).toEqual([current.id]);
    for (const repo of [undefined, mirror]) expect(expectOneLineError(await withPassword(sb, env, code, repo), 1)).toMatch(/does not open/);
    // The next snapshot does not ship the revoked key back to the mirror.
    await ok(env, ["snapshot", "--json"]);
    expect((await keys(env, mirror)).map((k) => k.id)).toEqual([current.id]);
    expect(await credentialCopy(env)).toMatchObject({ status: "warn", message: expect.stringMatching(/was removed/) });

    expect(expectOneLineError(await cli(env, ["key", "remove", current.id.slice(0, 8), "--allow-current"]), 2)).toMatch(/last key/);
    expect(await keys(env)).toHaveLength(1);
  });
});

describe("key passwd", () => {
  it("changes the current password in the repository and the mirror: the old one stops opening either", { timeout: 120_000 }, async () => {
    const { sb, env, mirror } = await world("passwd", { PI_GUARD_PASSWORD: "old password" });
    expect((await keys(env)).map((k) => k.kdf)).toEqual(["scrypt"]);
    const r = await ok({ ...env, PI_GUARD_NEW_PASSWORD: "new password" }, ["key", "passwd"]);
    expect(r.stdout).toMatch(/changed the password: key \S+ replaces \S+/);
    for (const repo of [undefined, mirror]) {
      expect(expectOneLineError(await withPassword(sb, env, "old password", repo), 1)).toMatch(/does not open/);
      expect((await withPassword(sb, env, "new password", repo)).code).toBe(0);
      expect(await keys({ ...env, PI_GUARD_PASSWORD: "new password" }, repo)).toHaveLength(1);
    }
    expect(expectOneLineError(await cli({ ...env, PI_GUARD_PASSWORD: "new password" }, ["key", "passwd"]), 2)).toMatch(/PI_GUARD_NEW_PASSWORD/);
  });

  it("a key file has no password: passwd says what to do instead", async () => {
    const { env } = await world("passwd-keyfile");
    expect(expectOneLineError(await cli({ ...env, PI_GUARD_NEW_PASSWORD: "x" }, ["key", "passwd"]), 2)).toMatch(/key file .*key add --new-key-file.*key remove/);
  });

  for (const phase of ["added", "mirrors-done"] as const) {
    it(`kill -9 at "${phase}": every copy still opens, with the old password or the new one`, { timeout: 120_000 }, async () => {
      const { sb, env, mirror } = await world(`passwd-kill-${phase}`, { PI_GUARD_PASSWORD: "old password" });
      const child = spawnCli({ ...env, PI_GUARD_NEW_PASSWORD: "new password", PI_GUARD_TEST_KEY_PAUSE: phase }, ["key", "passwd"]);
      let stderr = "";
      await new Promise<void>((resolve, reject) => {
        child.stderr!.setEncoding("utf8").on("data", (d: string) => {
          stderr += d;
          if (stderr.includes(`key passwd paused at ${phase}`)) resolve();
        });
        child.on("exit", () => reject(new Error(`key passwd exited before pausing: ${stderr}`)));
      });
      child.kill("SIGKILL");
      await collect(child);
      const opens = async (password: string, repo?: string) => (await withPassword(sb, env, password, repo)).code === 0;
      expect(await opens("old password")).toBe(true);
      expect(await opens("new password")).toBe(true);
      expect(await opens("old password", mirror)).toBe(phase === "added");
      expect(await opens("new password", mirror)).toBe(phase === "mirrors-done");
    });
  }
});
