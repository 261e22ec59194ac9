// The extension finds the watcher that guards this pi's agent dir when the two name it
// differently: pi-guard's config names the real folder, pi reaches it through a symlink and its own
// PI_CODING_AGENT_DIR. Real watcher, real pi 1.6.0 (RPC mode) loading the extension.
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { initRepo } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { watcherFiles } from "../../src/watch/state.js";
import { startWatch, stateDir, stopWatch, waitFor, watchEnv, type RunningWatch } from "../watch/watch-helpers.js";
import { startRpcPi, stopPi, type RpcPi } from "./pi-rpc.js";

const sandboxes: Sandbox[] = [];
const pis: RpcPi[] = [];
const watchers: RunningWatch[] = [];
afterEach(async () => {
  for (const p of pis.splice(0)) await stopPi(p, "SIGKILL");
  for (const w of watchers.splice(0)) if (w.child.exitCode === null && w.child.signalCode === null) await stopWatch(w, "SIGKILL");
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

const readJson = (file: string): any => {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
};
const readLines = (file: string): any[] => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : []);

describe("the extension and a watcher whose config names the agent dir otherwise", () => {
  it("config agentDir is the real folder, pi's agent dir a symlink to it: the status is the watcher's, the turn is requested and saved; another agent dir is still NOT PROTECTED", async () => {
    const sb = makeSandbox("ext-agentdir");
    sandboxes.push(sb);
    const real = path.join(sb.root, "data", "pi-agent");
    mkdirSync(real, { recursive: true });
    mkdirSync(path.dirname(sb.agentDir), { recursive: true });
    symlinkSync(real, sb.agentDir); // ~/.pi/agent -> <root>/data/pi-agent
    const cfg = path.join(sb.configHome, "pi-guard");
    mkdirSync(cfg, { recursive: true });
    writeFileSync(path.join(cfg, "config.json"), JSON.stringify({ agentDir: real, watch: { debounceMs: 600_000, maxDelayMs: 3_600_000, fullScanMs: 0 } }));
    await initRepo(sb);
    // The watcher (as a service would run it) has no PI_CODING_AGENT_DIR: its config names the folder.
    const { PI_CODING_AGENT_DIR: _, ...serviceEnv } = sb.env;
    const w = startWatch({ ...sb, env: serviceEnv });
    watchers.push(w);
    const files = watcherFiles(stateDir(sb), real);
    await waitFor("the watcher's first snapshot", () => (readJson(files.state)?.snapshots?.made ?? 0) >= 1, 30_000);
    // The watcher's files are named after the configured folder, not after pi's name for it.
    expect(files.state).not.toBe(watcherFiles(stateDir(sb), sb.agentDir).state);

    // pi runs with PI_CODING_AGENT_DIR=~/.pi/agent (the symlink).
    const p = startRpcPi({ sb, env: watchEnv(sb), cwd: path.join(sb.home, "proj"), replies: ["The answer is 42."] });
    pis.push(p);
    const first = await waitFor("a first status", () => p.statuses()[0], 30_000);
    expect(first).not.toMatch(/NOT PROTECTED/);
    const made = readJson(files.state).snapshots.made;
    p.prompt("What is the answer?");
    await p.waitEvent("agent_settled", (e) => e.type === "agent_settled");
    await waitFor("the requested snapshot", () => readJson(files.state).snapshots.made > made, 20_000);
    expect(readLines(files.log).find((l) => l.event === "requested")).toMatchObject({ pid: p.child.pid });
    const seen = () => `a 'saved' status after the turn; statuses: ${JSON.stringify(p.statuses())}; state: ${JSON.stringify(readJson(files.state)?.lastSnapshot)} ${JSON.stringify(readJson(files.state)?.snapshots)}; watcher log: ${existsSync(files.log) ? readFileSync(files.log, "utf8").slice(-6000) : "none"}; now ${new Date().toISOString()}`;
    await waitFor(seen, () => p.statuses().slice(1).find((s) => /^pi-guard: saved \d+ s ago$/.test(s)), 20_000);
    expect(p.notifications().filter((n) => n.includes("NOT PROTECTED"))).toEqual([]);

    // A pi on an agent dir no watcher guards is still told so.
    const other = path.join(sb.root, "other-agent");
    mkdirSync(other, { recursive: true });
    const q = startRpcPi({ sb: { ...sb, agentDir: other }, env: watchEnv(sb), cwd: path.join(sb.home, "proj"), replies: ["x"] });
    pis.push(q);
    expect(await waitFor("the other pi's status", () => q.statuses()[0], 30_000)).toBe("pi-guard: NOT PROTECTED: no watcher running (pi-guard watch)");

    // Stopped, the watcher leaves its record: the first pi says that this watcher stopped.
    expect(await stopWatch(w)).toMatchObject({ code: 0 });
    const [record] = readdirSync(path.join(stateDir(sb), "guards"));
    expect(readJson(path.join(stateDir(sb), "guards", record))).toMatchObject({ kind: "pi-guard/guard", agentDir: real, realAgentDir: real, pid: w.child.pid });
    await waitFor("'watcher stopped'", () => p.statuses().find((s) => s === "pi-guard: NOT PROTECTED: watcher stopped"), 20_000);
  }, 180_000);
});
