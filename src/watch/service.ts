/**
 * `pi-guard service`: a systemd user unit (Linux) or a launchd agent (macOS) that keeps
 * `pi-guard watch` running. A service cannot answer a password prompt, so it runs only with a
 * key file or a password file, named in its environment; the secret itself is never written.
 * For S3 the same holds: the non-secret settings go into the service file, the AWS keys come from
 * the AWS chain (a profile) or a 0600 file of ours that the service file names. Before anything is
 * written, install runs the service's own program with only the service's environment and refuses
 * unless it opens the repository. Files we write carry SERVICE_MARKER, and uninstall removes only
 * a file that has it.
 */
import { spawnSync } from "node:child_process";
import { existsSync, promises as fs, realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Config } from "../config/config.js";
import { resolveCredentials } from "../config/credentials.js";
import { NODE_FLAGS, RUNTIME_ENV } from "../runtime.js";
import { makeDirs, syncDir, writeFully } from "../fs-safe.js";
import { RepoError } from "../repo/errors.js";
import { parseRepoLocation } from "../targets/location.js";

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
 * Settings of the AWS SDK and of pi-guard's S3 target that hold no secret (docs/TARGETS.md), carried
 * into the service when a repository or mirror is on S3; those that name files are made absolute.
 */
const S3_SETTINGS = [
  "AWS_ENDPOINT_URL",
  "AWS_ENDPOINT_URL_S3",
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  "AWS_PROFILE",
  "PI_GUARD_S3_PATH_STYLE",
  "AWS_CONFIG_FILE",
  "AWS_SHARED_CREDENTIALS_FILE",
  "AWS_ROLE_ARN",
  "AWS_ROLE_SESSION_NAME",
  "AWS_WEB_IDENTITY_TOKEN_FILE",
  "AWS_USE_FIPS_ENDPOINT",
  "AWS_USE_DUALSTACK_ENDPOINT",
  "AWS_EC2_METADATA_DISABLED",
];
const FILE_SETTINGS = new Set(["AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE"]);
/** pi-guard's own settings that change what a run does, carried when set. */
const PI_GUARD_SETTINGS = ["PI_GUARD_HOST", "PI_GUARD_RETRY_MAX", "PI_GUARD_WORKERS"];
/** The profile the saved AWS keys are filed under in our credentials file. */
export const AWS_CREDENTIALS_PROFILE = "pi-guard";

/** Where `install --save-aws-credentials` keeps the shell's AWS keys for the service (mode 0600). */
export function awsCredentialsFile(config: Pick<Config, "configDir">): string {
  return path.join(config.configDir, "aws-credentials");
}

export interface UnattendedOptions {
  /** The shell's AWS keys are saved in this file for the service (install --save-aws-credentials). */
  awsCredentialsFile?: string;
}

/**
 * The environment an unattended pi-guard needs to find what this one finds: the repository, the
 * agent dir, the credential FILE, the XDG dirs (so `status` reads the state the service writes),
 * and for S3 the endpoint, region, profile and addressing. Refuses when only a typed or
 * environment password would open the repository, and when the S3 keys are only in this
 * shell's environment (unless they are to be saved in a file): never a secret in the result.
 */
export async function unattendedEnvironment(config: Config, env: Env = process.env, opts: UnattendedOptions = {}): Promise<Record<string, string>> {
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
  for (const k of PI_GUARD_SETTINGS) if (env[k]) out[k] = env[k]!;
  if (usesS3(config)) Object.assign(out, s3Environment(env, opts));
  for (const [k, v] of Object.entries(out)) {
    if (/[\x00-\x1f\x7f]/.test(v)) throw new RepoError(`${k} contains a control character; a service file cannot carry it safely`, "usage");
  }
  return out;
}

const usesS3 = (config: Pick<Config, "repo" | "mirrors">) => [config.repo, ...config.mirrors].some((l) => parseRepoLocation(l).kind === "s3");

/** The S3 part of unattendedEnvironment. */
function s3Environment(env: Env, opts: UnattendedOptions): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of S3_SETTINGS) if (env[k]) out[k] = FILE_SETTINGS.has(k) ? path.resolve(env[k]!) : env[k]!;
  // pi-guard's S3 target uses keys from the environment only as a pair (so does the AWS SDK).
  if (!env.AWS_ACCESS_KEY_ID || !env.AWS_SECRET_ACCESS_KEY) return out;
  if (env.AWS_SESSION_TOKEN) {
    throw new RepoError(
      "this shell's AWS keys are temporary (AWS_SESSION_TOKEN is set): they would stop working under the service; use a profile the SDK can renew (AWS_PROFILE: SSO, assume-role, credential_process with an absolute path) and unset AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN",
      "usage",
    );
  }
  if (!opts.awsCredentialsFile) {
    throw new RepoError(
      "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are set only in this shell, and a service file must not hold secrets: run `pi-guard service install --save-aws-credentials` to keep them in a file of mode 0600 that the service names, or put them in ~/.aws/credentials (a profile, AWS_PROFILE) and unset them",
      "usage",
    );
  }
  // The keys win over any profile in this shell, so under the service they must too.
  out.AWS_SHARED_CREDENTIALS_FILE = opts.awsCredentialsFile;
  out.AWS_PROFILE = AWS_CREDENTIALS_PROFILE;
  return out;
}

/** The credentials file that holds this shell's AWS keys for the service (INI, as the SDK reads it). */
export function awsCredentialsText(env: Env): string {
  const id = env.AWS_ACCESS_KEY_ID ?? "";
  const secret = env.AWS_SECRET_ACCESS_KEY ?? "";
  // The SDK's INI reader cuts a value at whitespace before ; or #, and a line break would end it.
  if (!id || !secret || /[\s\x00-\x1f\x7f]/.test(id + secret)) throw new RepoError("--save-aws-credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set in this shell, without spaces or control characters", "usage");
  return [
    `# ${SERVICE_MARKER}: the AWS keys of the pi-guard service (mode 0600); \`pi-guard service uninstall\` removes it.`,
    `[${AWS_CREDENTIALS_PROFILE}]`,
    `aws_access_key_id = ${id}`,
    `aws_secret_access_key = ${secret}`,
    "",
  ].join("\n");
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
  /** Where the service starts: systemd starts a user service in HOME, launchd in the state dir. */
  workingDir: string;
  /** The AWS keys of this shell, to be saved for the service (install --save-aws-credentials). */
  awsCredentials?: { file: string; content: string };
}

export interface PlanOptions {
  platform?: ServicePlatform;
  entry?: string;
  env?: Env;
  /** Save this shell's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in awsCredentialsFile(config) for the service. */
  saveAwsCredentials?: boolean;
}

export async function planService(config: Config, opts: PlanOptions = {}): Promise<ServicePlan> {
  const platform = opts.platform ?? defaultPlatform();
  const env = opts.env ?? process.env;
  const credFile = opts.saveAwsCredentials ? awsCredentialsFile(config) : undefined;
  // Keys that would not be used are not saved: asking for it is a mistake worth naming.
  if (credFile && !usesS3(config)) throw new RepoError("--save-aws-credentials: no repository or mirror is on S3; there is nothing to save", "usage");
  const awsCredentials = credFile ? { file: credFile, content: awsCredentialsText(env) } : undefined;
  const environment = await unattendedEnvironment(config, env, { awsCredentialsFile: credFile });
  const program = programPaths(opts.entry);
  const file = serviceFile(platform, config, env);
  const common = { platform, file, program, environment, stateDir: config.stateDir, awsCredentials };
  if (platform === "darwin") {
    return { ...common, content: launchdPlist(program, environment, config.stateDir), enable: [["launchctl", "load", "-w", file]], workingDir: config.stateDir };
  }
  return {
    ...common,
    content: systemdUnit(program, environment),
    enable: [
      ["systemctl", "--user", "daemon-reload"],
      ["systemctl", "--user", "enable", "--now", "pi-guard-watch"],
    ],
    workingDir: environment.HOME ?? "/",
  };
}

/** How long install's check waits out a storage outage: it must answer soon, not in minutes. */
export const CHECK_RETRY_MS = 10_000;

/**
 * Run the service's own program (its node, node flags and script) with only the environment the
 * service file gives it (nothing inherited from this shell, as `env -i`) in `service probe` mode,
 * which opens the repository and each mirror as the watcher does when it starts. Returns why it
 * failed, or undefined. `credentialsAt` replaces the planned AWS credentials file (a dry run's copy).
 */
export function checkAsService(plan: ServicePlan, credentialsAt?: string): string | undefined {
  const env = { ...RUNTIME_ENV, ...plan.environment, ...(credentialsAt ? { AWS_SHARED_CREDENTIALS_FILE: credentialsAt } : {}) };
  const cwd = existsSync(plan.workingDir) ? plan.workingDir : "/";
  const r = spawnSync(plan.program.node, [...NODE_FLAGS, plan.program.bin, "service", "probe"], { env, cwd, encoding: "utf8", timeout: 120_000, stdio: ["ignore", "pipe", "pipe"] });
  if (r.status === 0) return undefined;
  if (r.error) return (r.error as NodeJS.ErrnoException).code === "ETIMEDOUT" ? "the check did not finish in 120 s" : r.error.message;
  const last = (r.stderr ?? "").split("\n").map((l) => l.trim()).filter(Boolean).at(-1);
  return last ? last.replace(/^pi-guard: /, "") : `it exited ${r.status ?? r.signal} without saying why`;
}

/**
 * Check the plan as the service would run, then write the AWS credentials file (if any) and the
 * service file. The credentials file is written before the check, since the check must see the file
 * the service will see, and is put back as it was when the check fails. A dry run checks with a
 * temporary copy of it and writes nothing.
 */
export async function installService(plan: ServicePlan, opts: { dryRun?: boolean } = {}): Promise<{ replaced: boolean }> {
  if ((await ownedFileState(plan.file)) === "foreign") throw new RepoError(`${plan.file} exists and was not written by pi-guard; move it away first`, "exists");
  const creds = plan.awsCredentials;
  const refuse = (reason: string) =>
    new RepoError(`the service would not open the repository with only the environment its service file gives it: ${reason}; nothing was written`, "io");
  if (opts.dryRun) {
    const dir = creds ? await fs.mkdtemp(path.join(os.tmpdir(), "pi-guard-check-")) : undefined;
    try {
      if (creds && dir) await writeOwnedFile(path.join(dir, "aws-credentials"), creds.content, 0o600);
      const reason = checkAsService(plan, dir && path.join(dir, "aws-credentials"));
      if (reason) throw refuse(reason);
    } finally {
      if (dir) await fs.rm(dir, { recursive: true, force: true });
    }
    return { replaced: false };
  }
  let previous: string | undefined;
  if (creds) {
    if ((await ownedFileState(creds.file)) === "ours") previous = await fs.readFile(creds.file, "utf8");
    await makeDirs(path.dirname(creds.file), 0o700);
    await writeOwnedFile(creds.file, creds.content, 0o600);
  }
  const reason = checkAsService(plan);
  if (reason) {
    if (creds) await (previous === undefined ? removeOwnedFile(creds.file) : writeOwnedFile(creds.file, previous, 0o600));
    throw refuse(reason);
  }
  return writeServiceFile(plan);
}

/** Whether `file` exists, and whether we wrote it. */
export async function ownedFileState(file: string): Promise<"absent" | "ours" | "foreign"> {
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "absent";
    throw new RepoError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code}`, "io");
  }
  return text.includes(SERVICE_MARKER) ? "ours" : "foreign";
}

/** Write one of our files atomically with `mode` (replacing only one of ours), then read it back to verify. */
async function writeOwnedFile(file: string, content: string, mode: number): Promise<{ replaced: boolean }> {
  const state = await ownedFileState(file);
  if (state === "foreign") throw new RepoError(`${file} exists and was not written by pi-guard; move it away first`, "exists");
  const temp = `${file}.tmp-${process.pid}`;
  // A temp file left by a crash keeps its mode when opened again: start from a new one.
  await fs.rm(temp, { force: true });
  const handle = await fs.open(temp, "wx", mode);
  try {
    await writeFully(handle, Buffer.from(content), 0);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(temp, file);
  await syncDir(path.dirname(file));
  if ((await fs.readFile(file, "utf8")) !== content) throw new RepoError(`${file} does not hold what was written`, "io");
  return { replaced: state === "ours" };
}

/** Write the service file (and the folders it and the service need). */
export async function writeServiceFile(plan: ServicePlan): Promise<{ replaced: boolean }> {
  await makeDirs(path.dirname(plan.file), 0o755);
  // The service's working directory and (launchd) log folder must exist before it starts.
  await makeDirs(plan.stateDir, 0o700);
  return writeOwnedFile(plan.file, plan.content, 0o644);
}

/** Remove a file of ours; one without the marker is left alone. */
export async function removeOwnedFile(file: string): Promise<"removed" | "absent"> {
  const state = await ownedFileState(file);
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
