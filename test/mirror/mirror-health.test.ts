// Mirror health (issue 17, item 8): with a real S3 server as the mirror, stopped and started again,
// and the real watcher. The watcher's state file has each mirror's lag (last snapshot shipped, how
// many it is behind and since when, the last attempt and its error); `status` shows a line per
// mirror and is unhealthy once a mirror lags by more than the bound; the watcher's human line says
// the mirror failed, not the snapshot. Without a watcher, `status` lists each mirror itself: a
// mirror that misses snapshots is behind by them, and one that cannot be reached says so, in
// bounded time.
import { appendFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cli, ok } from "../helpers/cli.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { readLog, readState, stopWatch, waitFor, waitReady, watchEnv, watchScene } from "../watch/watch-helpers.js";
import { writeConfig } from "./mirror-helpers.js";

const scene = watchScene();
const BUCKET = "mirror-health";
const MIRROR = `s3://${BUCKET}/laptop`;
const servers: S3Server[] = [];
afterAll(async () => {
  for (const s of servers) await s.stop();
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("mirror health", () => {
  it("a watcher whose S3 mirror is down: status shows the lag and is unhealthy past the bound; the log says the snapshot succeeded", { timeout: 120_000 }, async () => {
    const sb = await scene.setup("mirror-health-watch");
    let server = await startS3Server(sb.dir("s3rver"), BUCKET);
    servers.push(server);
    Object.assign(sb.env, server.env);
    writeConfig(sb, { mirrors: [MIRROR], watch: { remoteBatchMs: 1000, debounceMs: 50 }, health: { mirrorMaxLag: "3s" } });
    const w = scene.watch(sb);
    await waitReady(sb, w, 1);
    await waitFor("the first shipment", () => readLog(sb).find((e) => e.event === "mirror"));
    const synced = await waitFor("the mirror in sync in the state file", () => readState(sb)?.mirrors?.find((m) => m.lastAttempt?.ok));
    expect(synced).toMatchObject({ mirror: MIRROR, behind: 0, behindSince: null, failingSince: null, lastShipped: { id: readState(sb)!.lastSnapshot!.id } });
    const healthy = await cli(watchEnv(sb), ["status"]);
    expect(healthy.code, healthy.stderr).toBe(0);
    expect(healthy.stdout).toMatch(new RegExp(`mirror\\s+${MIRROR}: in sync \\(last shipped [0-9a-f]{8} of `));

    await server.stop();
    const file = path.join(sb.sessionsDir, "--proj--", "s0.jsonl");
    for (let i = 0; i < 2; i++) {
      const made = readState(sb)!.snapshots.made;
      appendFileSync(file, `{"type":"custom","id":"d000000${i}","parentId":null}\n`);
      await waitReady(sb, w, made + 1);
    }
    const lag = await waitFor("a failed shipment in the state file", () => readState(sb)?.mirrors?.find((m) => m.lastAttempt && !m.lastAttempt.ok && m.behind >= 2), 60_000);
    expect(lag.lastAttempt!.error).toMatch(/cannot reach S3 at 127\.0\.0\.1:\d+: ECONNREFUSED/);
    expect(lag.failingSince).not.toBeNull();
    expect(lag.lastShipped).toEqual(synced.lastShipped);
    // The human line blames the mirror, not the snapshot.
    expect(w.stderr()).toMatch(new RegExp(`mirror ${MIRROR} failed \\(retry in 1 s\\): cannot reach S3 .*; the snapshots themselves succeeded and are safe in ${sb.repo.replaceAll("/", "\\/")}`));
    expect(w.stderr()).not.toMatch(/snapshot failed/);

    await sleep(Math.max(0, Date.parse(lag.behindSince!) + 3500 - Date.now()));
    const down = await cli(watchEnv(sb), ["status", "--json"]);
    expect(down.code, down.stdout).toBe(1);
    const j = down.json();
    expect(j.problemKinds).toEqual([{ kind: "mirror-behind", subject: MIRROR, message: expect.stringMatching(new RegExp(`^mirror ${MIRROR} is behind by \\d+ snapshot\\(s\\) since \\S+ \\(\\d+ s, more than 3 s\\): cannot reach S3`)) }]);
    expect(j.mirrors[0]).toMatchObject({ mirror: MIRROR, source: "watcher", lastShipped: synced.lastShipped });
    const text = await cli(watchEnv(sb), ["status"]);
    expect(text.stdout).toMatch(new RegExp(`mirror\\s+${MIRROR}: behind by \\d+ snapshots since .*: cannot reach S3`));
    // --max-age is the bound for this run: an hour is not exceeded yet.
    expect((await cli(watchEnv(sb), ["status", "--max-age", "1h"])).code).toBe(0);

    // The server is back: the next try ships, and the mirror is in sync again.
    server = await startS3Server(server.dir, BUCKET, server.port);
    servers.push(server);
    await waitFor("the mirror in sync again", () => readState(sb)?.mirrors?.find((m) => m.lastAttempt?.ok && m.behind === 0), 60_000);
    await waitFor("mirror-recovered in the log", () => readLog(sb).find((e) => e.event === "mirror-recovered"));
    expect(w.stderr()).toMatch(new RegExp(`mirror ${MIRROR} is reachable again`));
    expect((await cli(watchEnv(sb), ["status"])).code).toBe(0);
    expect((await stopWatch(w)).code).toBe(0);
  });

  it("without a watcher, status lists each mirror: one missing snapshots is behind by them; one out of reach says so", { timeout: 120_000 }, async () => {
    const sb = await scene.setup("mirror-health-list");
    const env = watchEnv(sb);
    const local = path.join(sb.root, "mirror");
    writeConfig(sb, { mirrors: [local] });
    const shipped = (await ok(env, ["snapshot", "--json"])).json();
    expect(shipped.mirrors[0]).toMatchObject({ ok: true });
    // Two snapshots the mirror never gets (made while it was not configured).
    writeConfig(sb, {});
    appendFileSync(path.join(sb.sessionsDir, "--proj--", "s0.jsonl"), "{}\n");
    const missed = (await ok(env, ["snapshot", "--json"])).json();
    appendFileSync(path.join(sb.sessionsDir, "--proj--", "s1.jsonl"), "{}\n");
    await ok(env, ["snapshot", "--json"]);
    writeConfig(sb, { mirrors: [local], health: { mirrorMaxLag: "1s" } });
    await sleep(Math.max(0, Date.parse(missed.time) + 1500 - Date.now()));
    const r = await cli(env, ["status", "--json"]);
    expect(r.code).toBe(1);
    expect(r.json().mirrors).toEqual([
      { mirror: local, source: "listing", lastShipped: { id: shipped.snapshotId, time: shipped.time }, behind: 2, behindSince: missed.time, lastAttempt: null, failingSince: null },
    ]);
    expect(r.json().problems).toEqual([expect.stringMatching(new RegExp(`^mirror ${local.replaceAll("/", "\\/")} is behind by 2 snapshot\\(s\\) since ${missed.time}`))]);
    // `copy` catches it up: in sync.
    await ok(env, ["copy", "--json"]);
    const synced = await cli(env, ["status"]);
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.stdout).toMatch(/mirror\s+.*: in sync \(last shipped/);

    // An S3 mirror nobody answers for: reported as such, and the run still ends.
    const server = await startS3Server(sb.dir("s3rver"), BUCKET);
    await server.stop();
    writeConfig(sb, { mirrors: [local, MIRROR] });
    const away = await cli(env, ["status", "--json"], { env: server.env });
    expect(away.code).toBe(1);
    const gone = away.json().mirrors[1];
    expect(gone).toMatchObject({ mirror: MIRROR, source: "listing", unreachable: expect.stringMatching(/cannot reach S3 at 127\.0\.0\.1:\d+: ECONNREFUSED|no answer within 10 s/) });
    expect(away.json().problemKinds).toEqual([{ kind: "mirror-unreachable", subject: MIRROR, message: expect.stringMatching(/^mirror s3:\/\/mirror-health\/laptop cannot be reached/) }]);
  });
});
