// The order every agent's data dir is found in: a flag, the agent's own env variable, the config
// file's `agents.<name>.dir`, the default under $HOME. Adapters call this, so the order is one rule.

import path from "node:path";
import { expandTilde } from "./pi/paths.js";
import type { FoundBy, LocateContext } from "./types.js";

/**
 * `envDir` turns the env variable's value into the data dir, for an agent whose variable names a
 * parent (`$XDG_DATA_HOME/opencode`, `$GEMINI_CLI_HOME/.gemini`), or undefined to ignore a value
 * the agent itself ignores. By default the value is the dir, relative to the working dir as the
 * agent would take it.
 */
export function dirByPrecedence(
  ctx: LocateContext,
  envVar: string,
  defaultDir: string,
  envDir: (value: string) => string | undefined = (v) => path.resolve(expandTilde(v, ctx.home)),
): { dir: string; foundBy: FoundBy; via?: string } {
  const { env, home } = ctx;
  const value = env[envVar];
  const fromEnv = value ? envDir(value) : undefined;
  if (ctx.flagDir) return { dir: path.resolve(ctx.flagDir), foundBy: "flag", via: "--agent-dir" };
  if (fromEnv) return { dir: fromEnv, foundBy: "env", via: envVar };
  if (ctx.config?.dir) return { dir: path.resolve(home, expandTilde(ctx.config.dir, home)), foundBy: "config", via: ctx.configFile ? `config file ${ctx.configFile}` : "config file" };
  return { dir: defaultDir, foundBy: "default" };
}
