// Run the built `pi-guard watch` as a real process in a sandbox and read what it leaves behind:
// the state file, the JSON-lines log, its stderr.
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach } from "vitest";
import { initRepo, ok, spawnCli } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";
import { watcherFiles, type WatcherState } from "../../src/watch/state.js";

export interface RunningWatch {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code (or the signal name) once the process ended. */
  exited: Promise<number | string>;
}

export function stateDir(sb: Sandbox): string {
  return path.join(sb.root, "xdg-state", "pi-guard");
}

/** The sandbox's environment with XDG_STATE_HOME inside it. */
export function watchEnv(sb: Sandbox): Record<string, string> {
  return { ...sb.env, XDG_STATE_HOME: path.join(sb.root, "xdg-state") };
}

export function startWatch(sb: Sandbox, args: string[] = []): RunningWatch {
  const child = spawnCli(watchEnv(sb), ["watch", ...args]);
  let out = "";
  let err = "";
  child.stdout?.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr?.setEncoding("utf8").on("data", (d: string) => (err += d));
  const exited = new Promise<number | string>((resolve) => child.on("close", (code, signal) => resolve(code ?? signal ?? "unknown")));
  return { child, stdout: () => out, stderr: () => err, exited };
}

export function files(sb: Sandbox): ReturnType<typeof watcherFiles> {
  return watcherFiles(stateDir(sb), sb.agentDir);
}

export function readState(sb: Sandbox): WatcherState | undefined {
  try {
    return JSON.parse(readFileSync(files(sb).state, "utf8")) as WatcherState;
  } catch {
    return undefined;
  }
}

export interface LogEvent {
  time: string;
  level: string;
  event: string;
  [k: string]: any;
}

export function readLog(sb: Sandbox): LogEvent[] {
  const file = files(sb).log;
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .flatMap((l) => {
      // The last line may be half-written while we read.
      try {
        return [JSON.parse(l) as LogEvent];
      } catch {
        return [];
      }
    });
}

/**
 * Poll until `check` returns a value (not undefined/false), or fail after `timeoutMs` saying what
 * was awaited; `what` may be a function, called only then, to say what was seen instead.
 */
export async function waitFor<T>(what: string | (() => string), check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000, everyMs = 20): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === "function" ? what() : what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The watcher has started and taken its first snapshot. */
export function waitReady(sb: Sandbox, w: RunningWatch, made = 1): Promise<WatcherState> {
  return waitFor(`the watcher's snapshot #${made} (stderr: ${w.stderr()})`, () => {
    const s = readState(sb);
    return s && s.pid === w.child.pid && s.snapshots.made >= made ? s : undefined;
  });
}

export async function stopWatch(w: RunningWatch, signal: NodeJS.Signals = "SIGTERM"): Promise<{ code: number | string; ms: number }> {
  const t0 = Date.now();
  w.child.kill(signal);
  const code = await w.exited;
  return { code, ms: Date.now() - t0 };
}

/**
 * Sandboxes (an agent dir with pi's config files and four sessions, an initialised repository) and
 * watchers, each cleaned up (watchers killed) after every test of the file that calls this.
 */
export function watchScene(): { setup: (label: string) => Promise<Sandbox>; watch: (sb: Sandbox, args?: string[]) => RunningWatch } {
  const sandboxes: Sandbox[] = [];
  const watchers: RunningWatch[] = [];
  afterEach(() => {
    for (const w of watchers.splice(0)) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
    for (const sb of sandboxes.splice(0)) sb.cleanup();
  });
  return {
    async setup(label) {
      const sb = makeSandbox(label);
      sandboxes.push(sb);
      writePiConfigFiles(sb.agentDir);
      const dir = path.join(sb.sessionsDir, "--proj--");
      mkdirSync(dir, { recursive: true });
      for (let i = 0; i < 4; i++) writeFileSync(path.join(dir, `s${i}.jsonl`), `{"type":"session","version":3,"id":"s${i}"}\n`);
      await initRepo(sb);
      return sb;
    },
    watch(sb, args = []) {
      const w = startWatch(sb, args);
      watchers.push(w);
      return w;
    },
  };
}

/** Restore snapshot `id` into a fresh folder and return the bytes of `rel` (relative to the agent dir). */
export async function restoredBytes(sb: Sandbox, id: string, rel: string): Promise<Buffer> {
  const target = sb.dir(`restore-${id.slice(0, 12)}-${Date.now()}`);
  await ok(watchEnv(sb), ["restore", id, "--target", target, "--json"]);
  return readFileSync(path.join(target, rel));
}
