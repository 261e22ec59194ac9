// Runs a command and measures wall time and peak RSS of its whole process tree
// by polling /proc, so no extra package (GNU time) is needed on CI machines.
import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";

export interface Measurement {
  ms: number;
  peakRssMB: number;
  stdout: string;
  stderr: string;
  exitCode: number;
}

export interface MeasureOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  pollMs?: number;
  /** Kill the command's process group after this long, so a hung tool cannot stall the run. */
  timeoutMs?: number;
}

/** Keep only the tail of big outputs (restic --json prints many status lines). */
const MAX_CAPTURE = 8 * 1024 * 1024;

function readStatusKb(pid: number): { rss: number; hwm: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/status`, "utf8");
    const rss = /VmRSS:\s+(\d+)/.exec(text);
    const hwm = /VmHWM:\s+(\d+)/.exec(text);
    return rss && hwm ? { rss: Number(rss[1]), hwm: Number(hwm[1]) } : null;
  } catch {
    return null; // the process exited between listing and reading
  }
}

/**
 * The pid and all its descendants. /proc/<pid>/task/<tid>/children needs
 * CONFIG_PROC_CHILDREN, which some kernels lack, so read each process's
 * parent from /proc/<pid>/stat instead (a machine runs few enough processes).
 */
function processTree(root: number): number[] {
  const childrenOf = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // exited while we looked
    }
    // The command name may contain spaces or ")", so parse after the last ")".
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    const list = childrenOf.get(ppid) ?? [];
    list.push(Number(name));
    childrenOf.set(ppid, list);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.pop()!;
    out.push(pid);
    queue.push(...(childrenOf.get(pid) ?? []));
  }
  return out;
}

export function measure(command: string, args: string[], opts: MeasureOptions = {}): Promise<Measurement> {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    // detached: its own process group, so a timeout can stop the tool and its children together.
    const child = spawn(command, args, { env: opts.env ?? process.env, cwd: opts.cwd, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout = (stdout + d.toString()).slice(-MAX_CAPTURE);
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-MAX_CAPTURE);
    });
    // Peak = the larger of (a) the biggest tree-wide RSS sum seen in a poll and
    // (b) the biggest single-process VmHWM, which the kernel keeps exactly, so a
    // one-process tool's peak is exact even if it fell between two polls.
    let peakKb = 0;
    const sample = (): void => {
      if (child.pid === undefined) return;
      let sum = 0;
      for (const pid of processTree(child.pid)) {
        const s = readStatusKb(pid);
        if (!s) continue;
        sum += s.rss;
        peakKb = Math.max(peakKb, s.hwm);
      }
      peakKb = Math.max(peakKb, sum);
    };
    sample();
    const timer = setInterval(sample, opts.pollMs ?? 20);
    let done = false;
    let timedOut = false;
    const killer = opts.timeoutMs
      ? setTimeout(() => {
          timedOut = true;
          try {
            if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
          } catch {
            // already gone
          }
        }, opts.timeoutMs)
      : undefined;
    const finish = (exitCode: number): void => {
      if (done) return;
      done = true;
      clearInterval(timer);
      clearTimeout(killer);
      if (timedOut) {
        stderr += `\ntimed out after ${((opts.timeoutMs ?? 0) / 1000).toFixed(0)} s`;
        exitCode = 124;
      }
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      resolve({ ms, peakRssMB: peakKb / 1024, stdout, stderr, exitCode });
    };
    child.on("error", (err) => {
      stderr += err.message;
      finish(127);
    });
    child.on("close", (code, signal) => finish(code ?? (signal ? 128 : 1)));
  });
}
