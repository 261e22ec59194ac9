// The real pi 1.x CLI in RPC mode (`pi --mode rpc`) as a child process on its own Node, with
// extensions loaded by -e: what test/extension/ and bench/pi-extension.ts drive. RPC mode is the
// one where an extension's ctx.ui calls come out as `extension_ui_request` lines, so a caller sees
// what pi's footer would show. Nothing here imports pi or the tests' helpers.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";

export interface PiEvent {
  type: string;
  [k: string]: any;
}

export interface RpcPi {
  child: ChildProcess;
  /** Every line pi printed, parsed, in order, with when it was read (ms). */
  events: { at: number; event: PiEvent }[];
  /** The footer texts pi-guard set, in order. */
  statuses(): string[];
  notifications(): string[];
  /** The answer text streamed so far (the text_delta deltas). */
  streamedText(): string;
  prompt(message: string): void;
  /** Send any RPC command (a JSON object with its type). */
  send(command: Record<string, unknown>): void;
  /** Resolves with the first event at or after index `from` that passes `test`. */
  waitEvent(what: string, test: (e: PiEvent) => boolean, from?: number, timeoutMs?: number): Promise<{ at: number; event: PiEvent; index: number }>;
  exited: Promise<number | string>;
  stderr(): string;
}

export interface RpcPiSpawn {
  /** The Node pi runs on, and pi's CLI script. */
  node: string;
  piCli: string;
  /** -e extensions, in load order. */
  extensions: string[];
  /** pi's --provider and --model. */
  provider: string;
  model: string;
  cwd: string;
  env: Record<string, string>;
  /** More arguments for pi (e.g. --session <file>). */
  args?: string[];
}

export function spawnRpcPi(o: RpcPiSpawn): RpcPi {
  mkdirSync(o.cwd, { recursive: true });
  const child = spawn(o.node, [o.piCli, ...o.extensions.flatMap((e) => ["-e", e]), "--provider", o.provider, "--model", o.model, "--mode", "rpc", ...(o.args ?? [])], {
    cwd: o.cwd,
    env: o.env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const events: { at: number; event: PiEvent }[] = [];
  const waiters = new Set<() => void>();
  let buf = "";
  let err = "";
  child.stdin!.on("error", () => undefined); // pi killed with -9: later writes fail, as expected
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
  const ui = (method: string, field: string) =>
    events.filter((e) => e.event.type === "extension_ui_request" && e.event.method === method && (method !== "setStatus" || e.event.statusKey === "pi-guard")).map((e) => String(e.event[field]));
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
    send(command) {
      child.stdin!.write(JSON.stringify(command) + "\n");
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
