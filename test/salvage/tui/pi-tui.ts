// Runs the REAL interactive pi (its CLI, TUI and agent loop) inside tmux, with the faux model
// registered by faux-extension.ts, types prompts with send-keys and captures the scrollback
// with and without escapes. Everything lives in a temp root; each run has its own tmux socket
// and the server is always killed.

import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export type ScriptBlock = { text: string } | { thinking: string } | { tool: string; args: Record<string, unknown> };

export interface TuiTurn {
  prompt: string;
  /** The model's replies to this prompt, one per model call (tool calls make pi call again). */
  replies: ScriptBlock[][];
}

export interface TuiRun {
  plain: string;
  styled: string;
  /** The session file pi itself wrote during the run. */
  sessionFile: string;
  cwd: string;
  agentDir: string;
  env: Record<string, string>;
}

const PI_CLI = fileURLToPath(new URL("../../../node_modules/@mariozechner/pi-coding-agent/dist/cli.js", import.meta.url));
const EXTENSION = fileURLToPath(new URL("./faux-extension.ts", import.meta.url));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The env pi runs with: nothing from the real home, offline, faux model. */
export function piEnv(root: string, script: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(root, "home"),
    XDG_CONFIG_HOME: join(root, "xdg-config"),
    XDG_DATA_HOME: join(root, "xdg-data"),
    XDG_CACHE_HOME: join(root, "xdg-cache"),
    PI_CODING_AGENT_DIR: join(root, "agent"),
    PI_OFFLINE: "1",
    PI_GUARD_FAUX_SCRIPT: script,
    TERM: "xterm-256color",
    COLORTERM: "truecolor",
  };
}

/** An agent dir with the faux extension and settings selecting its model. */
export function prepareAgentDir(root: string, settings: Record<string, unknown> = {}): { agentDir: string; cwd: string } {
  const agentDir = join(root, "agent");
  const cwd = join(root, "proj");
  for (const d of [join(agentDir, "extensions"), join(root, "home"), cwd]) mkdirSync(d, { recursive: true });
  copyFileSync(EXTENSION, join(agentDir, "extensions", "faux-extension.ts"));
  writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ defaultProvider: "faux", defaultModel: "faux-1", retry: { enabled: false }, compaction: { enabled: false }, ...settings }));
  return { agentDir, cwd };
}

/** Lines of every session file pi wrote so far. */
function sessionLines(agentDir: string): { file?: string; lines: Record<string, any>[] } {
  const root = join(agentDir, "sessions");
  if (!existsSync(root)) return { lines: [] };
  for (const dir of readdirSync(root)) {
    for (const name of readdirSync(join(root, dir))) {
      const file = join(root, dir, name);
      const lines = readFileSync(file, "utf8").split("\n").filter((l) => l.trim()).map((l) => { try { return JSON.parse(l); } catch { return {}; } });
      return { file, lines };
    }
  }
  return { lines: [] };
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(150);
  }
}

/** `settings`: extra pi settings.json keys (e.g. hideThinkingBlock). */
export async function runPiTui(root: string, turns: TuiTurn[], settings: Record<string, unknown> = {}): Promise<TuiRun> {
  const { agentDir, cwd } = prepareAgentDir(root, settings);
  const script = join(root, "script.json");
  writeFileSync(script, JSON.stringify(turns.flatMap((t) => t.replies)));
  const env = piEnv(root, script);
  const socket = `pi-guard-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const tmux = (...args: string[]) => execFileSync("tmux", ["-L", socket, "-f", "/dev/null", ...args], { encoding: "utf8", env });
  const capture = (styled: boolean) => tmux("capture-pane", "-p", ...(styled ? ["-e"] : []), "-S", "-", "-t", "pi");
  const envArgs = Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
  tmux("new-session", "-d", "-s", "pi", "-x", "200", "-y", "50", "-c", cwd, ...envArgs, `${process.execPath} ${PI_CLI}`);
  try {
    await until("pi's editor", () => (capture(false).includes("faux-1") ? true : undefined));
    for (const [i, turn] of turns.entries()) {
      tmux("send-keys", "-t", "pi", "-l", turn.prompt);
      tmux("send-keys", "-t", "pi", "Enter");
      // Done when pi wrote this turn's final reply (an assistant message that calls no tool).
      await until(`turn ${i + 1}`, () => {
        const finals = sessionLines(agentDir).lines.filter((l) => l.type === "message" && l.message?.role === "assistant" && l.message?.stopReason === "stop");
        return finals.length >= i + 1 ? true : undefined;
      });
      // Then until the screen stops changing: the last render lands after the write.
      let last = "";
      await until("a quiet screen", () => {
        const now = capture(true);
        const quiet = now === last;
        last = now;
        return quiet ? true : undefined;
      });
    }
    const { file } = sessionLines(agentDir);
    return { plain: capture(false), styled: capture(true), sessionFile: file!, cwd, agentDir, env };
  } finally {
    try {
      tmux("kill-server");
    } catch {
      // already gone
    }
  }
}
