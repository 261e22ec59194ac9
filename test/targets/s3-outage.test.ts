// S3 outages that a manual or cron run waits out (issue 17): the built CLI against a real s3rver
// behind a proxy that fails on purpose (test/targets/outage-proxy.ts). An outage longer than the
// few seconds of retries pi-guard used to allow (5 tries, about 4 s) is waited out within the
// retry budget, with one progress line per wait on stderr (never on --json stdout); a budget
// shorter than the outage fails in one line that names it; a permanent error is not retried.
// Nothing here times anything: the proxy's counts prove that the outage happened.

import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok, type CliResult } from "../helpers/cli.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { copyFixtures, fingerprint, makeSandbox, treeState, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";
import { startOutageProxy, type BodyFault, type OutageProxy } from "./outage-proxy.js";

const BUCKET = "outage";
const REPO = `s3://${BUCKET}/pi`;
/** Longer than all the waits of the old policy together (250 ms doubling to 2 s: 3.75 s at most). */
const OUTAGE_MS = 6_000;
const RETRY_LINE = /^pi-guard: retrying in \d+(\.\d)? s \(try \d+ failed, [^)]* of the [^)]* retry budget used\): /;

let sb: Sandbox;
let server: S3Server;
let proxy: OutageProxy;
let env: Record<string, string>;

function stderrLines(r: CliResult): string[] {
  return r.stderr.split("\n").filter((l) => l.trim() !== "");
}

beforeAll(async () => {
  sb = makeSandbox("s3-outage");
  server = await startS3Server(sb.dir("s3rver"), BUCKET);
  proxy = await startOutageProxy(server.port);
  env = { ...server.env, AWS_ENDPOINT_URL: proxy.endpoint, PI_GUARD_REPO: REPO };
  writePiConfigFiles(sb.agentDir);
  copyFixtures(sb.agentDir);
  await ok(sb, ["init"], { env });
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await server?.stop();
  sb?.cleanup();
});

/** A snapshot of a new incompressible 300 KiB file, whose first pack PUT long enough gets the body fault. */
async function snapshotWithBodyFault(name: string, action: BodyFault["action"], at: number, extraEnv: Record<string, string> = {}): Promise<CliResult> {
  writeFileSync(path.join(sb.agentDir, name), randomBytes(300 * 1024));
  proxy.armBodyFault({ action, trigger: /^PUT \S+\/data\//, at });
  return cli(sb, ["snapshot", "--json"], { env: { ...env, ...extraEnv } });
}

describe("S3 outages are waited out", () => {
  it("snapshot through an outage (connections refused) that starts at the first pack upload: it succeeds, with one progress line per wait", { timeout: 120_000 }, async () => {
    proxy.arm({ mode: "refuse", trigger: /^PUT \S+\/data\//, ms: OUTAGE_MS });
    const r = await cli(sb, ["snapshot", "--json"], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(proxy.stats).toMatchObject({ started: true, ended: true });
    expect(proxy.stats.triggeredBy).toMatch(/^PUT \S+\/data\//);
    // --json stdout is the report alone; the progress went to stderr.
    expect(r.json().snapshotId).toMatch(/^[0-9a-f]{64}$/);
    expect(r.stdout).not.toContain("retrying");
    const lines = stderrLines(r);
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) expect(l).toMatch(RETRY_LINE);
    expect(lines.join("\n")).toMatch(/cannot reach S3 at 127\.0\.0\.1:\d+: ECONN(REFUSED|RESET) during put data\//);
    const check = (await ok(sb, ["check", "--read-data", "--json"], { env })).json<{ ok: boolean }>();
    expect(check.ok).toBe(true);
  });

  it("restore through an outage (503 SlowDown) that starts at the first pack read: the files come back byte-identical", { timeout: 120_000 }, async () => {
    const dest = sb.dir("restored");
    await ok(sb, ["snapshot"], { env });
    proxy.arm({ mode: "503", trigger: /^GET \S+\/data\//, ms: OUTAGE_MS });
    const r = await cli(sb, ["restore", "latest", "--target", dest, "--json"], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(proxy.stats).toMatchObject({ started: true, ended: true });
    expect(proxy.stats.refusedRequests).toBeGreaterThan(0);
    expect(r.json().failed).toEqual([]);
    expect(fingerprint(treeState(dest))).toEqual(fingerprint(treeState(sb.agentDir)));
    const lines = stderrLines(r);
    for (const l of lines) expect(l).toMatch(RETRY_LINE);
    expect(lines.join("\n")).toMatch(/SlowDown \(HTTP 503\)/);
  });

  it("a `sessions search` on S3 (the plain search hands it to main.js, src/cli/search-plain.ts) through an outage at the first pack read: one progress line per wait", { timeout: 120_000 }, async () => {
    await ok(sb, ["snapshot"], { env });
    proxy.arm({ mode: "503", trigger: /^GET \S+\/data\//, ms: OUTAGE_MS });
    const r = await cli(sb, ["--json", "sessions", "search", "hello"], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(proxy.stats).toMatchObject({ started: true, ended: true });
    expect(proxy.stats.refusedRequests).toBeGreaterThan(0);
    expect(r.json<{ index: { indexed: number } }>().index.indexed).toBeGreaterThan(0);
    const lines = stderrLines(r);
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) expect(l).toMatch(RETRY_LINE);
  });

  it("a retry budget shorter than the outage (PI_GUARD_RETRY_MAX, or retry.maxMs in the config file) fails in one line that names the outage", { timeout: 120_000 }, async () => {
    const configFile = path.join(sb.root, "retry-config.json");
    writeFileSync(configFile, JSON.stringify({ retry: { maxMs: 2000 } }));
    for (const extra of [{ PI_GUARD_RETRY_MAX: "2s" }, { PI_GUARD_CONFIG: configFile }]) {
      proxy.arm({ mode: "503", trigger: /./, ms: 60_000 });
      const r = await cli(sb, ["snapshots"], { env: { ...env, ...extra } });
      await proxy.heal();
      expect(r.code, r.stderr).toBe(1);
      expect(proxy.stats.refusedRequests, r.stderr).toBeGreaterThan(1);
      const lines = stderrLines(r);
      const last = lines.at(-1)!;
      for (const l of lines.slice(0, -1)) expect(l).toMatch(RETRY_LINE);
      expect(lines.length).toBeGreaterThan(1);
      expect(last).toMatch(/^pi-guard: S3 at 127\.0\.0\.1:\d+ failed get config: SlowDown \(HTTP 503\), still failing after \d+ tries over \d+(\.\d)? s: the retry budget is 2 s \(PI_GUARD_RETRY_MAX, or retry\.maxMs in the config file\)$/);
    }
  });

  it("a permanent error (403 AccessDenied) fails at once, without retries", { timeout: 60_000 }, async () => {
    proxy.arm({ mode: "403", trigger: /./, ms: 60_000 });
    const r = await cli(sb, ["snapshots"], { env });
    await proxy.heal();
    expect(expectOneLineError(r, 1)).toMatch(/access denied/);
    // The HEAD that failed, and the listing that names what a bare 403 meant: nothing retried.
    expect(proxy.stats.refusedRequests).toBeLessThanOrEqual(2);
  });

  it("a pack PUT cut part-way through its body is sent again: the snapshot succeeds and reads back exact", { timeout: 120_000 }, async () => {
    const r = await snapshotWithBodyFault("cut-1.bin", "cut", 64 * 1024);
    expect(r.code, r.stderr).toBe(0);
    expect(proxy.bodyFaults).toHaveLength(1);
    expect(stderrLines(r).join("\n")).toMatch(/retrying in .*put data\//);
    const check = (await ok(sb, ["check", "--read-data", "--json"], { env })).json<{ ok: boolean }>();
    expect(check.ok).toBe(true);
  });

  it("with no retry budget, a pack PUT cut part-way fails the snapshot in one line: no snapshot is listed, and nothing half-stored", { timeout: 120_000 }, async () => {
    const before = (await ok(sb, ["snapshots", "--json"], { env })).json<{ id: string }[]>();
    const r = await snapshotWithBodyFault("cut-2.bin", "cut", 64 * 1024, { PI_GUARD_RETRY_MAX: "0" });
    expect(proxy.bodyFaults).toHaveLength(2);
    expect(expectOneLineError(r, 1)).toMatch(/^pi-guard: cannot reach S3 at 127\.0\.0\.1:\d+: (ECONNRESET|EPIPE) during put data\//);
    expect(r.stdout).not.toMatch(/snapshotId/);
    expect((await ok(sb, ["snapshots", "--json"], { env })).json<{ id: string }[]>()).toEqual(before);
    const check = (await ok(sb, ["check", "--read-data", "--json"], { env })).json<{ ok: boolean; problems: unknown[] }>();
    expect(check.ok, JSON.stringify(check.problems)).toBe(true);
    // The next run stores it.
    await ok(sb, ["snapshot"], { env });
    expect((await ok(sb, ["snapshots", "--json"], { env })).json<unknown[]>()).toHaveLength(before.length + 1);
  });

  it("a byte of a pack changed on the way: the server refuses the body against its SHA-256 (BadDigest), the PUT is sent again, and what is stored reads back exact", { timeout: 120_000 }, async () => {
    const r = await snapshotWithBodyFault("flip.bin", "flip", 100 * 1024);
    expect(r.code, r.stderr).toBe(0);
    expect(proxy.bodyFaults).toHaveLength(3);
    const check = (await ok(sb, ["check", "--read-data", "--json"], { env })).json<{ ok: boolean; problems: unknown[] }>();
    expect(check.ok, JSON.stringify(check.problems)).toBe(true);
    expect(stderrLines(r).join("\n")).toMatch(/^pi-guard: retrying in .* failed put data\/\S+: BadDigest \(HTTP 400\)$/m);
  });

  it("PI_GUARD_RETRY_MAX that is not a duration is a usage error", async () => {
    expect(expectOneLineError(await cli(sb, ["snapshots"], { env: { ...env, PI_GUARD_RETRY_MAX: "soon" } }), 2)).toMatch(/PI_GUARD_RETRY_MAX/);
  });
});
