// Issue 17 item 14: a disaster restore on a new machine writes nothing into the repository. A
// restore into a missing (or empty) agent dir has nothing to protect, so it takes no pre-restore
// snapshot; the bucket holds exactly the objects it held before, and a third machine's
// `restore latest` still finds one host only. A repository the credentials cannot write (an S3
// proxy that answers 403 to every write, a real read-only bind mount) is restored from all the
// same; a restore that would replace files there refuses, since it could not save them first.
// Without a lock a pack removed meanwhile makes the restore fail loudly, never return wrong bytes.
import { execFile, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok } from "../helpers/cli.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { fingerprint, listFiles, makeSandbox, type Sandbox, treeState, writePiConfigFiles } from "../helpers/tmp.js";

const BUCKET = "disaster";
const REPO = `s3://${BUCKET}/pi`;

/** Every object of the bucket with its size and ETag (an independent client: the AWS CLI). */
async function bucketObjects(server: S3Server, home: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)("aws", ["--endpoint-url", server.endpoint, "s3api", "list-objects-v2", "--bucket", BUCKET, "--output", "json"], {
    env: { PATH: process.env.PATH, HOME: home, AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_DEFAULT_REGION: "us-east-1" },
  });
  const listed = (stdout.trim() ? JSON.parse(stdout).Contents ?? [] : []) as { Key: string; ETag: string; Size: number }[];
  return listed.map((o) => `${o.Key} ${o.Size} ${o.ETag}`).sort();
}

/**
 * An HTTP proxy in front of s3rver for credentials that may only read: every PUT, POST and DELETE
 * is answered 403 AccessDenied, as S3 answers a policy with only s3:GetObject and s3:ListBucket.
 */
async function readOnlyProxy(upstream: number): Promise<{ endpoint: string; denied: string[]; close(): Promise<void> }> {
  const denied: string[] = [];
  const server = http.createServer((req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      denied.push(`${req.method} ${req.url}`);
      req.resume();
      req.on("end", () => {
        res.writeHead(403, { "content-type": "application/xml" });
        res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>');
      });
      return;
    }
    const up = http.request({ host: "127.0.0.1", port: upstream, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { endpoint: `http://127.0.0.1:${port}`, denied, close: () => new Promise((r) => server.close(() => r())) };
}

describe("a new machine restores from S3 and writes nothing there", () => {
  let server: S3Server;
  let a: Sandbox;
  let key: string;
  let envA: Record<string, string>;
  let sessionId: string;

  beforeAll(async () => {
    a = makeSandbox("disaster-a");
    server = await startS3Server(a.dir("s3rver"), BUCKET);
    envA = { ...a.env, ...server.env, PI_GUARD_REPO: REPO, PI_GUARD_HOST: "alpha" };
    writePiConfigFiles(a.agentDir);
    await ok(envA, ["init"]);
    const s = await makePiSession({
      agentDir: a.agentDir,
      cwd: a.dir("project"),
      turns: [
        { user: "plan the work", assistant: [fauxText("a plan")] },
        { user: "do it", assistant: [fauxText("done")] },
      ],
    });
    sessionId = s.sessionId;
    await ok(envA, ["sessions", "tag", sessionId, "important"]);
    await ok(envA, ["snapshot"]);
    key = path.join(a.root, "the-key");
    copyFileSync(path.join(a.configHome, "pi-guard", "key"), key);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    a?.cleanup();
  });

  /** A machine with nothing of pi or pi-guard on it, only the bucket's address and the key file. */
  const newMachine = (label: string, host: string, endpoint = server.endpoint) => {
    const sb = makeSandbox(label);
    const { PI_GUARD_REPO: _none, ...bare } = sb.env;
    return { sb, env: { ...bare, ...server.env, AWS_ENDPOINT_URL: endpoint, PI_GUARD_HOST: host }, flags: ["--repo", REPO, "--key-file", key] };
  };

  it("restore latest in place into a missing agent dir: the agent dir comes back, the bucket is unchanged, no pre-restore snapshot", { timeout: 90_000 }, async () => {
    const before = await bucketObjects(server, a.home);
    const { sb, env, flags } = newMachine("disaster-b", "bravo");
    try {
      expect(existsSync(sb.agentDir)).toBe(false);
      const r = (await ok(env, ["restore", "latest", ...flags, "--json"])).json<{ undoSnapshot: string | null; create: number; failed: unknown[] }>();
      expect(r.failed).toEqual([]);
      expect(r.undoSnapshot).toBeNull();
      expect(r.create).toBeGreaterThanOrEqual(4);
      expect(fingerprint(treeState(sb.agentDir))).toEqual(fingerprint(treeState(a.agentDir)));
      expect(await bucketObjects(server, a.home)).toEqual(before);
      // pi-guard's own metadata came back to its own place, not into the agent dir.
      expect(existsSync(path.join(sb.dataHome, "pi-guard", "meta", "tags.json"))).toBe(true);
    } finally {
      sb.cleanup();
    }
  });

  it("a third machine's restore latest (no --host) and --host alpha still work", { timeout: 60_000 }, async () => {
    const { sb, env, flags } = newMachine("disaster-c", "charlie");
    try {
      const hosts = (await ok(env, ["snapshots", ...flags, "--json"])).json<{ host: string }[]>().map((s) => s.host);
      expect([...new Set(hosts)]).toEqual(["alpha"]);
      await ok(env, ["restore", "latest", ...flags, "--target", path.join(sb.root, "any")]);
      await ok(env, ["restore", "latest", ...flags, "--host", "alpha", "--target", path.join(sb.root, "alpha")]);
      expect(fingerprint(treeState(path.join(sb.root, "alpha")))).toEqual(fingerprint(treeState(a.agentDir)));
    } finally {
      sb.cleanup();
    }
  });

  it("with credentials that cannot write (403 to every write): a dry run, --target and an in-place restore into an empty agent dir work", { timeout: 90_000 }, async () => {
    const proxy = await readOnlyProxy(server.port);
    const before = await bucketObjects(server, a.home);
    const { sb, env, flags } = newMachine("disaster-ro", "delta", proxy.endpoint);
    try {
      await ok(env, ["restore", "latest", ...flags, "--dry-run"]);
      await ok(env, ["restore", "latest", ...flags, "--target", path.join(sb.root, "t")]);
      mkdirSync(sb.agentDir, { recursive: true }); // empty: nothing to protect
      const r = await ok(env, ["restore", "latest", ...flags, "--json"]);
      expect(r.json<{ undoSnapshot: string | null }>().undoSnapshot).toBeNull();
      expect(r.stderr).toMatch(/without a lock/);
      expect(fingerprint(treeState(sb.agentDir))).toEqual(fingerprint(treeState(a.agentDir)));
      // --no-lock: not even the attempt at a lock object.
      const writes = proxy.denied.length;
      await ok(env, ["restore", "latest", ...flags, "--no-lock", "--dry-run"]);
      expect(proxy.denied.length).toBe(writes);
      expect(await bucketObjects(server, a.home)).toEqual(before);
    } finally {
      await proxy.close();
      sb.cleanup();
    }
  });

  it("with credentials that cannot write, a restore that would replace files refuses in one line and changes nothing", { timeout: 60_000 }, async () => {
    const proxy = await readOnlyProxy(server.port);
    const { sb, env, flags } = newMachine("disaster-ro2", "echo", proxy.endpoint);
    try {
      writePiConfigFiles(sb.agentDir);
      writeFileSync(path.join(sb.agentDir, "settings.json"), '{"theme":"mine"}');
      const before = fingerprint(treeState(sb.agentDir));
      const line = expectOneLineError(await cli(env, ["restore", "latest", ...flags]), 1);
      expect(line).toMatch(/cannot save .*before restoring over it|read-only|cannot write/);
      expect(line).toMatch(/nothing was restored/);
      expect(fingerprint(treeState(sb.agentDir))).toEqual(before);
    } finally {
      await proxy.close();
      sb.cleanup();
    }
  });
});

describe("a repository on a read-only mount", () => {
  let sb: Sandbox;
  let ro: string;
  let original: Record<string, string>;

  beforeAll(async () => {
    sb = makeSandbox("ro-mount");
    writePiConfigFiles(sb.agentDir);
    await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("p1"), turns: [{ user: "one", assistant: [fauxText("x".repeat(200_000))] }] });
    await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("p2"), turns: [{ user: "two", assistant: [fauxText("y".repeat(200_000))] }] });
    await ok(sb, ["init"]);
    await ok(sb, ["snapshot"]);
    original = fingerprint(treeState(sb.agentDir));
    ro = path.join(sb.root, "ro-repo");
    mkdirSync(ro);
    for (const args of [["--bind", sb.repo, ro], ["-o", "remount,bind,ro", ro]]) {
      const m = spawnSync("mount", args, { encoding: "utf8" });
      if (m.status !== 0) throw new Error(`mount ${args.join(" ")} failed: ${m.stderr}`);
    }
    // The mount is really read-only, for root too.
    expect(spawnSync("touch", [path.join(ro, "probe")]).status).not.toBe(0);
  }, 120_000);

  afterAll(() => {
    if (ro) spawnSync("umount", [ro]);
    sb?.cleanup();
  });

  it("restores in place into a missing agent dir, and --target, with a warning that no lock was taken", async () => {
    rmSync(sb.agentDir, { recursive: true });
    const r = await ok(sb, ["restore", "latest", "--repo", ro, "--json"]);
    expect(r.stderr).toMatch(/without a lock/);
    expect(fingerprint(treeState(sb.agentDir))).toEqual(original);
    await ok(sb, ["restore", "latest", "--repo", ro, "--target", path.join(sb.root, "t")]);
  });

  it("a pack gone while no lock protects the restore: the files it held fail loudly, no file holds wrong bytes", async () => {
    const packs = listFiles(path.join(sb.repo, "data")).sort((x, y) => statSync(y).size - statSync(x).size);
    rmSync(packs[0]); // what a prune on another machine does to a pack this restore needs
    rmSync(sb.agentDir, { recursive: true });
    const r = await cli(sb, ["restore", "latest", "--repo", ro, "--json"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/not restored/);
    const now = fingerprint(treeState(sb.agentDir));
    for (const [rel, print] of Object.entries(now)) expect(print, rel).toBe(original[rel]);
    expect(Object.keys(now).length).toBeLessThan(Object.keys(original).length);
    expect(readdirSync(sb.agentDir).some((n) => n.includes(".pi-guard-"))).toBe(false);
  });
});
