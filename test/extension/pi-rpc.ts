// The real pi 1.6.0 CLI in RPC mode (`pi --mode rpc`) on its own Node 22, with the faux provider
// extension (test/helpers/pi1-faux-extension.mjs) and, unless told otherwise, pi-guard's built
// extension (dist/pi-extension/index.js). RPC mode is the one where an extension's ctx.ui calls
// come out as `extension_ui_request` lines, so the tests see what pi's footer would show.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { PROJECT_ROOT } from "../helpers/cli.js";
import { PI1_FAUX_EXTENSION, PI1_FAUX_MODEL, PI1_FAUX_PROVIDER, pi1Env, type Pi1Reply } from "../helpers/pi1.js";
import { pi1Dir, pi1Node } from "../helpers/tools.js";
import type { Sandbox } from "../helpers/tmp.js";

export const EXTENSION = path.join(PROJECT_ROOT, "dist", "pi-extension", "index.js");

export interface PiEvent {
  type: string;
  [k: string]: any;
}

export interface RpcPi {
  child: ChildProcess;
  /** Every line pi printed, parsed, in order, with when the test read it (ms). */
  events: { at: number; event: PiEvent }[];
  /** The footer texts pi-guard set, in order. */
  statuses(): string[];
  notifications(): string[];
  /** Characters of answer text streamed so far (the sum of text_delta deltas). */
  streamedText(): string;
  prompt(message: string): void;
  /** Resolves with the first event after index `from` that passes `test`. */
  waitEvent(what: string, test: (e: PiEvent) => boolean, from?: number, timeoutMs?: number): Promise<{ at: number; event: PiEvent; index: number }>;
  exited: Promise<number | string>;
  stderr(): string;
}

export interface RpcPiOptions {
  sb: Sandbox;
  /** The environment of pi-guard's processes in the sandbox (XDG_STATE_HOME included). */
  env: Record<string, string>;
  cwd: string;
  replies: Pi1Reply[];
  tokensPerSecond?: number;
  /** Load pi-guard's extension with -e (default true; false to rely on an installed loader). */
  withExtension?: boolean;
  extraEnv?: Record<string, string>;
}

export function startRpcPi(o: RpcPiOptions): RpcPi {
  mkdirSync(o.cwd, { recursive: true });
  const script = path.join(o.sb.dir("faux-script"), `script-${Date.now()}-${Math.random().toString(16).slice(2)}.json`);
  writeFileSync(script, JSON.stringify({ replies: o.replies, tokenSize: { min: 2, max: 4 }, tokensPerSecond: o.tokensPerSecond }));
  const cli = path.join(pi1Dir(), "node_modules", ".bin", "pi");
  const ext = o.withExtension === false ? [] : ["-e", EXTENSION];
  const env = {
    ...pi1Env(o.sb.home, o.sb.agentDir, { PI1_FAUX_SCRIPT: script }),
    ...(o.env.XDG_STATE_HOME ? { XDG_STATE_HOME: o.env.XDG_STATE_HOME } : {}),
    ...(o.extraEnv ?? {}),
  };
  const child = spawn(pi1Node(), [cli, "-e", PI1_FAUX_EXTENSION, ...ext, "--provider", PI1_FAUX_PROVIDER, "--model", PI1_FAUX_MODEL, "--mode", "rpc"], {
    cwd: o.cwd,
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const events: { at: number; event: PiEvent }[] = [];
  const waiters = new Set<() => void>();
  let buf = "";
  let err = "";
  child.stdin!.on("error", () => undefined); // pi killed with -9: later writes fail, that is expected
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (err += d));
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    buf += d;
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        events.push({ at: Date.now(), event: JSON.parse(line) as PiEvent });
      } catch {
        events.push({ at: Date.now(), event: { type: "unparsed", line } });
      }
    }
    for (const w of waiters) w();
  });
  const exited = new Promise<number | string>((resolve) => child.on("close", (code, signal) => resolve(code ?? signal ?? "unknown")));
  const ui = (method: string, field: string) => events.filter((e) => e.event.type === "extension_ui_request" && e.event.method === method && (method !== "setStatus" || e.event.statusKey === "pi-guard")).map((e) => String(e.event[field]));
  return {
    child,
    events,
    statuses: () => ui("setStatus", "statusText"),
    notifications: () => ui("notify", "message"),
    streamedText: () =>
      events
        .filter((e) => e.event.type === "message_update" && e.event.assistantMessageEvent?.type === "text_delta")
        .map((e) => String(e.event.assistantMessageEvent.delta))
        .join(""),
    prompt(message) {
      child.stdin!.write(JSON.stringify({ type: "prompt", message }) + "\n");
    },
    waitEvent(what, test, from = 0, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const look = () => {
          for (let i = from; i < events.length; i++) {
            if (test(events[i].event)) {
              waiters.delete(look);
              clearTimeout(timer);
              return resolve({ ...events[i], index: i });
            }
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(look);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; pi's stderr: ${err.slice(-2000)}; last events: ${events.slice(-5).map((e) => JSON.stringify(e.event).slice(0, 200)).join(" | ")}`));
        }, timeoutMs);
        waiters.add(look);
        look();
      });
    },
    exited,
    stderr: () => err,
  };
}

/** Stop pi as a user closing it would (SIGTERM: pi runs session_shutdown), or kill it. */
export async function stopPi(pi: RpcPi, signal: NodeJS.Signals = "SIGTERM"): Promise<number | string> {
  if (pi.child.exitCode === null && pi.child.signalCode === null) pi.child.kill(signal);
  return pi.exited;
}
