// pi 1.6.0 run interactively, its real TUI in a tmux pane: the faux provider extension and, unless
// told otherwise, pi-guard's built extension, in a sandbox's HOME. The pane is read with
// `tmux capture-pane -p`, as a user would see it.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { PI1_FAUX_EXTENSION, PI1_FAUX_MODEL, PI1_FAUX_PROVIDER, pi1Env, type Pi1Reply } from "../helpers/pi1.js";
import { pi1Dir, pi1Node } from "../helpers/tools.js";
import type { Sandbox } from "../helpers/tmp.js";
import { EXTENSION } from "./pi-rpc.js";

export interface TuiPi {
  /** The pane's text now (what the terminal shows). */
  capture(): string;
  /** Type text into pi's editor, then Enter. */
  type(text: string): void;
  stop(): void;
}

const tmux = (socket: string, args: string[]): string => execFileSync("tmux", ["-L", socket, ...args], { encoding: "utf8", timeout: 10_000 });

export function startTuiPi(o: { sb: Sandbox; env: Record<string, string>; cwd: string; replies: Pi1Reply[]; width?: number; height?: number }): TuiPi {
  const socket = `pi-guard-${process.pid}-${Math.random().toString(16).slice(2, 10)}`;
  const script = path.join(o.sb.dir("faux-script"), `tui-${socket}.json`);
  writeFileSync(script, JSON.stringify({ replies: o.replies, tokenSize: { min: 2, max: 4 } }));
  const env = { ...pi1Env(o.sb.home, o.sb.agentDir, { PI1_FAUX_SCRIPT: script, TERM: "xterm-256color" }), ...o.env };
  const args = [path.join(pi1Dir(), "node_modules", ".bin", "pi"), "-e", PI1_FAUX_EXTENSION, "-e", EXTENSION, "--provider", PI1_FAUX_PROVIDER, "--model", PI1_FAUX_MODEL];
  // tmux starts the pane's command through its own server: the sandbox's env goes in by `env -i`.
  const command = ["env", "-i", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), pi1Node(), ...args];
  tmux(socket, ["-f", "/dev/null", "new-session", "-d", "-s", "pi", "-x", String(o.width ?? 120), "-y", String(o.height ?? 40), "-c", o.cwd, ...command]);
  return {
    capture: () => tmux(socket, ["capture-pane", "-p", "-t", "pi"]),
    type(text) {
      tmux(socket, ["send-keys", "-t", "pi", "-l", text]);
      tmux(socket, ["send-keys", "-t", "pi", "Enter"]);
    },
    stop() {
      try {
        tmux(socket, ["kill-server"]);
      } catch {
        // already gone
      }
    },
  };
}
