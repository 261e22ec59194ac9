// pi-guard's pi extension under the real pi 1.6.0 (RPC mode, Node 22, faux provider): a benchmark,
// not a test. Needs scripts/install-test-tools.sh (pi 1.6.0 and its Node).
//   npm run build && node dist/bench/pi-extension.js [--turns 40] [--kills 6] [--out bench/out]
// 1. turn_end → restorable: a watcher whose debounce is ten minutes (so only the extension's
//    requests make snapshots), pi answering --turns prompts; for each, the time from the bench
//    reading pi's turn_end event to the commit time of the first snapshot after it (the state file).
// 2. pi's turn time (prompt sent → agent_settled read) with and without the extension, the watcher
//    doing the same work in both: without the extension the bench itself writes the request file
//    the extension would, the moment it reads turn_end, so each turn gets one snapshot started at
//    turn_end either way, and both runs wait for an idle watcher before each prompt. What differs
//    is the extension's own work inside pi (journal, status, requests).
// 3. kill -9 mid-stream, --kills times at different points: characters streamed (as pi printed
//    them) against characters `salvage --from-journals` recovered.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { spawn } from "node:child_process";
import { watcherFiles, type WatcherState } from "../src/watch/state.js";
import { spawnRpcPi, stopPi, type RpcPi } from "./pi-rpc.js";

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BIN = path.join(PROJECT_ROOT, "bin", "pi-guard.js");
const TOOLS = process.env.PI_GUARD_TEST_TOOLS ?? path.join(os.homedir(), ".cache", "pi-guard-test-tools");
const PI_NODE = path.join(TOOLS, "node-22.23.3", "node_modules", ".bin", "node");
const PI_CLI = path.join(TOOLS, "pi-1.6.0", "node_modules", ".bin", "pi");
const FAUX = path.join(PROJECT_ROOT, "test", "helpers", "pi1-faux-extension.mjs");
const EXTENSION = path.join(PROJECT_ROOT, "dist", "pi-extension", "index.js");
const log = (m: string) => void process.stderr.write(`[bench:pi-extension] ${m}\n`);

const { values: args } = parseArgs({
  options: { turns: { type: "string", default: "40" }, kills: { type: "string", default: "6" }, out: { type: "string", default: path.join(PROJECT_ROOT, "bench", "out") } },
});
const turns = Number(args.turns);
const kills = Number(args.kills);
for (const f of [PI_NODE, PI_CLI, FAUX, EXTENSION]) if (!existsSync(f)) throw new Error(`${f} is missing (scripts/install-test-tools.sh, npm run build)`);

interface Box {
  root: string;
  home: string;
  agentDir: string;
  env: Record<string, string>;
}

function box(label: string): Box {
  const root = mkdtempSync(path.join(os.tmpdir(), `pi-guard-bench-ext-${label}-`));
  const home = path.join(root, "home");
  const agentDir = path.join(home, ".pi", "agent");
  mkdirSync(agentDir, { recursive: true });
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    PI_CODING_AGENT_DIR: agentDir,
    PI_GUARD_REPO: path.join(root, "repo"),
    XDG_CONFIG_HOME: path.join(root, "config"),
    XDG_DATA_HOME: path.join(root, "data"),
    XDG_STATE_HOME: path.join(root, "state"),
    TMPDIR: os.tmpdir(),
    NO_COLOR: "1",
  };
  mkdirSync(path.join(env.XDG_CONFIG_HOME, "pi-guard"), { recursive: true });
  writeFileSync(path.join(env.XDG_CONFIG_HOME, "pi-guard", "config.json"), JSON.stringify({ watch: { debounceMs: 600_000, maxDelayMs: 3_600_000, fullScanMs: 0 } }));
  const init = spawnSync(process.execPath, [BIN, "init"], { env });
  if (init.status !== 0) throw new Error(`pi-guard init failed: ${init.stderr}`);
  return { root, home, agentDir, env };
}

function startPi(b: Box, replies: string[], o: { extension: boolean; tokensPerSecond?: number }): RpcPi {
  const script = path.join(b.root, `script-${Date.now()}.json`);
  writeFileSync(script, JSON.stringify({ replies, tokenSize: { min: 2, max: 4 }, tokensPerSecond: o.tokensPerSecond }));
  return spawnRpcPi({
    node: PI_NODE,
    piCli: PI_CLI,
    extensions: o.extension ? [FAUX, EXTENSION] : [FAUX],
    provider: "pi1-faux",
    model: "faux-1",
    cwd: path.join(b.home, "proj"),
    env: { PATH: b.env.PATH, HOME: b.home, TMPDIR: os.tmpdir(), PI_OFFLINE: "1", PI_TELEMETRY: "0", NO_COLOR: "1", PI_CODING_AGENT_DIR: b.agentDir, XDG_STATE_HOME: b.env.XDG_STATE_HOME, PI1_FAUX_SCRIPT: script },
  });
}

const stateOf = (b: Box): WatcherState | undefined => {
  try {
    return JSON.parse(readFileSync(watcherFiles(path.join(b.env.XDG_STATE_HOME, "pi-guard"), b.agentDir).state, "utf8")) as WatcherState;
  } catch {
    return undefined;
  }
};

async function until<T>(what: string, f: () => T | undefined, ms = 30_000, every = 2): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

function startWatcher(b: Box) {
  const child = spawn(process.execPath, [BIN, "watch", "--quiet"], { env: b.env, stdio: "ignore" });
  return { child, stop: () => new Promise<void>((r) => (child.once("close", () => r()), child.kill("SIGTERM"))) };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, c) => a - c);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

/** The request the extension writes at turn_end (docs/FORMAT.md §15), written by the bench instead. */
function request(b: Box, pid: number): void {
  const file = watcherFiles(path.join(b.env.XDG_STATE_HOME, "pi-guard"), b.agentDir).request;
  writeFileSync(`${file}.tmp-bench`, JSON.stringify({ reason: "turn_end", pid, sessionFile: null, at: new Date().toISOString() }));
  renameSync(`${file}.tmp-bench`, file);
}

/** Runs `turns` prompts; returns per-turn [turn time, turn_end → restorable]. */
async function runTurns(b: Box, extension: boolean, watching: boolean): Promise<{ turnMs: number[]; restorableMs: number[] }> {
  const pi = startPi(b, Array.from({ length: turns }, (_, i) => `Answer ${i}: ${"some text ".repeat(30)}`), { extension });
  const turnMs: number[] = [];
  const restorableMs: number[] = [];
  let from = 0;
  try {
    for (let i = 0; i < turns; i++) {
      // Quiet first: no snapshot under way, so the next one counted is the turn's.
      if (watching) await until("an idle watcher", () => (stateOf(b) && !stateOf(b)!.pendingSince ? true : undefined), 30_000, 20);
      const made = stateOf(b)?.snapshots.made ?? 0;
      const t0 = Date.now();
      pi.prompt(`question ${i}`);
      const end = await pi.waitEvent("turn_end", (e) => e.type === "turn_end", from);
      if (watching && !extension) request(b, pi.child.pid ?? 0);
      const settled = await pi.waitEvent("agent_settled", (e) => e.type === "agent_settled", end.index);
      from = settled.index + 1;
      turnMs.push(settled.at - t0);
      if (watching) {
        const s = await until("the requested snapshot", () => {
          const st = stateOf(b);
          return st && st.snapshots.made > made && st.lastSnapshot ? st : undefined;
        });
        restorableMs.push(Date.parse(s.lastSnapshot!.time) - end.at);
      }
    }
  } finally {
    await stopPi(pi);
  }
  return { turnMs, restorableMs };
}

async function killRun(i: number): Promise<{ streamed: number; recovered: number; killedAfterMs: number }> {
  const b = box(`kill${i}`);
  try {
    const answer = Array.from({ length: 600 }, (_, k) => `Line ${k} of a long streamed answer.`).join("\n");
    const pi = startPi(b, [answer], { extension: true, tokensPerSecond: 150 });
    pi.prompt("a long answer please");
    const first = await pi.waitEvent("the first delta", (e) => e.type === "message_update" && e.assistantMessageEvent?.type === "text_delta");
    const wait = 400 + i * 700;
    await new Promise((r) => setTimeout(r, wait));
    pi.child.kill("SIGKILL");
    await pi.exited;
    const streamed = pi.streamedText().length;
    const out = path.join(b.root, "salvaged");
    const r = spawnSync(process.execPath, [BIN, "salvage", "--from-journals", "--out", out, "--json"], { env: b.env, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`salvage failed: ${r.stderr}`);
    const file = readdirSync(out).find((n) => n.endsWith(".jsonl"))!;
    const lines = readFileSync(path.join(out, file), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    const m = lines.reverse().find((e) => e.type === "message" && e.message.role === "assistant").message;
    const recovered = m.content.filter((c: { type: string }) => c.type === "text").map((c: { text: string }) => c.text).join("").length;
    return { streamed, recovered, killedAfterMs: Date.now() - first.at };
  } finally {
    rmSync(b.root, { recursive: true, force: true });
  }
}

function turnCell(ms: number[]): string {
  const rest = ms.slice(1);
  const mean = rest.reduce((a, c) => a + c, 0) / Math.max(1, rest.length);
  return `${ms[0]} ms; ${pct(rest, 50)} / ${pct(rest, 99)} / ${mean.toFixed(1)} ms`;
}

async function main(): Promise<void> {
  log(`${turns} turns with the extension and a watcher`);
  const withBox = box("with");
  const w = startWatcher(withBox);
  await until("the watcher's first snapshot", () => ((stateOf(withBox)?.snapshots.made ?? 0) >= 1 ? true : undefined));
  const withExt = await runTurns(withBox, true, true);
  log(`${turns} turns without the extension (watcher running, the bench writing the extension's requests)`);
  const withoutExt = await runTurns(withBox, false, true);
  await w.stop();
  rmSync(withBox.root, { recursive: true, force: true });
  log(`${kills} kill -9 runs`);
  const killRuns = [];
  for (let i = 0; i < kills; i++) killRuns.push(await killRun(i));

  const rows: [string, string][] = [
    ["turn_end → restorable p50", `${pct(withExt.restorableMs, 50)} ms`],
    ["turn_end → restorable p99", `${pct(withExt.restorableMs, 99)} ms`],
    ["turn_end → restorable max", `${Math.max(...withExt.restorableMs)} ms`],
    // The first turn of a pi process includes its first request's set-up: shown apart.
    ["pi turn time with extension: first; rest p50 / p99 / mean", turnCell(withExt.turnMs)],
    ["pi turn time without extension: first; rest p50 / p99 / mean", turnCell(withoutExt.turnMs)],
    ["turn_end → restorable without extension (bench's requests) p50 / p99", `${pct(withoutExt.restorableMs, 50)} / ${pct(withoutExt.restorableMs, 99)} ms`],
    ["snapshots during the turns: with / without extension", `${withExt.restorableMs.length} / ${withoutExt.restorableMs.length}`],
    ...killRuns.map((k, i): [string, string] => [`kill -9 #${i + 1} after ${k.killedAfterMs} ms of streaming`, `${k.recovered} of ${k.streamed} characters recovered (${((100 * k.recovered) / Math.max(1, k.streamed)).toFixed(1)} %)`]),
  ];
  const width = Math.max(...rows.map((r) => r[0].length));
  process.stdout.write(rows.map(([a, b]) => `${a.padEnd(width)}  ${b}`).join("\n") + "\n");
  mkdirSync(args.out!, { recursive: true });
  const file = path.join(args.out!, "pi-extension.json");
  writeFileSync(file, JSON.stringify({ turns, withExtension: withExt, withoutExtension: withoutExt, kills: killRuns }, null, 2));
  log(`wrote ${file}`);
}

await main();
