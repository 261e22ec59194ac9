// Where pi keeps its data, apart from the adapter so that the config (and a `pi-guard snapshot`
// handed to a watcher) locates every agent without loading its readers (src/agents/locators.ts).

import path from "node:path";
import { agentDir as defaultAgentDir, ENV_AGENT_DIR, readSessionsLink, sessionsDir, sessionsLinkNote } from "./paths.js";
import { dirByPrecedence } from "../locate.js";
import { isInside } from "../../config/inside.js";
import type { AgentLocation, AgentRoot, LocateContext } from "../types.js";

/** The historic root names: old repositories' snapshots and parent matching key on them. */
export const PI_AGENT_ROOT = "agent";
export const PI_SESSIONS_ROOT = "sessions";

/** flag > $PI_CODING_AGENT_DIR > config (`agents.pi.dir`, or the older top-level `agentDir`) > ~/.pi/agent. */
export function locatePi(ctx: LocateContext): AgentLocation {
  const { env, home } = ctx;
  const { dir, foundBy, via } = dirByPrecedence(ctx, ENV_AGENT_DIR, path.resolve(defaultAgentDir({}, home)));
  const roots: AgentRoot[] = [{ name: PI_AGENT_ROOT, path: dir, agent: "pi", foundBy, ...(via ? { via } : {}) }];
  const sessions = sessionsDir({ env, home, agentDir: dir });
  const link = isInside(sessions.dir, dir) ? readSessionsLink(sessions.dir, dir) : undefined;
  // A moved sessions dir, or one linked from inside the agent dir to elsewhere (the link itself
  // stays in the agent root, so a restore puts the layout back): both are walked as root "sessions".
  if (!isInside(sessions.dir, dir) || link?.followed) {
    const sessionsFoundBy = sessions.source === "env" ? "env" : sessions.source === "default" ? foundBy : "settings";
    const sessionsVia = sessions.source === "env" ? "PI_CODING_AGENT_SESSION_DIR" : sessions.source === "default" ? via : `sessionDir in ${path.join(dir, "settings.json")}`;
    roots.push({ name: PI_SESSIONS_ROOT, path: sessions.dir, agent: "pi", foundBy: sessionsFoundBy, ...(sessionsVia ? { via: sessionsVia } : {}) });
  }
  return { agent: "pi", dir, foundBy, ...(via ? { via } : {}), roots, ...(link ? { notes: [sessionsLinkNote(link)] } : {}) };
}
