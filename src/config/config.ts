import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { RepoError } from "../repo/errors.js";
import { insideOf, isInside } from "./inside.js";
import { bool, either, fields, list, member, num, optional, ShapeProblem, str, withDefault } from "../repo/shape.js";
import { normalizeRepoLocation, parseRepoLocation } from "../targets/location.js";
import { readSessionsLink, type SessionsLink, sessionsDir as piSessionsDir } from "../agents/pi/paths.js";
import { DEFAULT_EXCLUDES, DEFAULT_FULL_READ_INTERVAL_MS, type SourceFilter, type SourceRoot } from "../snapshot/sources.js";
import { scheduleProblems } from "../watch/schedule.js";
import { DEFAULT_RETRY_MAX_MS } from "../targets/retry-report.js";
import { parseDuration } from "../watch/health.js";
import { chooseAgents, type AgentChoice, type AgentsSetting } from "../agents/roots.js";
import type { AgentName } from "../agents/types.js";

/** The names the config file's `agents` accepts (every agent the registry may hold). */
const AGENT_NAMES = ["pi", "claude", "codex", "gemini", "opencode"] as const satisfies readonly AgentName[];

type Env = Record<string, string | undefined>;

const duration = optional(str({ test: (t) => parseDuration(t) !== undefined, message: "must be a duration such as 90s, 15m, 1h or 2d" }));
const count = (min: number, max?: number) => optional(num({ int: true, min, max }));

/** The config file's shape (docs: README "Configuration"); every object is strict: an unknown key is an error. */
function configFileShape() {
  return fields({
    repo: optional(str({ min: 1 })),
    mirrors: optional(list(str({ min: 1 }))),
    keyFile: optional(str({ min: 1 })),
    passwordFile: optional(str({ min: 1 })),
    agentDir: optional(str({ min: 1 })),
    sources: withDefault(fields({ include: withDefault(list(str()), () => []), exclude: withDefault(list(str()), () => []) }), () => ({ include: [], exclude: [] })),
    watch: optional(
      fields({
        debounceMs: count(0, 600_000),
        maxDelayMs: count(0, 3_600_000),
        remoteBatchMs: count(0, 86_400_000),
        suspectLoss: optional(fields({ minFiles: count(1), fraction: optional(num({ above: 0, max: 1 })) })),
        log: optional(fields({ maxBytes: count(4096), keep: count(1, 100) })),
        fullScanMs: count(0, 86_400_000),
      }),
    ),
    retention: optional(
      fields({
        keepLast: count(0),
        keepWithin: optional(str({ min: 1 })),
        keepHourly: count(0),
        keepDaily: count(0),
        keepWeekly: count(0),
        keepMonthly: count(0),
        keepYearly: count(0),
        keepTags: optional(list(str({ min: 1 }))),
      }),
    ),
    schedules: optional(list(fields({ job: member(SCHEDULED_JOBS), cron: str({ min: 1 }) }))),
    retry: optional(fields({ maxMs: count(0, MAX_RETRY_MS) })),
    // Health bounds and alerts (docs/OPERATIONS.md §3): durations are written like --max-age.
    health: optional(fields({ maxAge: duration, mirrorMaxLag: duration, stuckAfter: duration })),
    alerts: optional(
      fields({
        command: either(list(str({ min: 1, max: 4096 }), { min: 1, max: 64 }), str({ min: 1, max: 4096 }), "expected a command: a string or a list of strings"),
        timeoutMs: count(100, 600_000),
      }),
    ),
    // Which agents are guarded (src/agents/roots.ts chooseAgents): a list, or settings per agent.
    agents: optional(
      either(
        list(member(AGENT_NAMES), { max: AGENT_NAMES.length }),
        fields(Object.fromEntries(AGENT_NAMES.map((n) => [n, optional(fields({ enabled: optional(bool), dir: optional(str({ min: 1 })) }))]))),
        "expected a list of agent names or an object of agent settings",
      ),
    ),
    snapshot: optional(
      fields({
        // At most a week: a longer window is trust without a bound worth the name.
        fullReadIntervalMs: count(0, 7 * 86_400_000),
      }),
    ),
  });
}

/** What a schedule can run: `retention` is forget by the configured policy, then prune. */
export const SCHEDULED_JOBS = ["snapshot", "check", "check-read-data", "forget", "prune", "retention"] as const;
export type ScheduledJob = (typeof SCHEDULED_JOBS)[number];

/** Retention policy, restic's --keep-* options (docs: `pi-guard forget --help`). */
export interface RetentionPolicy {
  keepLast?: number;
  /** A duration such as "1h", "2d", "1y2m": keep everything newer than the newest snapshot minus this. */
  keepWithin?: string;
  keepHourly?: number;
  keepDaily?: number;
  keepWeekly?: number;
  keepMonthly?: number;
  keepYearly?: number;
  keepTags?: string[];
}

/** Every snapshot for 1 h, then hourly for 2 days, daily for 30 days, weekly for 6 months. */
export const DEFAULT_RETENTION: RetentionPolicy = { keepWithin: "1h", keepHourly: 48, keepDaily: 30, keepWeekly: 26 };

export interface Schedule {
  job: ScheduledJob;
  /** A five-field (or six, with seconds) cron expression, as node-cron reads it. */
  cron: string;
}

/** Retention daily at 03:17, a full read check weekly on Sunday at 04:41 (odd minutes spread load). */
export const DEFAULT_SCHEDULES: Schedule[] = [
  { job: "retention", cron: "17 3 * * *" },
  { job: "check-read-data", cron: "41 4 * * 0" },
];

export interface WatchSettings {
  /** Quiet time after the last change before a snapshot (default 250). */
  debounceMs: number;
  /** A snapshot is taken at most this long after the first pending change, even if changes keep coming (default 1000). */
  maxDelayMs: number;
  /** A snapshot that would drop at least `fraction` of the files, and at least `minFiles`, is a suspected loss. */
  suspectLoss: { minFiles: number; fraction: number };
  /** The JSON-lines log is rotated at maxBytes; `keep` old files are kept. */
  log: { maxBytes: number; keep: number };
  /**
   * Remote storage (an S3 repository, or a mirror) gets at most one batch of changes per this
   * interval (default 30000), so requests per day stay bounded; a local repository is not batched.
   */
  remoteBatchMs: number;
  /**
   * Every this often (default 300000; 0: never) the roots are compared with the last snapshot by a
   * stat walk, as a backstop for a change chokidar did not report (docs/WATCH.md).
   */
  fullScanMs: number;
}

// Together: no change waits more than about a second, and a burst of writes (one pi turn appends
// several entries within milliseconds) becomes one snapshot, not one per line.
export const DEFAULT_WATCH: WatchSettings = {
  debounceMs: 250,
  maxDelayMs: 1000,
  suspectLoss: { minFiles: 3, fraction: 0.5 },
  log: { maxBytes: 10 * 1024 * 1024, keep: 3 },
  remoteBatchMs: 30_000,
  fullScanMs: 300_000,
};

/** When pi-guard counts as unhealthy, beside a suspected loss (src/watch/health.ts). */
export interface HealthSettings {
  /** The last good snapshot may be this old (default: no bound; `status --max-age` gives one per run). */
  maxAgeMs: number | null;
  /** A mirror may lack a snapshot for this long (default 15 min). */
  mirrorMaxLagMs: number;
  /** The watcher may fail, or hold unsaved changes, this long (default the larger of 2 min and 2 × watch.remoteBatchMs). */
  stuckAfterMs: number;
}

export const DEFAULT_MIRROR_MAX_LAG_MS = 15 * 60_000;

/** A command run on each change of health (src/watch/alert.ts): argv without a shell, or a string for /bin/sh -c. */
export interface AlertSettings {
  command: string[] | string;
  /** The command is killed after this long (default 10000). */
  timeoutMs: number;
}

export interface SnapshotSettings {
  /**
   * A grown file whose last full read is older than this is read in full, not from its tail: the
   * bound on how long a rewrite in place before the tail can go unseen (docs/FORMAT.md §10).
   * Default one hour; 0 reads every grown file in full.
   */
  fullReadIntervalMs: number;
}

export const DEFAULT_SNAPSHOT: SnapshotSettings = { fullReadIntervalMs: DEFAULT_FULL_READ_INTERVAL_MS };

export type ConfigFileShape = ReturnType<ReturnType<typeof configFileShape>>;

/** Everything a command needs to know about where things are, resolved once. */
export interface Config {
  configDir: string;
  dataDir: string;
  /** $XDG_STATE_HOME/pi-guard: the watcher's state file and log. */
  stateDir: string;
  configFile: string;
  /** An absolute local path, or s3://bucket/prefix (src/targets/location.ts). */
  repo: string;
  /**
   * Further copies of the same repository (same config and keys, so the same blob ids), in the
   * form `repo` has; every snapshot made in `repo` is shipped to each. Empty when none.
   */
  mirrors: string[];
  keyFile: string;
  /** Where keyFile was named (flag, environment, config file); undefined for the default path. */
  keyFileSource?: string;
  passwordFile?: string;
  password?: string;
  passwordSource?: string;
  agentDir: string;
  roots: SourceRoot[];
  filter: SourceFilter;
  watch: WatchSettings;
  retention: RetentionPolicy;
  schedules: Schedule[];
  retry: RetrySettings;
  health: HealthSettings;
  /** null when no alert command is configured. */
  alerts: AlertSettings | null;
  snapshot: SnapshotSettings;
  /** When the agent dir's sessions dir is a symlink: where it points, and whether it is a root. */
  sessionsLink?: SessionsLink;
  /** Every registered agent, where it is and whether it is guarded (src/agents/roots.ts). */
  agents: AgentChoice[];
  /** Which agent each root of `roots` belongs to, by root name (the snapshot manifest's `agents`). */
  rootAgents: Record<string, string>;
}

export interface ConfigFlags {
  repo?: string;
  passwordFile?: string;
  keyFile?: string;
  agentDir?: string;
  configFile?: string;
}

/** Snapshot root of pi-guard's own metadata (<dataDir>/meta); never listed as sessions. */
export const META_ROOT_NAME = "pi-guard-meta";

export function xdgDirs(env: Env = process.env): { configDir: string; dataDir: string; stateDir: string } {
  const home = env.HOME || os.homedir();
  const configHome = env.XDG_CONFIG_HOME || path.join(home, ".config");
  const dataHome = env.XDG_DATA_HOME || path.join(home, ".local", "share");
  const stateHome = env.XDG_STATE_HOME || path.join(home, ".local", "state");
  return { configDir: path.join(configHome, "pi-guard"), dataDir: path.join(dataHome, "pi-guard"), stateDir: path.join(stateHome, "pi-guard") };
}

function readConfigFile(file: string): ConfigFileShape {
  if (!existsSync(file)) return { sources: { include: [], exclude: [] } };
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new RepoError(`config file ${file} is not valid JSON: ${(err as Error).message}`, "usage");
  }
  let parsed: ConfigFileShape;
  try {
    parsed = configFileShape()(raw, []);
  } catch (err) {
    if (!(err instanceof ShapeProblem)) throw err;
    throw new RepoError(`config file ${file}: ${err.describe("(top level)")}`, "usage");
  }
  const badSchedule = parsed.schedules ? scheduleProblems(parsed.schedules)[0] : undefined;
  if (badSchedule) throw new RepoError(`config file ${file}: ${badSchedule}`, "usage");
  return parsed;
}

export { insideOf, isInside };

/** flags > environment > config file > XDG defaults. */
export function loadConfig(flags: ConfigFlags = {}, env: Env = process.env): Config {
  const { configDir, dataDir, stateDir } = xdgDirs(env);
  const configFile = flags.configFile ?? env.PI_GUARD_CONFIG ?? path.join(configDir, "config.json");
  const file = readConfigFile(configFile);
  const home = env.HOME || os.homedir();
  const repo = flags.repo ?? env.PI_GUARD_REPO ?? file.repo ?? path.join(dataDir, "repo");
  // Every agent is located by its adapter; the guarded ones' roots are what a snapshot takes.
  const agents = chooseAgents({ env, home, setting: file.agents as AgentsSetting | undefined, piDir: file.agentDir, flagDir: flags.agentDir, configFile });
  const pi = agents.find((a) => a.location.agent === "pi")!.location;
  const agentDir = pi.dir;
  const { roots, rootAgents } = agentRoots(agents, configFile);
  const sessions = piSessionsDir({ env, home, agentDir });
  const sessionsLink = isInside(sessions.dir, agentDir) ? readSessionsLink(sessions.dir, agentDir) : undefined;
  // pi-guard's own metadata (session tags) is backed up with everything else.
  roots.push({ name: META_ROOT_NAME, path: path.join(dataDir, "meta") });
  const passwordFile = flags.passwordFile ?? env.PI_GUARD_PASSWORD_FILE ?? file.passwordFile;
  const watch: WatchSettings = {
    ...DEFAULT_WATCH,
    ...definedOnly(file.watch ?? {}),
    suspectLoss: { ...DEFAULT_WATCH.suspectLoss, ...definedOnly(file.watch?.suspectLoss ?? {}) },
    log: { ...DEFAULT_WATCH.log, ...definedOnly(file.watch?.log ?? {}) },
  };
  return {
    configDir,
    dataDir,
    stateDir,
    configFile,
    repo: normalizeRepoLocation(repo),
    mirrors: (file.mirrors ?? []).map((m) => mirrorLocation(m, configFile)),
    keyFile: path.resolve(flags.keyFile ?? env.PI_GUARD_KEY_FILE ?? file.keyFile ?? path.join(configDir, "key")),
    keyFileSource: flags.keyFile ? "--key-file" : env.PI_GUARD_KEY_FILE ? "PI_GUARD_KEY_FILE" : file.keyFile ? `config file ${configFile}` : undefined,
    passwordFile,
    password: env.PI_GUARD_PASSWORD,
    passwordSource: passwordFile ? `password file ${passwordFile}` : env.PI_GUARD_PASSWORD !== undefined ? "PI_GUARD_PASSWORD" : undefined,
    agentDir,
    roots,
    filter: { include: file.sources.include, exclude: [...DEFAULT_EXCLUDES, ...file.sources.exclude] },
    watch,
    retention: file.retention ? definedOnly(file.retention) : { ...DEFAULT_RETENTION },
    schedules: file.schedules ?? DEFAULT_SCHEDULES.map((s) => ({ ...s })),
    retry: retrySettings(env, file.retry),
    health: healthSettings(file.health, watch),
    alerts: file.alerts ? { command: file.alerts.command, timeoutMs: file.alerts.timeoutMs ?? 10_000 } : null,
    snapshot: { ...DEFAULT_SNAPSHOT, ...definedOnly(file.snapshot ?? {}) },
    ...(sessionsLink ? { sessionsLink } : {}),
    agents,
    rootAgents,
  };
}

/** The guarded agents' roots as plain {name, path} (snapshots compare roots as JSON), and their agents by root name. */
function agentRoots(agents: AgentChoice[], configFile: string): { roots: SourceRoot[]; rootAgents: Record<string, string> } {
  const roots: SourceRoot[] = [];
  const rootAgents: Record<string, string> = {};
  for (const a of agents.filter((c) => c.guarded)) {
    for (const r of a.location.roots) {
      if (r.name === META_ROOT_NAME || rootAgents[r.name] !== undefined) {
        throw new RepoError(`config file ${configFile}: agents ${rootAgents[r.name] ?? "pi-guard"} and ${a.location.agent} both name a root "${r.name}"`, "usage");
      }
      roots.push({ name: r.name, path: r.path });
      rootAgents[r.name] = r.agent;
    }
  }
  return { roots, rootAgents };
}

function healthSettings(h: ConfigFileShape["health"], watch: WatchSettings): HealthSettings {
  const ms = (t: string | undefined) => (t === undefined ? undefined : parseDuration(t));
  return {
    maxAgeMs: ms(h?.maxAge) ?? null,
    mirrorMaxLagMs: ms(h?.mirrorMaxLag) ?? DEFAULT_MIRROR_MAX_LAG_MS,
    // Remote batching holds changes back on purpose: the default bound leaves room for two batches.
    stuckAfterMs: ms(h?.stuckAfter) ?? Math.max(120_000, 2 * watch.remoteBatchMs),
  };
}

// Retries of remote storage (src/targets/retry.ts): how long an S3 request may keep failing with
// a transient error (refused or reset connections, timeouts, 5xx, throttling) before a command
// gives up. PI_GUARD_RETRY_MAX (a duration: 30s, 5m, 0 for no retries) > "retry": {"maxMs"} > 5 min.

export interface RetrySettings {
  maxMs: number;
}

const MAX_RETRY_MS = 86_400_000;

export function retrySettings(env: Env, file: { maxMs?: number } = {}): RetrySettings {
  const text = env.PI_GUARD_RETRY_MAX?.trim();
  if (!text) return { maxMs: file.maxMs ?? DEFAULT_RETRY_MAX_MS };
  const ms = text === "0" ? 0 : Math.round(parseDuration(text) ?? NaN);
  if (!(ms >= 0 && ms <= MAX_RETRY_MS)) {
    throw new RepoError(`PI_GUARD_RETRY_MAX must be a duration up to 24h such as 30s, 5m or 0 (no retries), not "${env.PI_GUARD_RETRY_MAX}"`, "usage");
  }
  return { maxMs: ms };
}

/** A mirror holds a copy of pi-guard's own repository (docs/FORMAT.md §14), which a restic repository cannot. */
function mirrorLocation(mirror: string, configFile: string): string {
  if (parseRepoLocation(mirror).kind === "restic") {
    throw new RepoError(`config file ${configFile}: mirrors: "${mirror}" is a restic repository; a mirror is a copy of pi-guard's own repository (s3://bucket/prefix or a local path)`, "usage");
  }
  return normalizeRepoLocation(mirror);
}

function definedOnly<T extends object>(o: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as { [K in keyof T]: Exclude<T[K], undefined> };
}
