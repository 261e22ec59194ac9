// The location rule of an agent whose data is one folder with one env override (Claude Code,
// Codex CLI): a flag > the agent's env variable > the config file's `agents.<name>.dir` > the
// default under $HOME. The agent's own variable beats the config, as the agent itself sees it.

import path from "node:path";
import { expandTilde } from "../pi/paths.js";
import type { AgentLocation, AgentName, LocateContext } from "./types.js";

export function oneDirLocation(ctx: LocateContext, agent: AgentName, opts: { root: string; envVar: string; defaultDir: (home: string) => string }): AgentLocation {
  const { env, home } = ctx;
  const fromEnv = env[opts.envVar];
  const [dir, foundBy, via] = ctx.flagDir
    ? [path.resolve(ctx.flagDir), "flag" as const, "--agent-dir"]
    : fromEnv
      ? [path.resolve(home, expandTilde(fromEnv, home)), "env" as const, opts.envVar]
      : ctx.config?.dir
        ? [path.resolve(home, expandTilde(ctx.config.dir, home)), "config" as const, ctx.configFile ? `config file ${ctx.configFile}` : "config file"]
        : [opts.defaultDir(home), "default" as const, undefined];
  return { agent, dir, foundBy, ...(via ? { via } : {}), roots: [{ name: opts.root, path: dir, agent, foundBy, ...(via ? { via } : {}) }] };
}
