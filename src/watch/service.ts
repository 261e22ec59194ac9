/**
 * `pi-guard service`: a systemd user unit (Linux) or a launchd agent (macOS) that keeps
 * `pi-guard watch` running. A service cannot answer a password prompt, so it runs only with a
 * key file or a password file, named in its environment; the secret itself is never written.
 * Files we write carry SERVICE_MARKER, and uninstall removes only a file that has it.
 */
import { spawnSync } from "node:child_process";
import { existsSync, promises as fs, realpathSync } from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import { resolveCredentials } from "../config/credentials.js";
import { NODE_FLAGS, RUNTIME_ENV } from "../runtime.js";
import { makeDirs, syncDir, writeFully } from "../fs-safe.js";
import { RepoError } from "../repo/errors.js";

export type ServicePlatform = "linux" | "darwin";
export const SERVICE_MARKER = "managed by pi-guard service install";
export const SYSTEMD_UNIT = "pi-guard-watch.service";
export const LAUNCHD_LABEL = "dev.pi-guard.watch";

type Env = Record<string, string | undefined>;

export function defaultPlatform(): ServicePlatform {
  return process.platform === "darwin" ? "darwin" : "linux";
}

/** Where the service file goes: systemd reads $XDG_CONFIG_HOME/systemd/user, launchd ~/Library/LaunchAgents. */
export function serviceFile(platform: ServicePlatform, config: Config, env: Env = process.env): string {
  const home = env.HOME || path.dirname(path.dirname(config.configDir));
  if (platform === "darwin") return path.join(home, "Library", "LaunchAgents", `${LAUNCHD_LABEL}.plist`);
  return path.join(path.dirname(config.configDir), "systemd", "user", SYSTEMD_UNIT);
}

/** The program to run: this node, and the pi-guard entry script it was started with (symlinks resolved). */
export function programPaths(entry: string | undefined = process.argv[1]): { node: string; bin: string } {
  if (!entry) throw new RepoError("cannot tell where the pi-guard program is (no script path)", "usage");
  let bin: string;
  try {
    bin = realpathSync(entry);
  } catch {
    throw new RepoError(`cannot find the pi-guard program at ${entry}`, "not-found");
  }
  return { node: process.execPath, bin };
}

/**
 * The environment an unattended pi-guard needs to find what this one finds: the repository, the
 * agent dir, the credential FILE, and the XDG dirs (so `status` reads the state the service
 * writes). Refuses when only a typed or environment password would open the repository.
 */
export async function unattendedEnvironment(config: Config, env: Env = process.env): Promise<Record<string, string>> {
  const cred = await resolveCredentials(config);
  const out: Record<string, string> = { PI_GUARD_REPO: config.repo, PI_CODING_AGENT_DIR: config.agentDir };
  if (config.passwordFile) out.PI_GUARD_PASSWORD_FILE = path.resolve(config.passwordFile);
  else if (cred?.kind === "keyfile") out.PI_GUARD_KEY_FILE = config.keyFile;
  else if (cred?.kind === "password") {
    throw new RepoError(
      `the password comes from ${cred.source}, which an unattended service cannot have: put it in a file (mode 0600) and set PI_GUARD_PASSWORD_FILE, or add a key file (pi-guard key add --new-key-file ~/.config/pi-guard/key)`,
      "usage",
    );
  } else {
    throw new RepoError(
      `no key file or password file: an unattended service cannot answer a password prompt; add a key file (pi-guard key add --new-key-file ${config.keyFile}) or set PI_GUARD_PASSWORD_FILE`,
      "no-password",
    );
  }
  out.XDG_CONFIG_HOME = path.dirname(config.configDir);
  out.XDG_DATA_HOME = path.dirname(config.dataDir);
  out.XDG_STATE_HOME = path.dirname(config.stateDir);
  if (existsSync(config.configFile)) out.PI_GUARD_CONFIG = config.configFile;
  if (env.PI_CODING_AGENT_SESSION_DIR) out.PI_CODING_AGENT_SESSION_DIR = path.resolve(env.PI_CODING_AGENT_SESSION_DIR);
  if (env.HOME) out.HOME = env.HOME;
  for (const [k, v] of Object.entries(out)) {
    if (/[\x00-\x1f\x7f]/.test(v)) throw new RepoError(`${k} contains a control character; a service file cannot carry it safely`, "usage");
  }
  return out;
}

/**
 * A systemd word: quoted, with \, " and % (specifiers) escaped. $ is expanded only in the
 * arguments of ExecStart, not in its program path nor in Environment=, so only those escape it.
 */
function systemdQuote(s: string, dollar = false): string {
  const q = s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/%/g, "%%");
  return `"${dollar ? q.replace(/\$/g, "$$$$") : q}"`;
}

export function systemdUnit(program: { node: string; bin: string }, env: Record<string, string>): string {
  const envLines = Object.entries({ ...RUNTIME_ENV, ...env }).map(([k, v]) => `Environment=${systemdQuote(`${k}=${v}`)}`);
  return [
    `# ${SERVICE_MARKER}; \`pi-guard service uninstall\` removes it.`,
    "[Unit]",
    "Description=pi-guard watch: continuous backup of the pi agent dir",
    "",
    "[Service]",
    "Type=simple",
    `ExecStart=${[systemdQuote(program.node), ...NODE_FLAGS.map((f) => systemdQuote(f, true)), systemdQuote(program.bin, true)].join(" ")} watch`,
    "Restart=on-failure",
    "RestartSec=5",
    // watch flushes pending changes on SIGTERM within 5 s.
    "TimeoutStopSec=15",
    ...envLines,
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
}

const xml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

export function launchdPlist(program: { node: string; bin: string }, env: Record<string, string>, stateDir: string): string {
  const str = (s: string) => `<string>${xml(s)}</string>`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    `<!-- ${SERVICE_MARKER}; pi-guard service uninstall removes it. -->`,
    '<plist version="1.0">',
    "<dict>",
    `  <key>Label</key>${str(LAUNCHD_LABEL)}`,
    "  <key>ProgramArguments</key>",
    "  <array>",
    `    ${str(program.node)}`,
    ...NODE_FLAGS.map((f) => `    ${str(f)}`),
    `    ${str(program.bin)}`,
    `    ${str("watch")}`,
    "  </array>",
    "  <key>EnvironmentVariables</key>",
    "  <dict>",
    ...Object.entries({ ...RUNTIME_ENV, ...env }).map(([k, v]) => `    <key>${xml(k)}</key>${str(v)}`),
    "  </dict>",
    `  <key>WorkingDirectory</key>${str(stateDir)}`,
    "  <key>RunAtLoad</key><true/>",
    // Restart when it fails, not after a clean stop.
    "  <key>KeepAlive</key>",
    "  <dict><key>SuccessfulExit</key><false/></dict>",
    "  <key>ThrottleInterval</key><integer>5</integer>",
    "  <key>ProcessType</key>" + str("Background"),
    `  <key>StandardOutPath</key>${str(path.join(stateDir, "service.out.log"))}`,
    `  <key>StandardErrorPath</key>${str(path.join(stateDir, "service.err.log"))}`,
    "</dict>",
    "</plist>",
    "",
  ].join("\n");
}

export interface ServicePlan {
  platform: ServicePlatform;
  file: string;
  content: string;
  /** The commands that load and start it. */
  enable: string[][];
  program: { node: string; bin: string };
  environment: Record<string, string>;
  stateDir: string;
}

export async function planService(config: Config, opts: { platform?: ServicePlatform; entry?: string; env?: Env } = {}): Promise<ServicePlan> {
  const platform = opts.platform ?? defaultPlatform();
  const env = opts.env ?? process.env;
  const environment = await unattendedEnvironment(config, env);
  const program = programPaths(opts.entry);
  const file = serviceFile(platform, config, env);
  if (platform === "darwin") {
    return {
      platform,
      file,
      content: launchdPlist(program, environment, config.stateDir),
      enable: [["launchctl", "load", "-w", file]],
      program,
      environment,
      stateDir: config.stateDir,
    };
  }
  return {
    platform,
    file,
    content: systemdUnit(program, environment),
    enable: [
      ["systemctl", "--user", "daemon-reload"],
      ["systemctl", "--user", "enable", "--now", "pi-guard-watch"],
    ],
    program,
    environment,
    stateDir: config.stateDir,
  };
}

/** Whether `file` exists, and whether we wrote it. */
export async function serviceFileState(file: string): Promise<"absent" | "ours" | "foreign"> {
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "absent";
    throw new RepoError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code}`, "io");
  }
  return text.includes(SERVICE_MARKER) ? "ours" : "foreign";
}

/** Write the service file atomically (replacing only one of ours), then read it back to verify. */
export async function writeServiceFile(plan: ServicePlan): Promise<{ replaced: boolean }> {
  const state = await serviceFileState(plan.file);
  if (state === "foreign") throw new RepoError(`${plan.file} exists and was not written by pi-guard; move it away first`, "exists");
  await makeDirs(path.dirname(plan.file), 0o755);
  // The service's working directory and (launchd) log folder must exist before it starts.
  await makeDirs(plan.stateDir, 0o700);
  const temp = `${plan.file}.tmp-${process.pid}`;
  const handle = await fs.open(temp, "w", 0o644);
  try {
    await writeFully(handle, Buffer.from(plan.content), 0);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(temp, plan.file);
  await syncDir(path.dirname(plan.file));
  if ((await fs.readFile(plan.file, "utf8")) !== plan.content) throw new RepoError(`${plan.file} does not hold what was written`, "io");
  return { replaced: state === "ours" };
}

export async function removeServiceFile(file: string): Promise<"removed" | "absent"> {
  const state = await serviceFileState(file);
  if (state === "absent") return "absent";
  if (state === "foreign") throw new RepoError(`${file} was not written by pi-guard (no "${SERVICE_MARKER}" line); it is left alone`, "exists");
  await fs.unlink(file);
  await syncDir(path.dirname(file));
  return "removed";
}

/** Is `cmd` on PATH? */
export function haveCommand(cmd: string, env: Env = process.env): boolean {
  return (env.PATH ?? "").split(path.delimiter).some((dir) => dir && existsSync(path.join(dir, cmd)));
}

export interface CommandRun {
  command: string;
  ok: boolean;
  output: string;
}

/** Run commands in order, stopping at the first failure. */
export function runCommands(commands: string[][]): CommandRun[] {
  const runs: CommandRun[] = [];
  for (const [cmd, ...args] of commands) {
    const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 30_000 });
    const output = `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? r.error.message : ""}`.trim();
    runs.push({ command: [cmd, ...args].join(" "), ok: r.status === 0, output });
    if (r.status !== 0) break;
  }
  return runs;
}

/** `systemctl --user is-active pi-guard-watch` (or launchctl list), when the tool exists. */
export function serviceActivity(platform: ServicePlatform): { tool: string; available: boolean; state?: string } {
  const tool = platform === "darwin" ? "launchctl" : "systemctl";
  if (!haveCommand(tool)) return { tool, available: false };
  const args = platform === "darwin" ? ["list", LAUNCHD_LABEL] : ["--user", "is-active", "pi-guard-watch"];
  const r = spawnSync(tool, args, { encoding: "utf8", timeout: 5_000 });
  const text = `${r.stdout ?? ""}${r.stderr ?? ""}`.trim().split("\n")[0] ?? "";
  if (platform === "darwin") return { tool, available: true, state: r.status === 0 ? "loaded" : "not loaded" };
  return { tool, available: true, state: text || (r.status === 0 ? "active" : `exit ${r.status}`) };
}
