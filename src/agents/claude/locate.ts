// Where Claude Code keeps its data (DESIGN.md "Other agents", issue 19 item 2): $CLAUDE_CONFIG_DIR,
// else ~/.claude. Transcripts are projects/<cwd, every non-alphanumeric turned into ->/<session uuid>.jsonl, with
// <uuid>/subagents/ and tool-results/ beside them.

import path from "node:path";
import { dirByPrecedence } from "../locate.js";
import type { AgentLocation, LocateContext } from "../types.js";

export const ENV_CLAUDE_DIR = "CLAUDE_CONFIG_DIR";
/** The root name of ~/.claude in snapshots. */
export const CLAUDE_ROOT = "claude";

/** flag > $CLAUDE_CONFIG_DIR > config (`agents.claude.dir`) > ~/.claude. */
export function locateClaude(ctx: LocateContext): AgentLocation {
  const { dir, foundBy, via } = dirByPrecedence(ctx, ENV_CLAUDE_DIR, path.join(ctx.home, ".claude"));
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
