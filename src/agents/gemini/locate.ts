// Where Gemini CLI keeps its data, apart from the adapter (src/agents/locators.ts).

import path from "node:path";
import { expandTilde } from "../pi/paths.js";
import { dirByPrecedence } from "../locate.js";
import type { AgentLocation, LocateContext } from "../types.js";

export const GEMINI_ROOT = "gemini";
export const ENV_GEMINI_HOME = "GEMINI_CLI_HOME";

/** flag > $GEMINI_CLI_HOME/.gemini > config (`agents.gemini.dir`) > ~/.gemini. */
export function locateGemini(ctx: LocateContext): AgentLocation {
  const { home } = ctx;
  const { dir, foundBy, via } = dirByPrecedence(ctx, ENV_GEMINI_HOME, path.join(home, ".gemini"), (v) => path.join(path.resolve(home, expandTilde(v, home)), ".gemini"));
  return { agent: "gemini", dir, foundBy, ...(via ? { via } : {}), roots: [{ name: GEMINI_ROOT, path: dir, agent: "gemini", foundBy, ...(via ? { via } : {}) }] };
}
