// Invariant 8: bad input gets one clear line on stderr and a non-zero exit (2 for usage errors),
// never a stack trace, and nothing is left half-written.

import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readKeyFile } from "../../src/config/credentials.js";
import { Repository } from "../../src/repo/repository.js";
import { LocalTarget } from "../../src/targets/local.js";
import { cli, expectOneLineError, initRepo, ok, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writeFileExact, writePiConfigFiles } from "../helpers/tmp.js";

describe("clear one-line errors", () => {
  let sb: Sandbox;
  let first: SnapshotJson;

  beforeAll(async () => {
    sb = makeSandbox("errors");
    writePiConfigFiles(sb.agentDir);
    writeFileExact(path.join(sb.sessionsDir, "--p--", "2026-01-01T00-00-00-000Z_0b9c5c3e-0000-4000-8000-000000000000.jsonl"), '{"type":"session","version":3,"id":"0b9c5c3e-0000-4000-8000-000000000000","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n', 0o644);
    await initRepo(sb);
    first = await snapshot(sb);
  });

  afterAll(() => sb?.cleanup());

  it("unknown command and unknown option exit 2", async () => {
    expect(expectOneLineError(await cli(sb, ["frobnicate"]), 2)).toMatch(/unknown command 'frobnicate'/);
    expect(expectOneLineError(await cli(sb, ["snapshott"]), 2)).toMatch(/unknown command/);
    expect(expectOneLineError(await cli(sb, ["snapshot", "--bogus"]), 2)).toMatch(/unknown option '--bogus'/);
    expect(expectOneLineError(await cli(sb, ["restore"]), 2)).toMatch(/missing required argument/);
    expect(expectOneLineError(await cli(sb, ["snapshots", "--lock-wait", "soon"]), 2)).toMatch(/--lock-wait/);
  });

  it("a missing repository", async () => {
    const missing = path.join(sb.root, "no-such-repo");
    const line = expectOneLineError(await cli(sb, ["snapshot"], { env: { PI_GUARD_REPO: missing } }), 1);
    expect(line).toContain(missing);
    expect(line).toMatch(/no repository/);
    expect(existsSync(missing)).toBe(false);
    expectOneLineError(await cli(sb, ["restore", "latest"], { env: { PI_GUARD_REPO: missing } }), 1);
  });

  it("a wrong password, and no password at all", async () => {
    const pwRepo = path.join(sb.root, "pw-repo");
    await ok(sb, ["init"], { env: { PI_GUARD_REPO: pwRepo, PI_GUARD_PASSWORD: "correct horse" } });
    const wrong = expectOneLineError(await cli(sb, ["snapshots"], { env: { PI_GUARD_REPO: pwRepo, PI_GUARD_PASSWORD: "battery staple" } }), 1);
    expect(wrong).toMatch(/password/i);
    const pwFile = path.join(sb.root, "pw.txt");
    writeFileSync(pwFile, "also wrong\n");
    expectOneLineError(await cli(sb, ["snapshots", "--password-file", pwFile], { env: { PI_GUARD_REPO: pwRepo } }), 1);
    // No password and no key file for it (the sandbox key file belongs to the other repo).
    const none = await cli(sb, ["snapshots"], { env: { PI_GUARD_REPO: pwRepo, PI_GUARD_KEY_FILE: path.join(sb.root, "no-key") } });
    expect(expectOneLineError(none, 1)).toMatch(/PI_GUARD_PASSWORD/);
    await ok(sb, ["snapshots"], { env: { PI_GUARD_REPO: pwRepo, PI_GUARD_PASSWORD: "correct horse" } });
  });

  it("an unknown time expression exits 2; an unknown id prefix exits 1", async () => {
    expect(expectOneLineError(await cli(sb, ["restore", "blorp flub", "--dry-run"]), 2)).toMatch(/cannot read "blorp flub" as a time/);
    expect(expectOneLineError(await cli(sb, ["restore", "", "--dry-run"]), 2)).toMatch(/no time given/);
    const unknownId = first.snapshotId.startsWith("ffff") ? "eeeeeeee" : "ffffffff";
    expect(expectOneLineError(await cli(sb, ["restore", unknownId, "--dry-run"]), 1)).toMatch(/no snapshot has an id starting with/);
  });

  it("a time before the first snapshot", async () => {
    const line = expectOneLineError(await cli(sb, ["restore", "2020-01-01", "--dry-run"]), 1);
    expect(line).toMatch(/no snapshot at or before 2020-01-01/);
  });

  it("a target below a regular file", async () => {
    const file = path.join(sb.root, "a-file");
    writeFileSync(file, "keep me\n");
    const line = expectOneLineError(await cli(sb, ["restore", "latest", "--target", path.join(file, "sub")]), 1);
    expect(line).toMatch(/not a directory/);
    expect(readFileSync(file, "utf8")).toBe("keep me\n");
  });

  it("a target under /proc (unwritable even for root)", async () => {
    const target = `/proc/pi-guard-test-${process.pid}/restore`;
    // Node 20's recursive mkdir spins forever on /proc; the timeout turns a hang into a failure.
    const r = await cli(sb, ["restore", "latest", "--target", target], { timeoutMs: 15_000 });
    expect(r.signal, "pi-guard hung on a /proc target").toBeNull();
    expect(expectOneLineError(r, 1)).toContain(target);
  });

  it("init twice keeps the repository and the key file", async () => {
    const key = path.join(sb.configHome, "pi-guard", "key");
    const keyBefore = readFileSync(key, "utf8");
    const config = readFileSync(path.join(sb.repo, "config"), "utf8");
    expect(expectOneLineError(await cli(sb, ["init"]), 1)).toMatch(/already exists/);
    expect(readFileSync(key, "utf8")).toBe(keyBefore);
    expect(readFileSync(path.join(sb.repo, "config"), "utf8")).toBe(config);
  });

  it("a repository inside the agent dir is refused, for init and for snapshot", async () => {
    const inside = path.join(sb.agentDir, "backups");
    const line = expectOneLineError(await cli(sb, ["init"], { env: { PI_GUARD_REPO: inside, PI_GUARD_PASSWORD: "pw" } }), 2);
    expect(line).toMatch(/inside the agent dir/);
    expect(existsSync(inside)).toBe(false);
    // A repository copied there by hand is refused too: the next npm reify would take it.
    cpSync(sb.repo, inside, { recursive: true });
    const snap = expectOneLineError(await cli(sb, ["snapshot"], { env: { PI_GUARD_REPO: inside } }), 2);
    expect(snap).toMatch(/inside the agent dir/);
    expect(readdirSync(path.join(inside, "snapshots"))).toHaveLength(1);
  });

  it("an invalid config file: bad JSON, unknown key, wrong type", async () => {
    const cfgDir = path.join(sb.root, "bad-config");
    mkdirSync(cfgDir, { recursive: true });
    const cases: [string, RegExp][] = [
      ["{ not json", /not valid JSON/],
      ['{"repoo": "/tmp/x"}', /repoo/],
      ['{"repo": 5}', /repo/],
      ['{"sources": {"exclude": "sessions"}}', /sources\.exclude/],
    ];
    for (const [i, [text, pattern]] of cases.entries()) {
      const file = path.join(cfgDir, `config-${i}.json`);
      writeFileSync(file, text);
      const line = expectOneLineError(await cli(sb, ["snapshots", "--config", file]), 2);
      expect(line).toMatch(pattern);
      expect(line).toContain(file);
    }
    // The default location ($XDG_CONFIG_HOME/pi-guard/config.json) is read and checked too.
    const xdg = path.join(sb.root, "xdg-bad");
    mkdirSync(path.join(xdg, "pi-guard"), { recursive: true });
    writeFileSync(path.join(xdg, "pi-guard", "config.json"), "[1,2");
    expectOneLineError(await cli(sb, ["snapshots"], { env: { XDG_CONFIG_HOME: xdg, PI_GUARD_KEY_FILE: path.join(sb.configHome, "pi-guard", "key") } }), 2);
  });

  it("a tarball that is not one", async () => {
    const notTar = path.join(sb.root, "not.tar.gz");
    writeFileSync(notTar, "this is not a tar archive\n".repeat(100));
    expectOneLineError(await cli(sb, ["snapshot", "--from-tar", notTar]), 2);
    expectOneLineError(await cli(sb, ["snapshot", "--from-tar", path.join(sb.root, "missing.tar.gz")]));
  });

  it("an ambiguous snapshot id prefix exits 2 and lists the candidates", async () => {
    // Snapshot ids are SHA-256 names; two that share 4 hex digits take a few hundred snapshots.
    // Writing real snapshot objects through the library is much faster than a few hundred CLI runs.
    const cred = await readKeyFile(path.join(sb.configHome, "pi-guard", "key"));
    const repo = await Repository.open(new LocalTarget(sb.repo), cred!);
    const base = (await repo.listSnapshots())[0];
    const byPrefix = new Map<string, string>();
    let pair: [string, string] | undefined;
    const made: string[] = [];
    for (let i = 1; !pair && i < 20_000; i++) {
      const id = await repo.saveSnapshot({ ...base.snapshot, time: new Date(Date.parse(base.snapshot.time) + i).toISOString(), tags: [`twin-${i}`] });
      made.push(id);
      const prefix = id.slice(0, 4);
      const other = byPrefix.get(prefix) ?? (base.id.startsWith(prefix) ? base.id : undefined);
      if (other) pair = [other, id];
      byPrefix.set(prefix, id);
    }
    expect(pair).toBeDefined();
    // Keep only the colliding pair, so the repository stays small.
    for (const id of made) if (!pair!.includes(id)) await repo.target.delete(`snapshots/${id}`);

    const prefix = pair![0].slice(0, 4);
    const line = expectOneLineError(await cli(sb, ["restore", prefix, "--dry-run"]), 2);
    expect(line).toMatch(/ambiguous/);
    expect(line).toContain(pair![0].slice(0, 12));
    expect(line).toContain(pair![1].slice(0, 12));
    // A longer prefix that tells them apart works.
    let n = 5;
    while (pair![0].slice(0, n) === pair![1].slice(0, n)) n++;
    await ok(sb, ["restore", pair![1].slice(0, n), "--dry-run"]);
  });

  it("left no temp files in the repository or the agent dir", () => {
    const leftovers: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const a = path.join(d, e.name);
        if (e.isDirectory()) walk(a);
        else if (/\.tmp-|pi-guard-/.test(e.name) && statSync(a).isFile()) leftovers.push(a);
      }
    };
    walk(sb.repo);
    walk(sb.agentDir);
    expect(leftovers).toEqual([]);
  });
});
