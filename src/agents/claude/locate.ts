// Where Claude Code keeps its data (DESIGN.md "Other agents", issue 19 item 2): $CLAUDE_CONFIG_DIR,
// else ~/.claude. Transcripts are projects/<cwd with / turned into ->/<session uuid>.jsonl, with
// <uuid>/subagents/ and tool-results/ beside them.
// Written by `iface` so that detection has a second real agent; `cc` owns this folder from here on.

import path from "node:path";
import { expandTilde } from "../../pi/paths.js";
import type { AgentLocation, LocateContext } from "../types.js";

export const ENV_CLAUDE_DIR = "CLAUDE_CONFIG_DIR";
/** The root name of ~/.claude in snapshots. */
export const CLAUDE_ROOT = "claude";

/** flag > $CLAUDE_CONFIG_DIR > config (`agents.claude.dir`) > ~/.claude. */
export function locateClaude(ctx: LocateContext): AgentLocation {
  const { env, home } = ctx;
  const fromEnv = env[ENV_CLAUDE_DIR];
  const [dir, foundBy, via] = ctx.flagDir
    ? [path.resolve(ctx.flagDir), "flag" as const, "--agent-dir"]
    : fromEnv
      ? [path.resolve(home, expandTilde(fromEnv, home)), "env" as const, ENV_CLAUDE_DIR]
      : ctx.config?.dir
        ? [path.resolve(home, expandTilde(ctx.config.dir, home)), "config" as const, ctx.configFile ? `config file ${ctx.configFile}` : "config file"]
        : [path.join(home, ".claude"), "default" as const, undefined];
  return {
    agent: "claude",
    dir,
    foundBy,
    ...(via ? { via } : {}),
    roots: [{ name: CLAUDE_ROOT, path: dir, agent: "claude", foundBy, ...(via ? { via } : {}) }],
  };
}

/** A transcript: projects/<project>/<uuid>.jsonl (not a subagent's, which sits one level deeper). */
export function isClaudeTranscript(p: string): boolean {
  return /^projects\/[^/]+\/[^/]+\.jsonl$/.test(p);
}
