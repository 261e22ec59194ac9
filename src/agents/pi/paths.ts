// Where pi keeps its data (pi 0.73.1 config.js, main.js, settings-manager.js). Read-only:
// settings.json is parsed but never created or rewritten.

import { lstatSync, readFileSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";

export const ENV_AGENT_DIR = "PI_CODING_AGENT_DIR";
export const ENV_SESSION_DIR = "PI_CODING_AGENT_SESSION_DIR";

type Env = Record<string, string | undefined>;

/** pi expands only "~" and "~/..." (not ~user). */
export function expandTilde(path: string, home: string = homedir()): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return home + path.slice(1);
  return path;
}

/** `$PI_CODING_AGENT_DIR` or ~/.pi/agent. */
export function agentDir(env: Env = process.env, home: string = homedir()): string {
  const fromEnv = env[ENV_AGENT_DIR];
  return fromEnv ? expandTilde(fromEnv, home) : join(home, ".pi", "agent");
}

export interface SettingsRead {
  path: string;
  /** null when the file is missing or unreadable. */
  settings: Record<string, unknown> | null;
  /** Why the file could not be used, when it exists but is not a JSON object. */
  error?: string;
}

/** Read a settings.json without ever writing it; a missing file is normal, not an error. */
export function readSettings(path: string): SettingsRead {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "ENOENT" || code === "ENOTDIR" ? { path, settings: null } : { path, settings: null, error: String(err) };
  }
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return { path, settings: value as Record<string, unknown> };
    return { path, settings: null, error: "settings.json is not a JSON object" };
  } catch (err) {
    return { path, settings: null, error: `settings.json is not valid JSON: ${(err as Error).message}` };
  }
}

export type SessionsDirSource = "flag" | "env" | "project-settings" | "settings" | "default";

export interface SessionsDirResult {
  dir: string;
  source: SessionsDirSource;
  /** A moved sessions dir holds session files directly, without per-project folders. */
  flat: boolean;
}

export interface SessionsDirOptions {
  env?: Env;
  home?: string;
  /** Defaults to agentDir(env, home). */
  agentDir?: string;
  /** The project dir; pi also reads <cwd>/.pi/settings.json, which overrides the global file. */
  cwd?: string;
  /** The value of pi's --session-dir flag, if known. */
  flag?: string;
}

function settingsSessionDir(path: string): string | undefined {
  const value = readSettings(path).settings?.sessionDir;
  return typeof value === "string" && value ? value : undefined;
}

/**
 * Resolve the sessions dir in pi's order: --session-dir, $PI_CODING_AGENT_SESSION_DIR,
 * sessionDir in project then global settings.json, else <agentDir>/sessions.
 */
export function sessionsDir(options: SessionsDirOptions = {}): SessionsDirResult {
  const env = options.env ?? process.env;
  const home = options.home ?? homedir();
  const base = options.agentDir ?? agentDir(env, home);
  const cwd = options.cwd ?? process.cwd();
  const moved = (dir: string, source: SessionsDirSource): SessionsDirResult => ({ dir: resolve(cwd, expandTilde(dir, home)), source, flat: true });

  if (options.flag) return moved(options.flag, "flag");
  const fromEnv = env[ENV_SESSION_DIR];
  if (fromEnv) return moved(fromEnv, "env");
  const fromProject = options.cwd ? settingsSessionDir(join(options.cwd, ".pi", "settings.json")) : undefined;
  if (fromProject) return moved(fromProject, "project-settings");
  const fromGlobal = settingsSessionDir(join(base, "settings.json"));
  if (fromGlobal) return moved(fromGlobal, "settings");
  return { dir: join(base, "sessions"), source: "default", flat: false };
}

/**
 * A sessions dir inside the agent dir that is a symlink (the folder moved to a bigger disk and
 * linked back). pi follows it; a snapshot that recorded only the link would hold no session.
 */
export interface SessionsLink {
  /** The link itself, e.g. <agent dir>/sessions. */
  path: string;
  /** What the link says, made absolute. */
  target: string;
  /** Where it leads when it resolves. */
  real?: string;
  /**
   * folder: a folder outside the agent dir; inside-agent-dir: a folder the agent root holds anyway;
   * holds-agent-dir: a folder the agent dir is in (its parent, the home folder); missing and loop:
   * broken; not-a-folder: it leads to a file.
   */
  state: "folder" | "inside-agent-dir" | "holds-agent-dir" | "missing" | "loop" | "not-a-folder";
  /**
   * A source root "sessions": a folder outside the agent dir, and also a broken link or one that
   * holds the agent dir, which the scan then names as skipped (a loss, docs/FORMAT.md §10) instead
   * of a snapshot holding no session without a word.
   */
  followed: boolean;
}

const within = (child: string, parent: string): boolean => {
  const rel = relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
};

/** What `dir` is when it is a symlink; undefined for a real folder or nothing at all. Read-only. */
export function readSessionsLink(dir: string, agentDir: string): SessionsLink | undefined {
  let target: string;
  try {
    if (!lstatSync(dir).isSymbolicLink()) return undefined;
    target = resolve(dirname(dir), readlinkSync(dir));
  } catch {
    return undefined;
  }
  let real: string;
  try {
    real = realpathSync(dir);
  } catch (err) {
    const loop = (err as NodeJS.ErrnoException).code === "ELOOP";
    return { path: dir, target, state: loop ? "loop" : "missing", followed: true };
  }
  if (!statSync(real, { throwIfNoEntry: false })?.isDirectory()) return { path: dir, target, real, state: "not-a-folder", followed: false };
  const agentReal = (() => {
    try {
      return realpathSync(agentDir);
    } catch {
      return resolve(agentDir);
    }
  })();
  if (within(real, agentReal)) return { path: dir, target, real, state: "inside-agent-dir", followed: false };
  if (within(agentReal, real)) return { path: dir, target, real, state: "holds-agent-dir", followed: true };
  return { path: dir, target, real, state: "folder", followed: true };
}

/** One line for a snapshot's output: what pi-guard does with the link. */
export function sessionsLinkNote(link: SessionsLink): string {
  switch (link.state) {
    case "folder":
      return `${link.path} is a symlink to ${link.real}: backed up from there as root "sessions" (the link itself is kept in the agent root)`;
    case "inside-agent-dir":
      return `${link.path} is a symlink to ${link.real}, inside the agent dir: backed up there with the agent dir`;
    case "holds-agent-dir":
      return `${link.path} is a symlink to ${link.real}, which holds the agent dir: not walked (it would back up the agent dir again, and everything beside it)`;
    case "missing":
      return `${link.path} is a symlink to ${link.target}, which is missing: no session behind it could be backed up`;
    case "loop":
      return `${link.path} is a symlink loop: no session behind it could be backed up`;
    case "not-a-folder":
      return `${link.path} is a symlink to ${link.real}, which is not a folder: only the link is backed up`;
  }
}

/** A file pi keeps at the top of the agent dir, as `doctor` describes it. */
export interface AgentFile {
  name: string;
  /** What pi keeps in it, for a person. */
  what: string;
  /**
   * always: nothing but credentials (pi writes it 0600); if-it-holds-any: settings that may
   * carry credentials (headers, env values, keys), a secret when they do; no: no credentials.
   */
  secret: "always" | "if-it-holds-any" | "no";
}

/** The agent dir's own files (pi 0.73.1, and the ones pi 1.x added: docs/mcp.md, security.md, CHANGELOG). */
export const PI_AGENT_FILES: readonly AgentFile[] = [
  { name: "auth.json", what: "API keys and OAuth tokens of model providers", secret: "always" },
  { name: "models.json", what: "custom providers and models (may hold API keys and headers)", secret: "if-it-holds-any" },
  { name: "settings.json", what: "pi's settings", secret: "no" },
  { name: "mcp.json", what: "MCP servers, pi 1.x (may hold headers, env values and OAuth client secrets)", secret: "if-it-holds-any" },
  { name: "mcp-auth.json", what: "MCP OAuth tokens and client registrations, pi 1.x", secret: "always" },
  { name: "trust.json", what: "project trust decisions, pi 1.x", secret: "no" },
  { name: "crashes.json", what: "crash records for the next /bug report, pi 1.x", secret: "no" },
  { name: "models-store.json", what: "dynamic model catalogs, pi 1.x", secret: "no" },
];
