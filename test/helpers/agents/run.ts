// What the agent runners share: an agent CLI run as an async child (the fake model server answers
// from this process's event loop), in the sandbox's HOME/XDG dirs plus a TMPDIR of its own, under a
// hard timeout, with its output kept for the failure message; and the files it wrote.

import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import type { Sandbox } from "../tmp.js";

export interface AgentProcess {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The sandbox's agent environment: its HOME and XDG dirs, a TMPDIR of this agent's own, nothing from the test's env but PATH. */
export function agentEnv(sb: Sandbox, agent: string, extra: Record<string, string> = {}): Record<string, string> {
  const tmp = path.join(sb.root, `tmp-${agent}`);
  const cache = path.join(sb.root, "xdg-cache");
  const state = path.join(sb.root, "xdg-state");
  for (const d of [tmp, cache, state]) mkdirSync(d, { recursive: true });
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: sb.home,
    XDG_CONFIG_HOME: sb.configHome,
    XDG_DATA_HOME: sb.dataHome,
    XDG_CACHE_HOME: cache,
    XDG_STATE_HOME: state,
    TMPDIR: tmp,
    NO_COLOR: "1",
    TERM: "dumb",
    ...extra,
  };
}

/** Runs a command to its end or to `timeoutMs` (then SIGKILL); throws with its output unless it exits 0 (or `allowFail`). */
export function runAgentProcess(
  cmd: string,
  args: readonly string[],
  opts: { cwd: string; env: Record<string, string>; timeoutMs: number; what: string; allowFail?: boolean },
): Promise<AgentProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, opts.timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`${opts.what}: ${err.message}`));
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const out: AgentProcess = { code, signal, stdout, stderr };
      const tail = (s: string) => (s.length > 4000 ? "…" + s.slice(-4000) : s);
      if (timedOut) return reject(new Error(`${opts.what}: no exit after ${opts.timeoutMs} ms (killed)\nstdout: ${tail(stdout)}\nstderr: ${tail(stderr)}`));
      if (code !== 0 && !opts.allowFail) return reject(new Error(`${opts.what}: exit ${code ?? signal}\nstdout: ${tail(stdout)}\nstderr: ${tail(stderr)}`));
      resolve(out);
    });
  });
}

/** Every regular file under `dir` (absolute paths, sorted) whose mtime is at or after `sinceMs`. */
export function filesWrittenSince(dir: string, sinceMs: number): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = path.join(d, n);
      const st = statSync(p, { throwIfNoEntry: false });
      if (st?.isDirectory()) walk(p);
      else if (st?.isFile() && st.mtimeMs >= sinceMs) out.push(p);
    }
  };
  walk(dir);
  return out.sort();
}

/** JSON lines of an agent's stdout (non-JSON lines are skipped: agents print banners). */
export function jsonLines(stdout: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of stdout.split("\n")) {
    const t = line.trim();
    if (!t.startsWith("{")) continue;
    try {
      out.push(JSON.parse(t) as Record<string, unknown>);
    } catch {
      // a banner or a torn line
    }
  }
  return out;
}
