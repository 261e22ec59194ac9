// Driving pi's real RPC mode (rpc-child.mjs) the way a web UI does: JSON commands on stdin,
// waiting for each answer (and for agent_end after a prompt); everything pi printed is kept, line
// by line, to be wrapped into a web UI's log.

import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { PROJECT_ROOT } from "../helpers/cli.js";

export type RpcLine = Record<string, unknown>;

export interface RpcStep {
  command: Record<string, unknown>;
}

/** Run the commands in order; returns every line pi wrote to stdout, parsed. */
export async function runPiRpc(opts: { agentDir: string; cwd: string; replies: unknown[]; commands: Record<string, unknown>[] }): Promise<RpcLine[]> {
  mkdirSync(opts.agentDir, { recursive: true });
  const repliesFile = join(opts.agentDir, "faux-replies.json");
  writeFileSync(repliesFile, JSON.stringify(opts.replies));
  const child = spawn(process.execPath, [join(PROJECT_ROOT, "test/salvage/rpc-child.mjs"), opts.agentDir, opts.cwd, repliesFile], {
    cwd: opts.cwd,
    env: { ...process.env, PI_CODING_AGENT_DIR: opts.agentDir },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const lines: RpcLine[] = [];
  let waiting: { until: (l: RpcLine) => boolean; resolve: () => void } | undefined;
  createInterface({ input: child.stdout }).on("line", (text) => {
    const l = JSON.parse(text) as RpcLine;
    lines.push(l);
    if (waiting?.until(l)) {
      const w = waiting;
      waiting = undefined;
      w.resolve();
    }
  });
  const exited = new Promise<void>((_, reject) => child.on("exit", (code) => reject(new Error(`pi rpc exited ${code}: ${stderr}`))));
  try {
    for (const [i, command] of opts.commands.entries()) {
      const id = `c${i}`;
      const prompt = command.type === "prompt";
      const done = new Promise<void>((resolve) => {
        waiting = { until: (l) => (prompt ? l.type === "agent_end" : l.type === "response" && l.id === id), resolve };
      });
      child.stdin.write(`${JSON.stringify({ ...command, id })}\n`);
      await Promise.race([done, exited]);
    }
  } finally {
    child.kill("SIGTERM");
  }
  return lines;
}
