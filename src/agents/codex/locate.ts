// Where Codex CLI keeps its data, apart from the adapter (src/agents/locators.ts).

import path from "node:path";
import { dirByPrecedence } from "../locate.js";
import type { AgentLocation, LocateContext } from "../types.js";

export const ENV_CODEX_HOME = "CODEX_HOME";
/** The root name of $CODEX_HOME in snapshots. */
export const CODEX_ROOT = "codex";

/** flag > $CODEX_HOME > config (`agents.codex.dir`) > ~/.codex. */
export function locateCodex(ctx: LocateContext): AgentLocation {
  const { dir, foundBy, via } = dirByPrecedence(ctx, ENV_CODEX_HOME, path.join(ctx.home, ".codex"));
  return { agent: "codex", dir, foundBy, ...(via ? { via } : {}), roots: [{ name: CODEX_ROOT, path: dir, agent: "codex", foundBy, ...(via ? { via } : {}) }] };
}
