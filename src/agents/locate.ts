// The order every agent's data dir is found in: a flag, the agent's own env variable, the config
// file's `agents.<name>.dir`, the default under $HOME. Adapters call this, so the order is one rule.

import path from "node:path";
import { expandTilde } from "../pi/paths.js";
import type { FoundBy, LocateContext } from "./types.js";

export function dirByPrecedence(ctx: LocateContext, envVar: string, defaultDir: string): { dir: string; foundBy: FoundBy; via?: string } {
  const { env, home } = ctx;
  const fromEnv = env[envVar];
  if (ctx.flagDir) return { dir: path.resolve(ctx.flagDir), foundBy: "flag", via: "--agent-dir" };
  // A relative value means what it means to the agent: relative to the working dir.
  if (fromEnv) return { dir: path.resolve(expandTilde(fromEnv, home)), foundBy: "env", via: envVar };
  if (ctx.config?.dir) return { dir: path.resolve(home, expandTilde(ctx.config.dir, home)), foundBy: "config", via: ctx.configFile ? `config file ${ctx.configFile}` : "config file" };
  return { dir: defaultDir, foundBy: "default" };
}
