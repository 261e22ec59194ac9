// The two backup tools under test, driven only through their command lines so
// the benchmark measures what a user would run (process start-up included).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { watcherFiles } from "../src/watch/state.js";
import { measure, type Measurement } from "./measure.js";
import { cleanEnv } from "./env.js";

/** Far above any expected step at 1 GiB; only there so a hang fails the step instead of the run. */
const STEP_TIMEOUT_MS = 20 * 60 * 1000;

export type Step = { ok: true; m: Measurement; info: Record<string, unknown> } | { ok: false; error: string; m?: Measurement };

export interface BackupTool {
  name: string;
  repoDir: string;
  init(): Promise<Step>;
  snapshot(): Promise<Step>;
  /** A snapshot unlocked by a password (scrypt): restic always works this way. */
  passwordSnapshot(): Promise<Step>;
  restore(target: string): Promise<Step>;
}

/** A `pi-guard watch` the bench started; `snapshot` is then handed to it (src/watch/socket.ts). */
export interface RunningWatcher {
  stop(): Promise<void>;
}

/** First useful line of a failed command, for the "error: ..." table cell. */
function oneLine(m: Measurement): string {
  const text = (m.stderr.trim() || m.stdout.trim()).split("\n").map((l) => l.trim()).filter(Boolean);
  const line = text.find((l) => l.startsWith("timed out")) ?? text.find((l) => /error|fatal|cannot|not /i.test(l)) ?? text[text.length - 1] ?? "";
  return `exit ${m.exitCode}${line ? `: ${line.slice(0, 160)}` : ""}`;
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The JSON object a command printed last. Handles one (maybe pretty-printed)
 * document, JSON lines as restic prints them, and a pretty object after other output.
 */
function lastJson(stdout: string): Record<string, unknown> | null {
  const whole = parseObject(stdout.trim());
  if (whole) return whole;
  const lines = stdout.trimEnd().split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i].startsWith("{")) continue;
    const v = parseObject(lines[i]) ?? parseObject(lines.slice(i).join("\n"));
    if (v) return v;
  }
  return null;
}

function step(m: Measurement, check?: (json: Record<string, unknown> | null) => string | null): Step {
  if (m.exitCode !== 0) return { ok: false, error: oneLine(m), m };
  const json = lastJson(m.stdout);
  const problem = check?.(json) ?? null;
  return problem ? { ok: false, error: problem, m } : { ok: true, m, info: json ?? {} };
}

/** Where a tool keeps its repository when not in a local folder of the work dir (bench/s3.ts). */
export interface RemoteRepo {
  /** The tool's own name for it (`s3:http://…` for restic, `s3://…` for pi-guard). */
  repository: string;
  /** A name for this repository's files in the work dir (restic's cache, pi-guard's XDG dirs, key). */
  tag: string;
  env: Record<string, string>;
}

export function resticTool(workDir: string, agentDir: string, remote?: RemoteRepo): BackupTool {
  const repoDir = join(workDir, "restic-repo");
  const tag = remote ? `-${remote.tag}` : "";
  // A real cache dir, as restic uses by default; kept in the temp area so it is cleaned up.
  const env = cleanEnv({
    RESTIC_REPOSITORY: remote?.repository ?? repoDir,
    RESTIC_PASSWORD: "bench-password",
    RESTIC_CACHE_DIR: join(workDir, `restic-cache${tag}`),
    ...remote?.env,
  });
  const restic = (args: string[], cwd?: string): Promise<Measurement> => measure("restic", args, { env, cwd, timeoutMs: STEP_TIMEOUT_MS });
  return {
    name: "restic",
    repoDir,
    init: async () => step(await restic(["init"])),
    // "." from inside the agent dir stores the tree at the snapshot root, so a
    // restore mirrors the agent dir layout just like pi-guard's does.
    snapshot: async () => step(await restic(["backup", "--json", "--host", "pi-guard-bench", "."], agentDir), (j) => (j?.snapshot_id ? null : "restic backup printed no summary")),
    passwordSnapshot() {
      return this.snapshot();
    },
    restore: async (target) => step(await restic(["restore", "latest", "--target", target])),
  };
}

export function piGuardTool(workDir: string, agentDir: string, projectRoot: string, remote?: RemoteRepo): BackupTool & { startWatch(): Promise<RunningWatcher> } {
  const repoDir = join(workDir, "pi-guard-repo");
  const tag = remote ? `-${remote.tag}` : "";
  const mainJs = join(projectRoot, "dist/cli/main.js"); // the command table bin/pi-guard.js runs (via start.js)
  const bin = join(projectRoot, "bin/pi-guard.js");
  const xdgConfig = join(workDir, `xdg-config${tag}`);
  const xdgData = join(workDir, `xdg-data${tag}`);
  // The repository is made with a password, like restic's; then a key file is added, and the steps
  // run the way pi-guard runs unattended (snapshot --init, watch): with the key file.
  const keyFile = join(workDir, `pi-guard${tag}.key`);
  // HOME is a folder of the run's own: pi-guard guards every agent it detects under HOME (a real
  // ~/.claude would join the snapshot and the restore), and the bench compares the agent dir alone.
  const base = { HOME: join(workDir, `home${tag}`), PI_GUARD_REPO: remote?.repository ?? repoDir, PI_CODING_AGENT_DIR: agentDir, XDG_CONFIG_HOME: xdgConfig, XDG_DATA_HOME: xdgData, ...remote?.env };
  const passwordEnv = cleanEnv({ ...base, PI_GUARD_PASSWORD: "bench-password" });
  const keyFileEnv = cleanEnv({ ...base, PI_GUARD_KEY_FILE: keyFile });
  const run = async (args: string[], check?: (j: Record<string, unknown> | null) => string | null, env = keyFileEnv): Promise<Step> => {
    if (!existsSync(mainJs)) return { ok: false, error: `${relative(process.cwd(), mainJs) || mainJs} missing (pi-guard CLI not built; run npm run build)` };
    // Run the bin itself, as an installed pi-guard runs: its shebang line sets the malloc tuning.
    return step(await measure(bin, args, { env, timeoutMs: STEP_TIMEOUT_MS }), check);
  };
  const snapshotCheck = (j: Record<string, unknown> | null) =>
    j && typeof j.snapshotId === "string" ? null : `snapshot --json printed no snapshotId (keys: ${Object.keys(j ?? {}).join(",") || "none"})`;
  return {
    name: "pi-guard",
    repoDir,
    init: async () => {
      mkdirSync(xdgConfig, { recursive: true });
      mkdirSync(xdgData, { recursive: true });
      const made = await run(["init", "--json"], undefined, passwordEnv);
      if (!made.ok) return made;
      const added = await run(["key", "add", "--new-key-file", keyFile, "--json"], undefined, passwordEnv);
      return added.ok ? made : added;
    },
    snapshot: () => run(["snapshot", "--json"], snapshotCheck),
    passwordSnapshot: () => run(["snapshot", "--json"], snapshotCheck, passwordEnv),
    restore: (target) => run(["restore", "latest", "--target", target, "--json"]),
    /**
     * `pi-guard watch` with the key file, ready once its first snapshot is made. It never snapshots
     * on its own during the bench (debounce 10 min, maxDelay 1 h): each snapshot is one asked for.
     */
    async startWatch(): Promise<RunningWatcher> {
      const config = join(workDir, `watch-config${tag}.json`);
      writeFileSync(config, JSON.stringify({ watch: { debounceMs: 600_000, maxDelayMs: 3_600_000, fullScanMs: 0 } }));
      const child = spawn(process.execPath, [bin, "watch", "--quiet"], { env: { ...keyFileEnv, PI_GUARD_CONFIG: config }, stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
      const exited = new Promise<void>((resolve) => child.on("close", () => resolve()));
      const state = watcherFiles(join(base.HOME, ".local", "state", "pi-guard"), agentDir).state;
      const end = Date.now() + 5 * 60_000;
      for (;;) {
        const made = (() => {
          try {
            const st = JSON.parse(readFileSync(state, "utf8")) as { pid: number; snapshots: { made: number } };
            return st.pid === child.pid && st.snapshots.made > 0;
          } catch {
            return false;
          }
        })();
        if (made) break;
        if (child.exitCode !== null || Date.now() > end) {
          child.kill("SIGKILL");
          throw new Error(`pi-guard watch did not start: ${stderr.trim().split("\n").at(-1) ?? ""}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      return {
        async stop() {
          child.kill("SIGTERM");
          await exited;
        },
      };
    },
  };
}
