// Many hosts, one bucket (docs/FORMAT.md §9, docs/TARGETS.md "Several hosts"): two "hosts"
// (separate HOMEs and agent dirs, PI_GUARD_HOST alpha and beta, one key file) snapshot the same
// S3 prefix of a real s3rver at once; dedup works across them; prune waits for an appender;
// and a new machine with only the bucket address and the key restores either host's state.

import { copyFileSync, mkdirSync } from "node:fs";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { readKeyFile } from "../../src/config/credentials.js";
import { BlobType } from "../../src/repo/format.js";
import { acquireLock } from "../../src/repo/lock.js";
import { Repository } from "../../src/repo/repository.js";
import { openTarget } from "../../src/targets/open.js";
import { listNames } from "../../src/targets/target.js";
import { cli, collect, expectOneLineError, ok, spawnCli, type SnapshotJson, expectWaitsForLock } from "../helpers/cli.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { fingerprint, makeSandbox, treeState, type Sandbox } from "../helpers/tmp.js";

const BUCKET = "fleet";
const REPO = `s3://${BUCKET}/pi`;

let server: S3Server;
let a: Sandbox;
let b: Sandbox;
let envA: Record<string, string>;
let envB: Record<string, string>;
let sharedSession: string;
let repo: Repository;

const words = (n: number) => Array.from({ length: n }, () => randomBytes(3).toString("hex")).join(" ");
const keyOf = (sb: Sandbox) => path.join(sb.configHome, "pi-guard", "key");

beforeAll(async () => {
  a = makeSandbox("hosts-a");
  b = makeSandbox("hosts-b");
  server = await startS3Server(a.dir("s3rver"), BUCKET);
  envA = { ...a.env, ...server.env, PI_GUARD_REPO: REPO, PI_GUARD_HOST: "alpha" };
  envB = { ...b.env, ...server.env, PI_GUARD_REPO: REPO, PI_GUARD_HOST: "beta" };
  await ok(envA, ["init"]);
  mkdirSync(path.dirname(keyOf(b)), { recursive: true });
  copyFileSync(keyOf(a), keyOf(b));
  // A long real pi session on alpha (about 300 KB), a short different one on beta.
  const big = await makePiSession({
    agentDir: a.agentDir,
    cwd: a.dir("project"),
    turns: [
      { user: "Write the long report.", assistant: [fauxText(words(40_000))] },
      { user: "And the appendix.", assistant: [fauxText(words(30_000))] },
    ],
  });
  sharedSession = big.file;
  await makePiSession({ agentDir: b.agentDir, cwd: b.dir("project"), turns: [{ user: "hello from beta", assistant: [fauxText(words(200))] }] });
  const config = loadConfig({}, envA);
  repo = await Repository.open(openTarget(config, envA), (await readKeyFile(config.keyFile))!);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  a?.cleanup();
  b?.cleanup();
});

describe("many hosts, one bucket", () => {
  it("two hosts snapshot the same prefix at once: both append locks, both snapshots, check --read-data passes", { timeout: 90_000 }, async () => {
    // --lock-wait 0: if one append lock blocked the other, one of them would fail at once.
    const [ra, rb] = await Promise.all([collect(spawnCli(envA, ["snapshot", "--json", "--lock-wait", "0"])), collect(spawnCli(envB, ["snapshot", "--json", "--lock-wait", "0"]))]);
    expect(ra.code, ra.stderr).toBe(0);
    expect(rb.code, rb.stderr).toBe(0);
    const list = (await ok(envA, ["snapshots", "--json"])).json<{ id: string; host: string }[]>();
    expect(list.map((s) => s.host).sort()).toEqual(["alpha", "beta"]);
    expect(list.map((s) => s.id).sort()).toEqual([ra.json<SnapshotJson>().snapshotId, rb.json<SnapshotJson>().snapshotId].sort());
    const check = (await ok(envB, ["check", "--read-data", "--json"])).json<{ ok: boolean; snapshots: number }>();
    expect(check).toMatchObject({ ok: true, snapshots: 2 });
    expect((await ok(envB, ["snapshots", "--host", "beta", "--json"])).json<{ host: string }[]>().map((s) => s.host)).toEqual(["beta"]);
    const table = (await ok(envB, ["snapshots"])).stdout;
    expect(table).toMatch(/HOST/);
    expect(table).toMatch(/alpha/);
    expect(table).toMatch(/beta/);
  });

  it("dedup across hosts: beta snapshotting alpha's session file stores no data blob, only its new file list", { timeout: 60_000 }, async () => {
    const rel = path.relative(a.agentDir, sharedSession);
    mkdirSync(path.dirname(path.join(b.agentDir, rel)), { recursive: true });
    copyFileSync(sharedSession, path.join(b.agentDir, rel));
    const before = new Set(await listNames(repo.target, "index"));
    const s = (await ok(envB, ["snapshot", "--json"])).json<SnapshotJson>();
    const added = (await listNames(repo.target, "index")).filter((n) => !before.has(n));
    expect(added).toHaveLength(1);
    const blobs = (await repo.readIndexFile(added[0])).packs.flatMap((p) => p.blobs);
    // Every data chunk of the 300 KB file was already stored by alpha: the snapshot added only tree blobs.
    expect(blobs.filter((x) => x.type !== BlobType.Tree)).toEqual([]);
    expect(blobs.length).toBeGreaterThan(0);
    expect(s.filesNew).toBe(1);
    expect(s.bytesNew).toBe(blobs.reduce((n, x) => n + x.rawLength, 0));
    const size = treeState(b.agentDir).get(rel)!.size;
    expect(size).toBeGreaterThan(250_000);
    expect(s.bytesNew).toBeLessThan(size / 50);
  });

  it("prune (exclusive) refuses while another host's snapshot holds an append lock, then waits for it", { timeout: 60_000 }, async () => {
    const held = await acquireLock(repo, { mode: "append", command: "snapshot on beta" });
    try {
      expect(expectOneLineError(await cli(envA, ["prune", "--lock-wait", "0"]), 1)).toMatch(/locked by snapshot on beta/);
      await expectWaitsForLock(envA, ["prune", "--json", "--lock-wait", "30"], held);
    } finally {
      await held.release().catch(() => undefined);
    }
    await ok(envA, ["check", "--read-data"]);
  });

  it("a new machine with only the bucket and the key: refuses to guess between hosts, restores --host alpha or beta, and in place as its own host", { timeout: 90_000 }, async () => {
    const c = makeSandbox("hosts-new");
    try {
      const key = path.join(c.root, "only-the-key");
      copyFileSync(keyOf(a), key);
      // Nothing of either machine: no PI_GUARD_REPO, no config; the machine's own host name.
      const { PI_GUARD_REPO: _local, ...bare } = c.env;
      const env = { ...bare, ...server.env };
      const flags = ["--repo", REPO, "--key-file", key];
      const dest = path.join(c.root, "restored");

      const refused = expectOneLineError(await cli(env, ["restore", "latest", ...flags, "--target", dest]), 2);
      expect(refused).toMatch(/several hosts and none of this one .*--host: alpha \(1\), beta \(2\)/);
      expect(expectOneLineError(await cli(env, ["restore", "latest", ...flags, "--host", "gamma", "--target", dest]), 1)).toMatch(/no snapshot is from host "gamma"; hosts here: alpha \(1\), beta \(2\)/);

      const hosts = (await ok(env, ["snapshots", ...flags, "--json"])).json<{ host: string }[]>();
      expect(hosts.map((h) => h.host).sort()).toEqual(["alpha", "beta", "beta"]);

      const ra = (await ok(env, ["restore", "latest", ...flags, "--host", "alpha", "--target", dest, "--json"])).json<{ host: string }>();
      expect(ra.host).toBe("alpha");
      expect(fingerprint(treeState(dest))).toEqual(fingerprint(treeState(a.agentDir)));

      const destB = path.join(c.root, "restored-beta");
      await ok(env, ["restore", "latest", ...flags, "--host", "beta", "--target", destB]);
      expect(fingerprint(treeState(destB))).toEqual(fingerprint(treeState(b.agentDir)));

      // In place, into this machine's (missing) agent dir, as host beta: its own latest, no --host.
      const r = await ok(env, ["restore", "latest", ...flags, "--json"], { env: { PI_GUARD_HOST: "beta" } });
      expect(r.json<{ host: string; create: number }>()).toMatchObject({ host: "beta" });
      expect(fingerprint(treeState(c.agentDir))).toEqual(fingerprint(treeState(b.agentDir)));
    } finally {
      c.cleanup();
    }
  });
});
