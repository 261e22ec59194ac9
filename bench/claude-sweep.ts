// The long check of issue 19: Claude Code 2.1.328's own cleanupPeriodDays sweep, for real, with a
// pi-guard watcher running. test/agents/claude-sweep.test.ts unlinks an aged transcript as the sweep
// would; this waits for Claude Code to do it. In a sandbox HOME (CLAUDE_CONFIG_DIR inside it), against
// the fake model server: two sessions made with `claude -p`, the first one's transcript dated 40 days
// back and snapshotted, `pi-guard watch` started, then an interactive `claude` under tmux (its own
// tmux server), with a pre-seeded .claude.json that takes it past onboarding, the API-key question
// and the trust dialog (the pane is captured to show it reached the input box), and one prompt typed.
// Then it waits, bounded by --max-minutes, until the aged transcript is gone by Claude Code's hand,
// and checks: .last-cleanup written, the watcher's snapshot after the deletion tagged agent-cleanup
// (not suspect-loss), `status` naming the removed session, and `restore` bringing it back byte for
// byte. A small table, and JSON in --out; exit 1 if any step failed or the sweep never came.
//
// Why the wait (from the 2.1.328 binary, bench/README.md "Claude Code's sweep"): the sweep runs from
// startBackgroundHousekeeping, first tried 5 s after start-up work is released, and put off by 10
// minutes (DELAY_VERY_SLOW_OPERATIONS_THAT_HAPPEN_EVERY_SESSION) while the session is interactive and
// the user did something in the last 60 s, or while the process is a parked spare.
//
//   npm run build && node dist/bench/claude-sweep.js [--max-minutes 25] [--days N] [--keep] [--out bench/out]
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { claudeConfigDir, claudeEnv, claudeProject, runClaude, startClaudeModel } from "../test/helpers/agents/claude.js";
import { say } from "../test/helpers/fake-model/server.js";
import { PROJECT_ROOT } from "../test/helpers/root.js";
import type { Sandbox } from "../test/helpers/tmp.js";
import { claudeBin, CLAUDE_CODE_VERSION } from "../test/helpers/tools.js";

const DAY = 24 * 60 * 60 * 1000;
const BIN = path.join(PROJECT_ROOT, "bin", "pi-guard.js");

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const maxMinutes = Number(arg("max-minutes") ?? 25);
const days = arg("days") === undefined ? undefined : Number(arg("days"));
const keep = process.argv.includes("--keep");
const outDir = path.resolve(arg("out") ?? path.join(PROJECT_ROOT, "bench", "out"));
if (!(maxMinutes > 0) || (days !== undefined && !(Number.isInteger(days) && days >= 1))) {
  console.error("usage: claude-sweep [--max-minutes N>0] [--days N>=1 (cleanupPeriodDays)] [--keep] [--out DIR]");
  process.exit(2);
}

/** A sandbox like the tests' (test/helpers/tmp.ts), kept with --keep. */
function sandbox(): Sandbox {
  const root = mkdtempSync(path.join(os.tmpdir(), "pi-guard-bench-claude-sweep-"));
  const at = (...p: string[]) => path.join(root, ...p);
  const home = at("home");
  const agentDir = path.join(home, ".pi", "agent");
  for (const d of [home, agentDir, at("xdg-config"), at("xdg-data"), at("xdg-state")]) mkdirSync(d, { recursive: true });
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, PI_CODING_AGENT_DIR: agentDir, PI_GUARD_REPO: at("backups", "repo"), XDG_CONFIG_HOME: at("xdg-config"), XDG_DATA_HOME: at("xdg-data"), XDG_STATE_HOME: at("xdg-state"), TMPDIR: os.tmpdir(), NO_COLOR: "1" };
  return {
    root,
    home,
    agentDir,
    sessionsDir: path.join(agentDir, "sessions"),
    repo: env.PI_GUARD_REPO,
    configHome: env.XDG_CONFIG_HOME,
    dataHome: env.XDG_DATA_HOME,
    env,
    dir: (name) => (mkdirSync(at(name), { recursive: true }), at(name)),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

interface Step {
  step: string;
  ok: boolean;
  detail: string;
  atSeconds: number;
}
const t0 = Date.now();
const steps: Step[] = [];
const record = (step: string, ok: boolean, detail: string) => {
  steps.push({ step, ok, detail, atSeconds: Math.round((Date.now() - t0) / 1000) });
  console.log(`${ok ? "ok  " : "FAIL"} ${step}: ${detail}`);
  return ok;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `pi-guard <args>` in the sandbox: exit code, stdout, stderr. */
function piGuard(sb: Sandbox, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: sb.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
const json = <T>(r: { stdout: string }): T | undefined => {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    return undefined;
  }
};
interface Listed {
  id: string;
  time: string;
  tags: string[];
}

/** Claude Code under a tmux server of our own (never the user's default one). */
class Tmux {
  readonly socket = `pi-guard-claude-sweep-${process.pid}`;
  run(args: string[]): string {
    return execFileSync("tmux", ["-L", this.socket, ...args], { encoding: "utf8" });
  }
  capture(): string {
    try {
      return this.run(["capture-pane", "-p", "-t", "sweep"]);
    } catch {
      return "";
    }
  }
  keys(...keys: string[]): void {
    this.run(["send-keys", "-t", "sweep", ...keys]);
  }
  kill(): void {
    try {
      this.run(["kill-server"]);
    } catch {
      // already gone
    }
  }
}

/**
 * .claude.json as a user who has run Claude Code before leaves it: onboarding done, the API key
 * approved (its last 20 characters), this project trusted. Merged into what `claude -p` wrote.
 */
function seedClaudeJson(configDir: string, project: string, apiKey: string): void {
  const file = path.join(configDir, ".claude.json");
  const old = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : {};
  const projects = { ...old.projects, [project]: { ...old.projects?.[project], hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true, projectOnboardingSeenCount: 1 } };
  const seeded = { ...old, hasCompletedOnboarding: true, lastOnboardingVersion: CLAUDE_CODE_VERSION, theme: "dark", customApiKeyResponses: { approved: [apiKey.trim().slice(-20)], rejected: [] }, projects };
  writeFileSync(file, JSON.stringify(seeded, null, 2));
}

const DIALOG = /trust|API key|text style|Choose the|Press Enter|Enter to confirm|Security notes|Yes, proceed/i;
const INPUT_BOX = /\? for shortcuts|for shortcuts|bypass permissions|^\s*[>❯]\s*$|│ >/m;

async function main(): Promise<number> {
  const sb = sandbox();
  const configDir = claudeConfigDir(sb);
  const project = claudeProject(sb);
  const server = await startClaudeModel([say("Old session."), say("Fresh session.")]);
  const tmux = new Tmux();
  let watch: ChildProcess | undefined;
  let watchErr = "";
  const result: Record<string, unknown> = { claudeCode: CLAUDE_CODE_VERSION, maxMinutes, cleanupPeriodDays: days ?? "not set (default 30)", sandbox: sb.root };
  try {
    // Two real sessions; the first one last written 40 days ago.
    const old = await runClaude(sb, server, "old session");
    const fresh = await runClaude(sb, server, "fresh session");
    const oldBytes = readFileSync(old.transcript);
    const rel = path.relative(configDir, old.transcript).split(path.sep).join("/");
    const aged = new Date(Date.now() - 40 * DAY);
    utimesSync(old.transcript, aged, aged);
    record("sessions", true, `claude -p made ${old.sessionId} (dated 40 days back) and ${fresh.sessionId}`);
    if (days !== undefined) writeFileSync(path.join(configDir, "settings.json"), JSON.stringify({ cleanupPeriodDays: days }, null, 2));
    result.lastCleanupBefore = existsSync(path.join(configDir, ".last-cleanup"));

    // pi-guard guards Claude Code by name; the snapshot holding the aged transcript; then the watcher.
    const configFile = path.join(sb.configHome, "pi-guard", "config.json");
    if ((await piGuard(sb, ["init"])).code !== 0) return record("init", false, "pi-guard init failed"), 1;
    const config = existsSync(configFile) ? JSON.parse(readFileSync(configFile, "utf8")) : {};
    writeFileSync(configFile, JSON.stringify({ ...config, agents: { ...config.agents, claude: { enabled: true } } }, null, 2));
    const holder = json<{ snapshotId: string }>(await piGuard(sb, ["snapshot", "--json"]))?.snapshotId;
    if (!record("holder snapshot", !!holder, `snapshot ${holder ?? "(none)"} holds ${rel}`)) return 1;
    watch = spawn(process.execPath, [BIN, "watch"], { env: sb.env, stdio: ["ignore", "ignore", "pipe"] });
    watch.stderr!.setEncoding("utf8").on("data", (d: string) => (watchErr = (watchErr + d).slice(-20_000)));
    const listed = async () => json<Listed[]>(await piGuard(sb, ["snapshots", "--json"])) ?? [];
    for (let i = 0; i < 60 && (await listed()).length < 2; i++) await sleep(1000);
    record("watcher", watch.exitCode === null, `pi-guard watch running (pid ${watch.pid}), ${(await listed()).length} snapshot(s)`);

    // Interactive Claude Code under tmux, past every start-up prompt.
    seedClaudeJson(configDir, project, claudeEnv(sb, server).ANTHROPIC_API_KEY);
    const debugLog = path.join(sb.root, "claude-debug.log");
    const env = Object.entries({ ...claudeEnv(sb, server), TERM: "xterm-256color" })
      .map(([k, v]) => `${k}='${v}'`)
      .join(" ");
    const script = path.join(sb.root, "run-claude.sh");
    writeFileSync(script, `cd '${project}' && exec env -i ${env} '${claudeBin()}' --debug-file '${debugLog}'\n`);
    tmux.run(["new-session", "-d", "-s", "sweep", "-x", "200", "-y", "50", `sh '${script}'`]);
    const startedAt = Date.now();
    const dialogs: string[] = [];
    let pane = "";
    for (let i = 0; i < 90; i++) {
      await sleep(1000);
      pane = tmux.capture();
      if (DIALOG.test(pane) && dialogs.length < 5) {
        dialogs.push(pane.trim().split("\n").slice(-12).join("\n"));
        tmux.keys("Enter");
      } else if (INPUT_BOX.test(pane)) break;
    }
    result.dialogsAnswered = dialogs;
    result.paneAtInputBox = pane;
    if (!record("input box", INPUT_BOX.test(pane) && !DIALOG.test(pane), `${dialogs.length} start-up dialog(s) answered with Enter; pane:\n${indent(pane)}`)) return 1;

    server.setScript([say("Interactive answer from the fake model.")]);
    const before = server.turnRequests.length;
    // The first prompt is what starts the interactive session's housekeeping (REPL markSubmit).
    const promptAt = Date.now();
    tmux.keys("-l", "hello from the sweep bench");
    tmux.keys("Enter");
    for (let i = 0; i < 60 && server.turnRequests.length === before; i++) await sleep(1000);
    await sleep(3000);
    record("prompt", server.turnRequests.length > before, `one prompt typed; the model got ${server.turnRequests.length - before} turn request(s)`);

    // The wait: only Claude Code can remove the aged transcript now.
    const deadline = startedAt + maxMinutes * 60_000;
    let sweptAt: number | undefined;
    // The last time the transcript was seen: the deletion (and the watcher's snapshot of it) came after.
    let seenAt = Date.now();
    let lastReport = 0;
    while (Date.now() < deadline) {
      const checked = Date.now();
      if (!existsSync(old.transcript)) {
        sweptAt = checked;
        break;
      }
      seenAt = checked;
      if (Date.now() - lastReport >= 60_000) {
        lastReport = Date.now();
        console.log(`  waiting: ${Math.round((Date.now() - startedAt) / 60_000)} min into the interactive session, ${rel} still there`);
      }
      await sleep(5000);
    }
    result.debugLogLines = debugLines(debugLog);
    if (sweptAt === undefined) {
      record("sweep", false, `the aged transcript was still there after ${maxMinutes} min of interactive session: the sweep did not come (debug log lines about it: ${(result.debugLogLines as string[]).length})`);
      return 1;
    }
    const min = (t: number) => ((t - promptAt) / 60_000).toFixed(1);
    result.timeline = { claudeStarted: new Date(startedAt).toISOString(), firstPrompt: new Date(promptAt).toISOString(), lastSeen: new Date(seenAt).toISOString(), goneAt: new Date(sweptAt).toISOString() };
    record("sweep", true, `${rel} removed by Claude Code ${min(seenAt)}-${min(sweptAt)} min after the first prompt`);
    for (let i = 0; i < 30 && !existsSync(path.join(configDir, ".last-cleanup")); i++) await sleep(1000);
    const marker = path.join(configDir, ".last-cleanup");
    record(".last-cleanup", existsSync(marker) && statSync(marker).mtimeMs >= startedAt, existsSync(marker) ? `written: ${readFileSync(marker, "utf8").trim()}` : "not written");
    record("fresh session kept", existsSync(fresh.transcript), fresh.transcript);

    // The watcher's snapshot after the deletion.
    let after: Listed | undefined;
    for (let i = 0; i < 120 && !after; i++) {
      after = (await listed()).find((s) => Date.parse(s.time) >= seenAt && (s.tags.includes("agent-cleanup") || s.tags.includes("suspect-loss")));
      if (!after) await sleep(1000);
    }
    record("watcher snapshot", !!after && after.tags.includes("agent-cleanup") && !after.tags.includes("suspect-loss"), after ? `${after.id.slice(0, 8)} tagged ${after.tags.join(", ")}` : "no snapshot after the deletion was tagged agent-cleanup or suspect-loss in 120 s");

    const status = json<{ cleanups?: { snapshot: string; against: string; agents: { agent: string; sample: string[] }[] }[] }>(await piGuard(sb, ["status", "--json"]));
    const cleanup = status?.cleanups?.find((c) => c.agents.some((a) => a.agent === "claude" && a.sample.includes(`claude:${rel}`)));
    record("status", !!cleanup, cleanup ? `names claude:${rel}, kept in snapshot ${cleanup.against.slice(0, 8)}` : `no cleanup naming claude:${rel}`);

    // Stop Claude Code and the watcher, then the restore.
    tmux.kill();
    watch.kill("SIGTERM");
    await new Promise((r) => (watch!.exitCode !== null ? r(undefined) : watch!.once("close", r)));
    const from = cleanup?.against ?? holder!;
    const restored = await piGuard(sb, ["restore", from, "--agent", "claude", "--path", rel, "--json"]);
    const same = existsSync(old.transcript) && readFileSync(old.transcript).equals(oldBytes);
    record("restore", restored.code === 0 && same, `restore ${from.slice(0, 8)} --agent claude --path ${rel}: exit ${restored.code}, ${same ? "byte-identical" : "NOT byte-identical"}`);
    return steps.every((s) => s.ok) ? 0 : 1;
  } finally {
    tmux.kill();
    if (watch && watch.exitCode === null) watch.kill("SIGKILL");
    result.watcherStderrTail = watchErr.slice(-4000);
    result.modelRequests = server.requests.length;
    await server.close();
    result.steps = steps;
    mkdirSync(outDir, { recursive: true });
    const out = path.join(outDir, `claude-sweep-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    writeFileSync(out, JSON.stringify(result, null, 2));
    console.log(`\n${table(steps)}\nJSON: ${out}${keep ? `\nsandbox kept: ${sb.root}` : ""}`);
    if (!keep) sb.cleanup();
  }
}

/** The lines of Claude Code's debug log about housekeeping and retention (the evidence when the sweep does not come). */
function debugLines(file: string): string[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, "utf8").slice(-5_000_000);
  return text.split("\n").filter((l) => /housekeeping|retention|cleanup|startupWorkGate/i.test(l)).slice(-200);
}

const indent = (s: string) =>
  s
    .trimEnd()
    .split("\n")
    .filter((l) => l.trim() !== "")
    .slice(-15)
    .map((l) => `      | ${l}`)
    .join("\n");

function table(rows: Step[]): string {
  const w = Math.max(...rows.map((r) => r.step.length), 4);
  return [`${"step".padEnd(w)}  ok    at s  detail`, ...rows.map((r) => `${r.step.padEnd(w)}  ${(r.ok ? "yes" : "NO").padEnd(4)}  ${String(r.atSeconds).padStart(4)}  ${r.detail.split("\n")[0]}`)].join("\n");
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`claude-sweep failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
