// `pi-guard service`: the generated systemd unit passes `systemd-analyze verify`, the launchd plist
// parses with python's plistlib (and `plutil -lint` where it exists), the service refuses to be
// installed when only a prompt or an environment password would open the repository, never
// carries the password, and uninstall removes only a file pi-guard wrote.
// Nothing here talks to a real systemd or launchd: --enable/--disable are not used.

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { NODE_FLAGS, RUNTIME_ENV } from "../../src/runtime.js";
import { launchdPlist, systemdUnit } from "../../src/watch/service.js";
import { cli, expectOneLineError, initRepo, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

const haveAnalyze = spawnSync("systemd-analyze", ["--version"]).status === 0;
const havePython = spawnSync("python3", ["-c", "import plistlib"]).status === 0;
const havePlutil = spawnSync("plutil", ["-help"]).error === undefined;

function verifyUnit(file: string): { status: number | null; output: string } {
  const r = spawnSync("systemd-analyze", ["verify", file], { encoding: "utf8" });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

function parsePlist(file: string): Record<string, unknown> {
  const r = spawnSync("python3", ["-c", "import plistlib,json,sys; print(json.dumps(plistlib.load(open(sys.argv[1],'rb'))))", file], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`plistlib could not parse ${file}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

describe("pi-guard service", () => {
  let sb: Sandbox | undefined;
  afterEach(() => sb?.cleanup());

  async function setup(label: string): Promise<Sandbox> {
    sb = makeSandbox(label);
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);
    return sb;
  }

  it.skipIf(!haveAnalyze)("install writes a systemd user unit that systemd-analyze verify accepts; status and uninstall", async () => {
    const s = await setup("svc-linux");
    const unit = path.join(s.configHome, "systemd", "user", "pi-guard-watch.service");
    const dry = (await ok(s, ["service", "install", "--platform", "linux", "--dry-run", "--json"])).json();
    expect(dry).toMatchObject({ dryRun: true, file: unit, enable: "systemctl --user daemon-reload && systemctl --user enable --now pi-guard-watch" });
    expect(existsSync(unit)).toBe(false);

    const out = await ok(s, ["service", "install", "--platform", "linux"]);
    expect(out.stdout).toContain(`wrote ${unit}`);
    expect(out.stdout).toContain("systemctl --user daemon-reload && systemctl --user enable --now pi-guard-watch");
    const text = readFileSync(unit, "utf8");
    expect(out.stdout).toContain(text);
    expect(text).toMatch(/^Restart=on-failure$/m);
    // The service's node runs as the CLI's shebang runs it.
    expect(text).toMatch(/^ExecStart=".*node" "--max-semi-space-size=1" ".*pi-guard\.js" watch$/m);
    expect(text).toContain('Environment="MALLOC_MMAP_THRESHOLD_=262144"');
    expect(text).toContain('Environment="UV_THREADPOOL_SIZE=2"');
    expect(text).toContain(`Environment="PI_GUARD_KEY_FILE=${path.join(s.configHome, "pi-guard", "key")}"`);
    expect(text).toContain(`Environment="PI_GUARD_REPO=${s.repo}"`);
    expect(text).toContain(`Environment="PI_CODING_AGENT_DIR=${s.agentDir}"`);
    const verified = verifyUnit(unit);
    expect(verified.status, verified.output).toBe(0);

    const st = (await ok(s, ["service", "status", "--platform", "linux", "--json"])).json();
    expect(st).toMatchObject({ installed: true, file: unit });
    // Installing again replaces our own file.
    expect((await ok(s, ["service", "install", "--platform", "linux", "--json"])).json().replaced).toBe(true);

    expect((await ok(s, ["service", "uninstall", "--platform", "linux", "--json"])).json()).toMatchObject({ removed: true, file: unit });
    expect(existsSync(unit)).toBe(false);
    const after = await cli(s, ["service", "status", "--platform", "linux", "--json"]);
    expect(after.code).toBe(1);
    expect(after.json().installed).toBe(false);
    expectOneLineError(await cli(s, ["service", "uninstall", "--platform", "linux"]), 1);
  });

  it.skipIf(!haveAnalyze)("quoting survives spaces, % and $ in paths (systemd-analyze verify on the unit)", () => {
    sb = makeSandbox("svc-quote");
    const dir = sb.dir("odd dir 50%$HOME");
    const node = path.join(dir, "no de");
    symlinkSync(process.execPath, node);
    const unitDir = sb.dir("units");
    const file = path.join(unitDir, "pi-guard-watch.service");
    writeFileSync(file, systemdUnit({ node, bin: path.join(dir, "pi guard.js") }, { PI_GUARD_PASSWORD_FILE: path.join(dir, "pass \"word\"") }));
    const text = readFileSync(file, "utf8");
    // The program path is never expanded; an argument's $ is.
    expect(text).toContain(`ExecStart="${node.replace("%", "%%")}" "--max-semi-space-size=1" "${path.join(dir, "pi guard.js").replace("%", "%%").replace("$", "$$$$")}" watch`);
    expect(text).toContain('pass \\"word\\"');
    const verified = verifyUnit(file);
    expect(verified.status, verified.output).toBe(0);
  });

  it("the settings a service passes to node are the ones bin/pi-guard.js's shebang line sets", () => {
    const shebang = readFileSync(path.join(import.meta.dirname, "../../bin/pi-guard.js"), "utf8").split("\n")[0];
    const env = Object.entries(RUNTIME_ENV).map(([k, v]) => `${k}=${v}`);
    expect(shebang).toBe(`#!/usr/bin/env -S ${env.join(" ")} node ${NODE_FLAGS.join(" ")}`);
  });

  it.skipIf(!havePython)("install --platform darwin writes a launchd plist with KeepAlive on failure", async () => {
    const s = await setup("svc-darwin");
    const plist = path.join(s.home, "Library", "LaunchAgents", "dev.pi-guard.watch.plist");
    const out = (await ok(s, ["service", "install", "--platform", "darwin", "--json"])).json();
    expect(out).toMatchObject({ platform: "darwin", file: plist, enable: `launchctl load -w ${plist}` });
    const p = parsePlist(plist);
    expect(p.Label).toBe("dev.pi-guard.watch");
    expect(p.ProgramArguments).toEqual([process.execPath, "--max-semi-space-size=1", expect.stringMatching(/pi-guard\.js$/), "watch"]);
    expect(p.KeepAlive).toEqual({ SuccessfulExit: false });
    expect(p.RunAtLoad).toBe(true);
    expect(p.EnvironmentVariables).toMatchObject({ MALLOC_MMAP_THRESHOLD_: "262144", UV_THREADPOOL_SIZE: "2", PI_GUARD_REPO: s.repo, PI_CODING_AGENT_DIR: s.agentDir, PI_GUARD_KEY_FILE: path.join(s.configHome, "pi-guard", "key") });
    if (havePlutil) expect(spawnSync("plutil", ["-lint", plist]).status).toBe(0);
    // XML special characters in a value stay intact.
    const odd = path.join(s.root, "odd");
    writeFileSync(odd, launchdPlist({ node: "/n", bin: "/b<&>" }, { PI_GUARD_REPO: `/r/"a" & <b>` }, "/s"));
    expect(parsePlist(odd)).toMatchObject({ ProgramArguments: ["/n", "--max-semi-space-size=1", "/b<&>", "watch"], EnvironmentVariables: { PI_GUARD_REPO: `/r/"a" & <b>` } });
    expect((await ok(s, ["service", "uninstall", "--platform", "darwin", "--json"])).json().removed).toBe(true);
  });

  it("refuses without a key file or password file, and with only PI_GUARD_PASSWORD; a password file is named, never its content", async () => {
    sb = makeSandbox("svc-cred");
    writePiConfigFiles(sb.agentDir);
    const password = "correct horse battery staple";
    await ok(sb, ["init"], { env: { PI_GUARD_PASSWORD: password } });
    const unit = path.join(sb.configHome, "systemd", "user", "pi-guard-watch.service");
    const none = expectOneLineError(await cli(sb, ["service", "install", "--platform", "linux"]), 1);
    expect(none).toMatch(/cannot answer a password prompt/);
    const envOnly = expectOneLineError(await cli(sb, ["service", "install", "--platform", "linux"], { env: { PI_GUARD_PASSWORD: password } }), 2);
    expect(envOnly).toMatch(/PI_GUARD_PASSWORD.*PI_GUARD_PASSWORD_FILE/);
    expect(existsSync(unit)).toBe(false);

    const passFile = path.join(sb.root, "secret-pass");
    writeFileSync(passFile, `${password}\n`, { mode: 0o600 });
    const out = await ok(sb, ["service", "install", "--platform", "linux"], { env: { PI_GUARD_PASSWORD_FILE: passFile } });
    const text = readFileSync(unit, "utf8");
    expect(text).toContain(`Environment="PI_GUARD_PASSWORD_FILE=${passFile}"`);
    expect(text).not.toContain(password);
    expect(out.stdout).not.toContain(password);

    // A wrong password file does not open the repository: nothing is (re)written.
    writeFileSync(passFile, "wrong\n");
    const before = readFileSync(unit, "utf8");
    expect((await cli(sb, ["service", "install", "--platform", "linux"], { env: { PI_GUARD_PASSWORD_FILE: passFile } })).code).not.toBe(0);
    expect(readFileSync(unit, "utf8")).toBe(before);
  });

  it("never overwrites or removes a service file it did not write", async () => {
    const s = await setup("svc-foreign");
    const unit = path.join(s.configHome, "systemd", "user", "pi-guard-watch.service");
    mkdirSync(path.dirname(unit), { recursive: true });
    writeFileSync(unit, "[Service]\nExecStart=/bin/true\n");
    expect(expectOneLineError(await cli(s, ["service", "install", "--platform", "linux"]), 1)).toMatch(/not written by pi-guard/);
    expect(expectOneLineError(await cli(s, ["service", "uninstall", "--platform", "linux"]), 1)).toMatch(/not written by pi-guard/);
    expect(readFileSync(unit, "utf8")).toBe("[Service]\nExecStart=/bin/true\n");
    expect((await cli(s, ["service", "status", "--platform", "linux", "--json"])).json()).toMatchObject({ installed: false, foreign: true });
    expectOneLineError(await cli(s, ["service", "install", "--platform", "windows"]), 2);
  });
});
