import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import type { z as Zod } from "zod";
import { RepoError } from "../repo/errors.js";
import { agentDir as piAgentDir, sessionsDir as piSessionsDir } from "../pi/paths.js";
import { DEFAULT_EXCLUDES, type SourceFilter, type SourceRoot } from "../snapshot/sources.js";

type Env = Record<string, string | undefined>;

// zod is loaded only when there is a config file to validate: most runs have none, and start-up counts.
function configSchema(z: typeof Zod) {
  return z
  .object({
    repo: z.string().min(1).optional(),
    keyFile: z.string().min(1).optional(),
    passwordFile: z.string().min(1).optional(),
    agentDir: z.string().min(1).optional(),
    sources: z
      .object({
        include: z.array(z.string()).default([]),
        exclude: z.array(z.string()).default([]),
      })
      .strict()
      .default({ include: [], exclude: [] }),
  })
  .strict();
}

export type ConfigFileShape = Zod.infer<ReturnType<typeof configSchema>>;

/** Everything a command needs to know about where things are, resolved once. */
export interface Config {
  configDir: string;
  dataDir: string;
  configFile: string;
  /** A local path, or later s3://bucket/prefix. */
  repo: string;
  keyFile: string;
  /** Where keyFile was named (flag, environment, config file); undefined for the default path. */
  keyFileSource?: string;
  passwordFile?: string;
  password?: string;
  passwordSource?: string;
  agentDir: string;
  roots: SourceRoot[];
  filter: SourceFilter;
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

export function xdgDirs(env: Env = process.env): { configDir: string; dataDir: string } {
  const home = env.HOME || os.homedir();
  const configHome = env.XDG_CONFIG_HOME || path.join(home, ".config");
  const dataHome = env.XDG_DATA_HOME || path.join(home, ".local", "share");
  return { configDir: path.join(configHome, "pi-guard"), dataDir: path.join(dataHome, "pi-guard") };
}

function readConfigFile(file: string): ConfigFileShape {
  if (!existsSync(file)) return { sources: { include: [], exclude: [] } };
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new RepoError(`config file ${file} is not valid JSON: ${(err as Error).message}`, "usage");
  }
  const { z } = createRequire(import.meta.url)("zod") as { z: typeof Zod };
  const parsed = configSchema(z).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.length ? issue.path.join(".") : "(top level)";
    throw new RepoError(`config file ${file}: ${where}: ${issue.message}`, "usage");
  }
  return parsed.data;
}

export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(path.resolve(parent), path.resolve(child));
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** flags > environment > config file > XDG defaults. */
export function loadConfig(flags: ConfigFlags = {}, env: Env = process.env): Config {
  const { configDir, dataDir } = xdgDirs(env);
  const configFile = flags.configFile ?? env.PI_GUARD_CONFIG ?? path.join(configDir, "config.json");
  const file = readConfigFile(configFile);
  const home = env.HOME || os.homedir();
  const agentDir = path.resolve(flags.agentDir ?? (env.PI_CODING_AGENT_DIR ? piAgentDir(env, home) : file.agentDir ?? piAgentDir(env, home)));
  const repo = flags.repo ?? env.PI_GUARD_REPO ?? file.repo ?? path.join(dataDir, "repo");
  const roots: SourceRoot[] = [{ name: "agent", path: agentDir }];
  const sessions = piSessionsDir({ env, home, agentDir });
  if (!isInside(sessions.dir, agentDir)) roots.push({ name: "sessions", path: sessions.dir });
  // pi-guard's own metadata (session tags) is backed up with everything else.
  roots.push({ name: META_ROOT_NAME, path: path.join(dataDir, "meta") });
  const passwordFile = flags.passwordFile ?? env.PI_GUARD_PASSWORD_FILE ?? file.passwordFile;
  return {
    configDir,
    dataDir,
    configFile,
    repo: repo.startsWith("s3://") ? repo : path.resolve(repo),
    keyFile: path.resolve(flags.keyFile ?? env.PI_GUARD_KEY_FILE ?? file.keyFile ?? path.join(configDir, "key")),
    keyFileSource: flags.keyFile ? "--key-file" : env.PI_GUARD_KEY_FILE ? "PI_GUARD_KEY_FILE" : file.keyFile ? `config file ${configFile}` : undefined,
    passwordFile,
    password: env.PI_GUARD_PASSWORD,
    passwordSource: passwordFile ? `password file ${passwordFile}` : env.PI_GUARD_PASSWORD !== undefined ? "PI_GUARD_PASSWORD" : undefined,
    agentDir,
    roots,
    filter: { include: file.sources.include, exclude: [...DEFAULT_EXCLUDES, ...file.sources.exclude] },
  };
}
