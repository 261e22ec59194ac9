// A guard that is not guarding says so (issue 17, items 9 and 13, and the status figures), with
// the real watcher process:
// - right after the start, status shows no CPU figure and no PUTs/day (there is nothing yet to
//   tell them from), and never PUTs/day for a local folder;
// - on a real full disk (a small tmpfs as the repository) the failing watcher makes status
//   unhealthy once it has failed, with changes unsaved, for longer than health.stuckAfter;
// - alerts: a real script (argv, `{summary}`), and curl posting to a webhook the test serves on
//   127.0.0.1 (a shell string), run on each change of health; a failing command is logged and the
//   watcher goes on; and `status --alert` does the same for cron without a watcher.
import { spawnSync } from "node:child_process";
import { appendFileSync, chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok, snapshot } from "../helpers/cli.js";
import { writeConfig } from "../mirror/mirror-helpers.js";
import { loadConfig } from "../../src/config/config.js";
import { openRepository, snapshotAgentDir } from "../../src/engine.js";
import { SUSPECT_LOSS_TAG } from "../../src/repo/format.js";
import { files, readLog, readState, stopWatch, waitFor, waitReady, watchEnv, watchScene } from "./watch-helpers.js";

const { setup, watch } = watchScene();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A real alert command: a shell script that appends its arguments, environment and stdin to `log`. */
function alertScript(dir: string, log: string, exitCode = 0): string {
  const script = path.join(dir, "alert.sh");
  writeFileSync(
    script,
    `#!/bin/sh\n{ printf 'ARGS %s\\n' "$*"; printf 'EVENT %s HEALTHY %s\\n' "$PI_GUARD_ALERT" "$PI_GUARD_HEALTHY"; printf 'KINDS %s\\n' "$PI_GUARD_PROBLEM_KINDS"; printf 'STDIN '; cat; printf 'END\\n'; } >> '${log}'\nexit ${exitCode}\n`,
  );
  chmodSync(script, 0o755);
  return script;
}

interface Received {
  args: string;
  event: string;
  healthy: string;
  kinds: string;
  stdin: { event: string; healthy: boolean; source: string; problems: { kind: string; message: string }[]; previous: string[] };
}

function received(log: string): Received[] {
  if (!existsSync(log)) return [];
  // What follows the last END is an alert still being written.
  return readFileSync(log, "utf8")
    .split("END\n")
    .slice(0, -1)
    .map((b) => {
      const line = (tag: string) => b.match(new RegExp(`^${tag} ?(.*)$`, "m"))?.[1] ?? "";
      const [event, , healthy] = line("EVENT").split(" ");
      return { args: line("ARGS"), event, healthy, kinds: line("KINDS"), stdin: JSON.parse(b.slice(b.indexOf("STDIN ") + "STDIN ".length)) };
    });
}

describe("watcher health", () => {
  it("right after the start: no CPU figure and no PUTs/day yet, and never PUTs/day for a local folder", async () => {
    const sb = await setup("health-early");
    const w = watch(sb);
    await waitReady(sb, w);
    const j = (await ok(watchEnv(sb), ["status", "--json"])).json();
    expect(j.watcher.state).toBe("running");
    expect(j.watcher.cpu.percent).toBeNull();
    expect(j.watcher.requests).toMatchObject({ putsPerDay: null, remote: false, why: "local storage: requests cost nothing" });
    const text = (await ok(watchEnv(sb), ["status"])).stdout;
    expect(text).toMatch(/CPU too early to tell/);
    expect(text).toMatch(/PUTs\/day: local storage: requests cost nothing/);
    expect(text).not.toMatch(/about \d+ PUTs\/day|CPU \d/);
    expect((await stopWatch(w)).code).toBe(0);
  }, 60_000);

  it("on a full disk the failing watcher makes status unhealthy after health.stuckAfter, and healthy again once it saves", async () => {
    const sb = await setup("health-enospc");
    const mnt = sb.dir("tmpfs");
    const m = spawnSync("mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt], { encoding: "utf8" });
    expect(m.status, `mount needs root: ${m.stderr}`).toBe(0);
    let w: ReturnType<typeof watch> | undefined;
    try {
      const repo = path.join(mnt, "repo");
      Object.assign(sb.env, { PI_GUARD_REPO: repo });
      await ok(sb, ["init"]);
      writeConfig(sb, { health: { stuckAfter: "3s" } });
      w = watch(sb, ["--debounce", "50"]);
      await waitReady(sb, w);
      expect((await cli(watchEnv(sb), ["status"])).code).toBe(0);
      // Fill the file system to the last byte, then change a session: every attempt fails.
      spawnSync("dd", ["if=/dev/zero", `of=${path.join(mnt, "filler")}`, "bs=4096"], { encoding: "utf8" });
      appendFileSync(path.join(sb.sessionsDir, "--proj--", "s0.jsonl"), `{"type":"custom","id":"c0000001","parentId":null}\n`);
      const failing = await waitFor("two failed attempts", () => ((readState(sb)?.snapshots.failed ?? 0) >= 2 ? readState(sb) : undefined), 30_000);
      expect(failing.lastError?.message).toMatch(/ENOSPC/);
      expect(failing.failingSince).toBeDefined();
      expect(failing.pendingSince).toBeDefined();
      await sleep(Math.max(0, Date.parse(failing.failingSince!) + 3500 - Date.now()));
      const r = await cli(watchEnv(sb), ["status", "--json"]);
      expect(r.code, r.stdout).toBe(1);
      const j = r.json();
      expect(j.problemKinds.map((p: { kind: string }) => p.kind).sort()).toEqual(["changes-pending", "watcher-failing"]);
      expect(j.problems.join("\n")).toMatch(/the watcher's snapshots have been failing since \S+ \(\d+ attempts, more than 3 s\): .*ENOSPC/);
      expect(j.problems.join("\n")).toMatch(/changes made since \S+ .* are in no snapshot yet/);
      const human = await cli(watchEnv(sb), ["status"]);
      expect(human.stdout).toMatch(/watcher failing\s+since .* \(\d+ attempts\)/);
      expect(human.stdout).toMatch(/unsaved changes\s+since /);
      expect(human.stdout).toMatch(/UNHEALTHY \(2 problems\)/);
      // Space again: the next retry saves the changes, and status is healthy again.
      rmSync(path.join(mnt, "filler"));
      await waitFor("a saved snapshot", () => (readState(sb) && !readState(sb)!.failingSince && !readState(sb)!.pendingSince ? true : undefined), 90_000);
      expect((await cli(watchEnv(sb), ["status"])).code).toBe(0);
      expect((await stopWatch(w)).code).toBe(0);
    } finally {
      if (w && w.child.exitCode === null && w.child.signalCode === null) await stopWatch(w, "SIGKILL");
      spawnSync("umount", [mnt]);
    }
  }, 180_000);

  it("alerts run a real script on each change of health: into a suspected loss, and out of it after the restore", async () => {
    const sb = await setup("health-alert");
    const log = path.join(sb.root, "alerts.log");
    writeConfig(sb, { alerts: { command: [alertScript(sb.root, log), "--summary={summary}"] } });
    const w = watch(sb, ["--debounce", "50"]);
    await waitReady(sb, w);
    await sleep(500);
    expect(received(log)).toEqual([]);
    rmSync(sb.sessionsDir, { recursive: true, force: true });
    const [down] = await waitFor("the unhealthy alert", () => (received(log).length >= 1 ? received(log) : undefined));
    expect(down).toMatchObject({ event: "unhealthy", healthy: "0", kinds: "suspect-loss" });
    expect(down.args).toMatch(/^--summary=pi-guard: UNHEALTHY: the watcher reports a suspected loss since .*: 3 of 7 files left/);
    expect(down.stdin).toMatchObject({ event: "unhealthy", healthy: false, source: "watch", previous: [], problems: [{ kind: "suspect-loss" }] });
    await ok(watchEnv(sb), ["restore", "latest", "--json"]);
    const back = await waitFor("the healthy alert", () => received(log)[1]);
    expect(back).toMatchObject({ event: "healthy", healthy: "1", kinds: "", args: "--summary=pi-guard: healthy again" });
    expect(back.stdin).toMatchObject({ event: "healthy", healthy: true, previous: ["suspect-loss"], problems: [] });
    // The watcher logs each alert once its command has ended.
    const logged = await waitFor("both alerts in the log", () => {
      const alerts = readLog(sb).filter((e) => e.event === "alert");
      return alerts.length >= 2 ? alerts : undefined;
    });
    expect(logged.map((e) => [e.alert, e.ok, e.problems])).toEqual([
      ["unhealthy", true, ["suspect-loss"]],
      ["healthy", true, []],
    ]);
    // Nothing changes after that: no further alert.
    await sleep(6000);
    expect(received(log)).toHaveLength(2);
    expect((await stopWatch(w)).code).toBe(0);
  }, 90_000);

  it("a scheduled job that fails inside the watcher is a problem: it alerts, and status names it", async () => {
    const sb = await setup("health-job");
    const log = path.join(sb.root, "alerts.log");
    // A keepTags typo: forget refuses to empty the group, every second, and the job fails each time.
    writeConfig(sb, { alerts: { command: [alertScript(sb.root, log)] }, retention: { keepTags: ["typo-tag"] }, schedules: [{ job: "forget", cron: "* * * * * *" }] });
    const w = watch(sb, ["--debounce", "50"]);
    await waitReady(sb, w);
    const [down] = await waitFor("the unhealthy alert", () => (received(log).length >= 1 ? received(log) : undefined), 30_000);
    expect(down).toMatchObject({ event: "unhealthy", healthy: "0", kinds: "job-failed forget" });
    expect(down.stdin.problems).toEqual([expect.objectContaining({ kind: "job-failed", message: expect.stringMatching(/^scheduled job forget failed at .*REFUSED/) })]);
    const status = await cli(watchEnv(sb), ["status", "--json"]);
    expect(status.code).toBe(1);
    expect(status.json<{ problemKinds: { kind: string; subject?: string }[] }>().problemKinds).toContainEqual(expect.objectContaining({ kind: "job-failed", subject: "forget" }));
    expect((await stopWatch(w)).code).toBe(0);
  }, 90_000);

  it("a webhook through curl gets the JSON; a failing alert command is logged and the watcher carries on", async () => {
    const sb = await setup("health-webhook");
    const bodies: unknown[] = [];
    let status = 200;
    const server: Server = createServer((req: IncomingMessage, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        bodies.push({ path: req.url, type: req.headers["content-type"], body: JSON.parse(body) });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      writeConfig(sb, { alerts: { command: `curl -fsS --max-time 5 -H 'Content-Type: application/json' --data-binary @- http://127.0.0.1:${port}/hook`, timeoutMs: 8000 } });
      const w = watch(sb, ["--debounce", "50"]);
      await waitReady(sb, w);
      rmSync(sb.sessionsDir, { recursive: true, force: true });
      await waitFor("the webhook's first call", () => bodies[0]);
      expect(bodies[0]).toMatchObject({ path: "/hook", type: "application/json", body: { event: "unhealthy", healthy: false, problems: [{ kind: "suspect-loss" }] } });
      // The hook is down for the recovery: curl -f exits 22; that is logged, not fatal.
      status = 500;
      await ok(watchEnv(sb), ["restore", "latest", "--json"]);
      const failed = await waitFor("the failed alert in the log", () => readLog(sb).find((e) => e.event === "alert" && e.ok === false));
      expect(failed).toMatchObject({ level: "error", event: "alert" });
      expect(failed.error).toMatch(/^\/bin\/sh exited 22/);
      expect(w.stderr()).toMatch(/the alert command failed \(healthy again\): \/bin\/sh exited 22/);
      expect(bodies[1]).toMatchObject({ body: { event: "healthy", healthy: true } });
      // Still watching and saving.
      const made = readState(sb)!.snapshots.made;
      appendFileSync(path.join(sb.sessionsDir, "--proj--", "s1.jsonl"), "{}\n");
      await waitReady(sb, w, made + 1);
      expect((await stopWatch(w)).code).toBe(0);
    } finally {
      server.close();
    }
  }, 90_000);

  it("status --alert (cron, no watcher) alerts on each change and only then; a hanging command is killed", async () => {
    const sb = await setup("health-status-alert");
    const log = path.join(sb.root, "alerts.log");
    const env = watchEnv(sb);
    expectOneLineError(await cli(env, ["status", "--alert"]), 2);
    writeConfig(sb, { alerts: { command: [alertScript(sb.root, log)] } });
    await snapshot(sb, [], { env });
    // The first look: healthy, as nothing was ever alerted: no alert.
    const first = await cli(env, ["status", "--alert", "--json"]);
    expect(first.code).toBe(0);
    expect(first.json().alert).toEqual({});
    expect(received(log)).toEqual([]);
    // A suspected loss (a snapshot tagged so, as watch or guard's snapshot would make).
    const config = loadConfig({}, env);
    await snapshotAgentDir(config, await openRepository(config), { tags: [SUSPECT_LOSS_TAG] });
    const down = await cli(env, ["status", "--alert", "--json"]);
    expect(down.code).toBe(1);
    expect(down.json().alert).toMatchObject({ outcome: { event: "unhealthy", run: { ok: true } } });
    expect(received(log)).toHaveLength(1);
    expect(received(log)[0]).toMatchObject({ event: "unhealthy", kinds: "suspect-loss", stdin: { source: "status" } });
    // Still the same problem: no second alert.
    const again = await cli(env, ["status", "--alert"]);
    expect(again.code).toBe(1);
    expect(again.stdout).toMatch(/alert\s+nothing changed since the last alert; none sent/);
    expect(received(log)).toHaveLength(1);
    // The files are whole again: the recovery is alerted once.
    await snapshot(sb, [], { env });
    expect((await cli(env, ["status", "--alert"])).code).toBe(0);
    expect(received(log).map((r) => r.event)).toEqual(["unhealthy", "healthy"]);
    expect(JSON.parse(readFileSync(files(sb).alert, "utf8"))).toMatchObject({ healthy: true, keys: [], source: "status", event: "healthy", ok: true });
    // A command that hangs is killed after alerts.timeoutMs; status says so and still exits by health.
    writeConfig(sb, { alerts: { command: ["sleep", "30"], timeoutMs: 500 } });
    await snapshotAgentDir(config, await openRepository(config), { tags: [SUSPECT_LOSS_TAG] });
    const hung = await cli(env, ["status", "--alert"]);
    expect(hung.code).toBe(1);
    expect(hung.stderr).toMatch(/the alert command failed: sleep did not finish within 500 ms and was killed/);
  }, 90_000);
});
