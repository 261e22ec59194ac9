// `pi-guard service install` with an S3 repository (issue 17, item 10). The generated unit is run
// the way systemd runs it: `env -i`, then only its Environment= lines (and EnvironmentFile=, if
// it has any), then its ExecStart, against a real S3 server (s3rver on 127.0.0.1). It must open
// the same repository the installing shell opens, with no secret in the unit text; and a setting
// the service would not have is refused at install time, before anything is written.
// Nothing here talks to a real systemd: the unit goes into the sandbox's XDG_CONFIG_HOME.

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { watcherFiles, type WatcherState } from "../../src/watch/state.js";
import { cli, expectOneLineError, ok } from "../helpers/cli.js";
import { startS3Server, S3RVER_KEY, type S3Server } from "../helpers/s3-server.js";
import { makeSandbox, type Sandbox, writeFileExact, writePiConfigFiles } from "../helpers/tmp.js";

const BUCKET = "svc-bucket";
const REPO = `s3://${BUCKET}/pi/laptop`;
// s3rver checks the access key but not the signature, so the secret can be any marker we look for.
const SECRET = "pi-guard-test-SECRET-wombat-0042";

let server: S3Server;
let sb: Sandbox;
let unit: string;

/** The installing shell: the sandbox, the S3 endpoint and region, a profile from ~/.aws/credentials. */
function shellEnv(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return { PI_GUARD_REPO: REPO, AWS_ENDPOINT_URL: server.endpoint, AWS_REGION: "us-east-1", AWS_PROFILE: "backup", ...extra };
}

/** One systemd word list: "quoted" words with backslash escapes, %% for %. */
function systemdWords(text: string): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < text.length) {
    while (text[i] === " ") i++;
    if (i >= text.length) break;
    let word = "";
    if (text[i] === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === "\\") i++;
        word += text[i++];
      }
      i++;
    } else {
      while (i < text.length && text[i] !== " ") word += text[i++];
    }
    words.push(word.replace(/%%/g, "%"));
  }
  return words;
}

/** What systemd would start: ExecStart's argv, and the environment from Environment= and EnvironmentFile= only. */
function parseUnit(file: string): { argv: string[]; env: Record<string, string> } {
  const env: Record<string, string> = {};
  let argv: string[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const m = /^(\w+)=(.*)$/.exec(line);
    if (!m) continue;
    const [, key, value] = m;
    if (key === "Environment") {
      for (const word of systemdWords(value)) {
        const eq = word.indexOf("=");
        env[word.slice(0, eq)] = word.slice(eq + 1);
      }
    } else if (key === "EnvironmentFile") {
      const optional = value.startsWith("-");
      const envFile = value.replace(/^-/, "");
      if (!existsSync(envFile) && optional) continue;
      for (const l of readFileSync(envFile, "utf8").split("\n")) {
        const kv = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(l);
        if (kv) env[kv[1]] = kv[2].replace(/^"(.*)"$/, "$1").replace(/^'(.*)'$/, "$1");
      }
    } else if (key === "ExecStart") {
      // systemd expands $ in the arguments (written $$ for a literal one), not in the program path.
      const [program, ...args] = systemdWords(value);
      argv = [program, ...args.map((a) => a.replace(/\$\$/g, "$"))];
    }
  }
  return { argv, env };
}

/** `env -i` + the unit's environment + its ExecStart (or `args` instead of its last word, the subcommand). */
function startUnit(file: string, args?: string[]): { child: ChildProcess; output: () => string; exited: Promise<number | string> } {
  const { argv, env } = parseUnit(file);
  const command = args ? [...argv.slice(0, -1), ...args] : argv;
  const child = spawn("env", ["-i", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...command], { cwd: env.HOME ?? "/", stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (out += d));
  const exited = new Promise<number | string>((resolve) => child.on("close", (code, signal) => resolve(code ?? signal ?? "unknown")));
  return { child, output: () => out, exited };
}

/** Run the unit's own `watch` as systemd would, until its first snapshot is in its state file; then SIGTERM. */
async function runUnitWatcher(file: string): Promise<{ state: WatcherState; code: number | string; output: string }> {
  const { env } = parseUnit(file);
  const stateFile = watcherFiles(path.join(env.XDG_STATE_HOME, "pi-guard"), env.PI_CODING_AGENT_DIR).state;
  const w = startUnit(file);
  let exited: number | string | undefined;
  void w.exited.then((c) => (exited = c));
  const end = Date.now() + 60_000;
  let state: WatcherState | undefined;
  for (;;) {
    try {
      const s = JSON.parse(readFileSync(stateFile, "utf8")) as WatcherState;
      if (s.pid === w.child.pid && s.snapshots.made >= 1) state = s;
    } catch {
      // not written yet
    }
    if (state || exited !== undefined || Date.now() > end) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (!state) {
    w.child.kill("SIGKILL");
    await w.exited;
    throw new Error(`the unit's watcher, run with env -i, ${exited === undefined ? "made no snapshot in 60 s" : `exited ${exited}`} before its first snapshot:\n${w.output()}`);
  }
  w.child.kill("SIGTERM");
  return { state, code: await w.exited, output: w.output() };
}

function verifyUnit(file: string): { status: number | null; output: string } {
  const r = spawnSync("systemd-analyze", ["verify", file], { encoding: "utf8" });
  return { status: r.status, output: `${r.stdout}${r.stderr}${r.error ?? ""}` };
}

beforeAll(async () => {
  sb = makeSandbox("svc-s3");
  server = await startS3Server(sb.dir("s3rver"), BUCKET);
  writePiConfigFiles(sb.agentDir);
  writeFileExact(path.join(sb.home, ".aws", "credentials"), `[backup]\naws_access_key_id = ${S3RVER_KEY}\naws_secret_access_key = ${SECRET}\n`, 0o600);
  unit = path.join(sb.configHome, "systemd", "user", "pi-guard-watch.service");
  await ok(sb, ["init"], { env: shellEnv() });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  sb?.cleanup();
});

describe("service install with an S3 repository", () => {
  it("a profile from ~/.aws/credentials: the unit carries endpoint, region and profile; run with env -i as systemd would, its watcher snapshots into the bucket", { timeout: 120_000 }, async () => {
    const out = await ok(sb, ["service", "install", "--platform", "linux"], { env: shellEnv() });
    const text = readFileSync(unit, "utf8");
    const verified = verifyUnit(unit);
    expect(verified.status, verified.output).toBe(0);
    expect(text).not.toContain(SECRET);
    expect(out.stdout).not.toContain(SECRET);

    const before = (await ok(sb, ["snapshots", "--json"], { env: shellEnv() })).json<unknown[]>().length;
    const run = await runUnitWatcher(unit);
    expect(run.code, run.output).toBe(0);
    expect(run.output).not.toMatch(/no AWS credentials|cannot reach S3/);
    const after = (await ok(sb, ["snapshots", "--json"], { env: shellEnv() })).json<{ id: string }[]>();
    expect(after.length).toBeGreaterThan(before);
    expect(after.map((s) => s.id)).toContain(run.state.lastSnapshot!.id);

    const { env } = parseUnit(unit);
    expect(env).toMatchObject({ PI_GUARD_REPO: REPO, AWS_ENDPOINT_URL: server.endpoint, AWS_REGION: "us-east-1", AWS_PROFILE: "backup", HOME: sb.home });
    expect(Object.keys(env).filter((k) => /SECRET|SESSION_TOKEN|PASSWORD$/.test(k))).toEqual([]);
  });

  it("keys only in the shell's environment: refused (they would not reach the service); --save-aws-credentials keeps them in a 0600 file the unit names, never in the unit", { timeout: 120_000 }, async () => {
    const keys = { AWS_PROFILE: undefined, AWS_ACCESS_KEY_ID: S3RVER_KEY, AWS_SECRET_ACCESS_KEY: SECRET };
    const previous = readFileSync(unit, "utf8");
    const refused = expectOneLineError(await cli(sb, ["service", "install", "--platform", "linux"], { env: shellEnv(keys) }), 2);
    expect(refused).toMatch(/AWS_SECRET_ACCESS_KEY/);
    expect(refused).toMatch(/--save-aws-credentials/);
    expect(refused).not.toContain(SECRET);
    expect(readFileSync(unit, "utf8")).toBe(previous);

    const saved = await ok(sb, ["service", "install", "--platform", "linux", "--save-aws-credentials", "--json"], { env: shellEnv(keys) });
    expect(saved.stdout).not.toContain(SECRET);
    const text = readFileSync(unit, "utf8");
    expect(text).not.toContain(SECRET);
    const credFile = path.join(sb.configHome, "pi-guard", "aws-credentials");
    expect(saved.json()).toMatchObject({ file: unit, awsCredentialsFile: credFile });
    expect(statSync(credFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(credFile, "utf8")).toContain(SECRET);
    const { env } = parseUnit(unit);
    expect(env).toMatchObject({ AWS_SHARED_CREDENTIALS_FILE: credFile, AWS_ENDPOINT_URL: server.endpoint });
    expect(env.AWS_ACCESS_KEY_ID).toBeUndefined();
    expect(env.AWS_SECRET_ACCESS_KEY).toBeUndefined();
    expect(verifyUnit(unit).status).toBe(0);

    const run = await runUnitWatcher(unit);
    expect(run.code, run.output).toBe(0);

    // Temporary keys would stop working under the service: refused even with the flag.
    const temporary = await cli(sb, ["service", "install", "--platform", "linux", "--save-aws-credentials"], { env: shellEnv({ ...keys, AWS_SESSION_TOKEN: "tok-123" }) });
    expect(expectOneLineError(temporary, 2)).toMatch(/AWS_SESSION_TOKEN/);
    expect(readFileSync(unit, "utf8")).toBe(text);

    // uninstall removes the credentials file it wrote along with the unit.
    expect((await ok(sb, ["service", "uninstall", "--platform", "linux", "--json"], { env: shellEnv() })).json()).toMatchObject({ removed: true });
    expect(existsSync(credFile)).toBe(false);
  });

  it("what the service would not have is refused at install, as it would run (env -i): a credential_process found only on the shell's PATH, a wrong endpoint; nothing is written", { timeout: 120_000 }, async () => {
    // The shell opens the repository through a profile whose credential_process is found on its PATH.
    const bin = sb.dir("shell-bin");
    const helper = path.join(bin, "pi-guard-test-creds");
    writeFileSync(helper, `#!/bin/sh\necho '{"Version": 1, "AccessKeyId": "${S3RVER_KEY}", "SecretAccessKey": "${SECRET}"}'\n`);
    chmodSync(helper, 0o755);
    writeFileExact(path.join(sb.home, ".aws", "config"), `[profile proc]\ncredential_process = pi-guard-test-creds\n`, 0o600);
    const procEnv = shellEnv({ AWS_PROFILE: "proc", PATH: `${bin}:${process.env.PATH}` });
    await ok(sb, ["snapshots"], { env: procEnv });
    rmSync(unit, { force: true });
    const refused = expectOneLineError(await cli(sb, ["service", "install", "--platform", "linux"], { env: procEnv }), 1);
    expect(refused).toMatch(/the service would not open the repository/);
    expect(refused).toMatch(/AWS credentials/);
    expect(existsSync(unit)).toBe(false);
    // The dry run checks the same way.
    expectOneLineError(await cli(sb, ["service", "install", "--platform", "linux", "--dry-run"], { env: procEnv }), 1);

    // An endpoint where nothing listens: refused after the check's short retry budget, in one line.
    const down = expectOneLineError(await cli(sb, ["service", "install", "--platform", "linux"], { env: shellEnv({ AWS_ENDPOINT_URL: "http://127.0.0.1:9" }) }), 1);
    expect(down).toMatch(/the service would not open the repository.*cannot reach S3 at 127\.0\.0\.1:9: ECONNREFUSED/);
    expect(existsSync(unit)).toBe(false);
  });
});
