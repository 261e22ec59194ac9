// `pi-guard snapshot` handed to a running `pi-guard watch` over its socket (src/watch/socket.ts),
// both real processes: the snapshot holds the appended bytes and prints what a direct run prints;
// a watcher killed -9 mid-request, a stale socket of a crashed watcher and a watcher of another
// repository each leave the CLI to take the snapshot itself.
import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { cli, collect, ok, PROJECT_ROOT, spawnCli } from "../helpers/cli.js";
import { files, readLog, restoredBytes, stopWatch, waitFor, waitReady, watchEnv, watchScene } from "./watch-helpers.js";

const { setup, watch } = watchScene();

interface Taken {
  snapshotId: string;
  via: string;
  handOff?: string;
  tags: string[];
  files: number;
  filesChanged: number;
  bytesNew: number;
}

const SESSION = (sb: { sessionsDir: string }) => path.join(sb.sessionsDir, "--proj--", "s1.jsonl");
const REL = path.join("sessions", "--proj--", "s1.jsonl");

function append(file: string, tag: string): void {
  appendFileSync(file, `{"type":"message","id":"${tag}","text":"${"x".repeat(4000)}"}\n`);
}

describe("pi-guard snapshot handed to the watcher", () => {
  it("a plain snapshot is the watcher's: it holds the appended bytes, prints as a direct run does, and the socket is 0600", async () => {
    const sb = await setup("sock-handoff");
    // A long debounce: only the hand-off makes a snapshot soon.
    const w = watch(sb, ["--debounce", "60000"]);
    await waitReady(sb, w);
    expect(statSync(files(sb).socket).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(files(sb).socket)).mode & 0o777).toBe(0o700);

    append(SESSION(sb), "a1");
    const r = await ok(watchEnv(sb), ["snapshot", "--json"]);
    const taken = r.json<Taken>();
    expect(taken.via, r.stdout).toBe("watcher");
    expect(taken.handOff).toBeUndefined();
    expect(taken.filesChanged).toBe(1);
    expect(readLog(sb).filter((e) => e.event === "snapshot").map((e) => e.id)).toContain(taken.snapshotId);
    expect((await restoredBytes(sb, taken.snapshotId, REL)).equals(readFileSync(SESSION(sb)))).toBe(true);

    // The human output: the same rows as a direct run's.
    append(SESSION(sb), "a2");
    const human = await ok(watchEnv(sb), ["snapshot"]);
    expect(human.stdout + human.stderr).toMatch(/^snapshot\s+[0-9a-f]{8}\s+\S+Z\n/m);
    for (const row of ["files", "total", "new data", "duration"]) expect(human.stdout + human.stderr).toMatch(new RegExp(`^${row}\\s`, "m"));
    const snapshots = (await ok(watchEnv(sb), ["snapshots", "--json"])).json<{ id: string }[]>();
    const newest = snapshots.at(-1)!.id;
    expect(human.stdout + human.stderr).toContain(newest.slice(0, 8));
    expect((await restoredBytes(sb, newest, REL)).equals(readFileSync(SESSION(sb)))).toBe(true);

    // Options the watcher cannot honour: a direct run, with no word of a hand-off.
    const tagged = (await ok(watchEnv(sb), ["snapshot", "--json", "--tag", "mine"])).json<Taken>();
    expect(tagged).toMatchObject({ via: "direct", tags: ["mine"] });
    expect(tagged.handOff).toBeUndefined();
    expect((await stopWatch(w)).code).toBe(0);
  }, 60_000);

  it("handed off, the CLI loads two files of pi-guard's code: start.js and snapshot-plain.js (scripts/bundle.mjs)", async () => {
    const sb = await setup("sock-files");
    const w = watch(sb, ["--debounce", "60000"]);
    await waitReady(sb, w);
    append(SESSION(sb), "f1");
    const out = path.join(sb.root, "loaded-files");
    const hooks = path.join(PROJECT_ROOT, "test", "helpers", "loaded-files", "register.mjs");
    const r = await ok(watchEnv(sb), ["snapshot", "--json"], { env: { NODE_OPTIONS: `--import=${hooks}`, LOADED_FILES_OUT: out } });
    expect(r.json<Taken>().via).toBe("watcher");
    const ours = readFileSync(out, "utf8").split("\n").filter((u) => u.startsWith(pathToFileURL(path.join(PROJECT_ROOT, "dist")).href));
    expect(ours.map((u) => path.relative(PROJECT_ROOT, fileURLToPath(u)))).toEqual([path.join("dist", "cli", "start.js"), path.join("dist", "cli", "snapshot-plain.js")]);
    expect((await stopWatch(w)).code).toBe(0);
  }, 60_000);

  it("a request while a snapshot is under way joins the next one, which holds what was written before the request", async () => {
    const sb = await setup("sock-midway");
    writeFileSync(path.join(sb.agentDir, "big.bin"), randomBytes(64 * 1024 * 1024));
    const w = watch(sb, ["--debounce", "60000"]);
    // The start-up snapshot holds the repository lock while it reads the big file.
    const locks = path.join(sb.repo, "locks");
    await waitFor("the start-up snapshot to hold the repository lock", () => existsSync(locks) && readdirSync(locks).length > 0, 20_000, 5);
    // Stopped mid-snapshot, the watcher finds the request waiting when it goes on.
    w.child.kill("SIGSTOP");
    append(SESSION(sb), "m1");
    const running = collect(spawnCli(watchEnv(sb), ["snapshot", "--json"]));
    await new Promise((r) => setTimeout(r, 500));
    w.child.kill("SIGCONT");
    const r = await running;
    expect(r.code, r.stderr).toBe(0);
    const taken = r.json<Taken>();
    expect(taken.via, r.stdout).toBe("watcher");
    const log = readLog(sb);
    const requested = log.findIndex((e) => e.event === "requested" && e.reason === "pi-guard snapshot");
    expect(requested, "the request came after the start-up snapshot: nothing was under way").toBeLessThan(log.findIndex((e) => e.event === "snapshot"));
    const made = log.filter((e) => e.event === "snapshot");
    // Not the snapshot that was under way: the one after it.
    expect(made.map((e) => e.id).indexOf(taken.snapshotId), JSON.stringify(made.map((e) => e.id.slice(0, 8)))).toBeGreaterThan(0);
    expect((await restoredBytes(sb, taken.snapshotId, REL)).equals(readFileSync(SESSION(sb)))).toBe(true);
    expect((await stopWatch(w)).code).toBe(0);
  }, 90_000);

  it("the watcher killed -9 mid-request: the CLI takes the snapshot itself, and it holds the appended bytes", async () => {
    const sb = await setup("sock-kill9");
    const w = watch(sb, ["--debounce", "60000"]);
    await waitReady(sb, w);
    append(SESSION(sb), "k1");
    // Stopped, the watcher cannot answer; the kernel still takes the connection and the request.
    w.child.kill("SIGSTOP");
    const running = collect(spawnCli(watchEnv(sb), ["snapshot", "--json"]));
    await new Promise((r) => setTimeout(r, 500));
    w.child.kill("SIGKILL");
    await w.exited;
    const r = await running;
    expect(r.code, r.stderr).toBe(0);
    const taken = r.json<Taken>();
    expect(taken.via).toBe("direct");
    expect(taken.handOff).toMatch(/watcher/);
    expect((await restoredBytes(sb, taken.snapshotId, REL)).equals(readFileSync(SESSION(sb)))).toBe(true);
  }, 60_000);

  it("a stale socket of a crashed watcher: a direct run; the next watcher replaces it and takes hand-offs again", async () => {
    const sb = await setup("sock-stale");
    const w = watch(sb, ["--debounce", "60000"]);
    await waitReady(sb, w);
    w.child.kill("SIGKILL");
    await w.exited;
    expect(statSync(files(sb).socket).isSocket()).toBe(true);
    append(SESSION(sb), "s1");
    const r = await ok(watchEnv(sb), ["snapshot", "--json"]);
    expect(r.json<Taken>()).toMatchObject({ via: "direct", handOff: expect.stringMatching(/ECONNREFUSED/) });

    const next = watch(sb, ["--debounce", "60000"]);
    await waitReady(sb, next);
    append(SESSION(sb), "s2");
    const again = (await ok(watchEnv(sb), ["snapshot", "--json"])).json<Taken>();
    expect(again.via).toBe("watcher");
    expect((await restoredBytes(sb, again.snapshotId, REL)).equals(readFileSync(SESSION(sb)))).toBe(true);
    expect((await stopWatch(next)).code).toBe(0);
  }, 60_000);

  it("a watcher of another repository, or a hostile client: declined, and the CLI snapshots its own repository", async () => {
    const sb = await setup("sock-other");
    const w = watch(sb, ["--debounce", "60000"]);
    await waitReady(sb, w);
    const other = path.join(sb.root, "other-repo");
    await ok(watchEnv(sb), ["init", "--repo", other]);
    const r = await ok(watchEnv(sb), ["snapshot", "--json", "--repo", other]);
    const taken = r.json<Taken>();
    expect(taken).toMatchObject({ via: "direct", handOff: "the watcher declined: another repository or configuration" });
    const listed = (await ok(watchEnv(sb), ["snapshots", "--json", "--repo", other])).json<{ id: string }[]>();
    expect(listed.map((s) => s.id)).toEqual([taken.snapshotId]);

    // Garbage, an endless line, and a client that never speaks: each is dropped; the watcher goes on.
    const talk = (payload: string) =>
      new Promise<string>((resolve) => {
        let got = "";
        const c = net.connect(files(sb).socket, () => c.write(payload));
        c.on("data", (d) => (got += d.toString()));
        c.on("error", () => undefined);
        c.on("close", () => resolve(got));
      });
    expect(await talk("not json\n")).toContain('"declined":"malformed request"');
    expect(await talk(JSON.stringify({ v: 1, op: "snapshot", fingerprint: 7 }) + "\n")).toContain("malformed request");
    expect(await talk("x".repeat(64 * 1024))).toBe("");
    expect(await talk("")).toBe("");
    append(SESSION(sb), "o1");
    expect((await ok(watchEnv(sb), ["snapshot", "--json"])).json<Taken>().via).toBe("watcher");
    expect((await stopWatch(w)).code).toBe(0);
  }, 60_000);

  it("the early dispatch (src/cli/start.ts) asks only the watcher of this config, and never with a flag that rules a hand-off out", async () => {
    const sb = await setup("sock-dispatch");
    const w = watch(sb, ["--debounce", "60000"]);
    await waitReady(sb, w);
    const via = (r: { json<T>(): T }) => r.json<Taken>();
    // Global flags before and after the command, in the forms the dispatch reads: the watcher's.
    append(SESSION(sb), "d1");
    expect(via(await ok(watchEnv(sb), ["--json", "backup", "-r", sb.repo]))).toMatchObject({ via: "watcher", filesChanged: 1 });

    // Another agent dir has another watcher socket (none runs): that dir, snapshotted here.
    const otherAgent = path.join(sb.root, "other-agent");
    mkdirSync(path.join(otherAgent, "sessions", "--o--"), { recursive: true });
    writeFileSync(path.join(otherAgent, "sessions", "--o--", "o.jsonl"), '{"type":"session","version":3,"id":"o"}\n');
    const other = via(await ok(watchEnv(sb), ["snapshot", "--agent-dir", otherAgent, "--json"]));
    expect(other).toMatchObject({ via: "direct", handOff: "no watcher socket", files: 1 });
    // Another state dir: no watcher there either.
    append(SESSION(sb), "d2");
    expect(via(await ok({ ...watchEnv(sb), XDG_STATE_HOME: path.join(sb.root, "other-state") }, ["snapshot", "--json"]))).toMatchObject({ via: "direct", handOff: "no watcher socket" });
    // Another config file (one more exclude): the watcher's snapshot would not be this one.
    const config = path.join(sb.root, "other-config.json");
    writeFileSync(config, JSON.stringify({ sources: { exclude: ["*.tmp"] } }));
    append(SESSION(sb), "d3");
    expect(via(await ok(watchEnv(sb), ["--config", config, "snapshot", "--json"]))).toMatchObject({ via: "direct", handOff: "the watcher declined: another repository or configuration" });

    // A snapshot option after global flags: taken here, and no watcher was asked.
    append(SESSION(sb), "d4");
    const full = via(await ok(watchEnv(sb), ["--json", "snapshot", "--full-read"]));
    expect(full.via).toBe("direct");
    expect(full.handOff).toBeUndefined();
    const tagged = via(await ok(watchEnv(sb), ["--json", "-r", sb.repo, "backup", "--tag", "t"]));
    expect(tagged).toMatchObject({ via: "direct", tags: ["t"] });
    expect(tagged.handOff).toBeUndefined();
    expect(readLog(sb).filter((e) => e.event === "requested")).toHaveLength(1);
    expect((await stopWatch(w)).code).toBe(0);
  }, 60_000);

  it("a suspected loss through the watcher: exit 1, the loss line, tagged suspect-loss, as a direct run", async () => {
    const sb = await setup("sock-loss");
    const w = watch(sb, ["--debounce", "60000"]);
    await waitReady(sb, w);
    const { rmSync } = await import("node:fs");
    rmSync(sb.sessionsDir, { recursive: true, force: true });
    const r = await cli(watchEnv(sb), ["snapshot", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.json<Taken>()).toMatchObject({ via: "watcher", tags: ["suspect-loss"] });
    expect(r.stderr).toMatch(/^pi-guard: SUSPECTED LOSS: every session file is gone/);
    await waitFor("the watcher's suspected loss", () => readLog(sb).find((e) => e.event === "suspect-loss"));
    expect((await stopWatch(w)).code).toBe(0);
    // With no watcher: the same line (but for the new snapshot's id) and the same exit code.
    const direct = await cli(watchEnv(sb), ["snapshot", "--json"]);
    expect(direct.code, direct.stderr).toBe(1);
    expect(direct.json<Taken>()).toMatchObject({ via: "direct", tags: ["suspect-loss"], handOff: "no watcher socket" });
    const unId = (s: string) => s.replace(/snapshot [0-9a-f]{8} is tagged/, "snapshot ID is tagged");
    expect(unId(direct.stderr)).toBe(unId(r.stderr));
  }, 60_000);
});
