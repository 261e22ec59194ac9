// Which agents a config guards, and which agent a snapshot's root belongs to. The policy lives
// here (config.ts calls it once per run; `agents` and snapshots read its result).

import { statSync } from "node:fs";
import { agentLocators } from "./locators.js";
import type { AgentConfig, AgentLocation, AgentName, Env } from "./types.js";

/** The config file's `agents`: a list of the agents to guard, or settings per agent. */
export type AgentsSetting = AgentName[] | Partial<Record<AgentName, AgentConfig>>;

export interface AgentChoice {
  location: AgentLocation;
  /** Its data dir exists. */
  detected: boolean;
  guarded: boolean;
  /** One line: why it is guarded or not. */
  why: string;
}

/** Whether a data dir is there. One that cannot be looked at (EACCES) counts as there: the snapshot then names it as skipped rather than pretending it is absent. */
function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code !== "ENOENT" && code !== "ENOTDIR";
  }
}

/**
 * Every registered agent, located, and whether it is guarded:
 * - `agents: ["pi", "claude"]` guards exactly those (found or not: a missing one is then an error of the snapshot, as pi's is);
 * - `agents: {"claude": {"enabled": false}}` switches one off (or on), the others keep the default;
 * - the default guards pi always (a pi-only setup stays as it was) and every other agent whose data dir exists.
 */
export function chooseAgents(opts: { env: Env; home: string; setting?: AgentsSetting; piDir?: string; flagDir?: string; configFile?: string }): AgentChoice[] {
  const list = Array.isArray(opts.setting) ? new Set<string>(opts.setting) : undefined;
  const per = !Array.isArray(opts.setting) ? (opts.setting ?? {}) : {};
  return agentLocators().map((adapter) => {
    const config: AgentConfig = { ...per[adapter.name] };
    if (adapter.name === "pi" && !config.dir && opts.piDir) config.dir = opts.piDir;
    const location = adapter.locate({ env: opts.env, home: opts.home, config, configFile: opts.configFile, ...(adapter.name === "pi" && opts.flagDir ? { flagDir: opts.flagDir } : {}) });
    const detected = isDir(location.dir);
    const [guarded, why] = list
      ? [list.has(adapter.name), list.has(adapter.name) ? "listed in the config's agents" : "not listed in the config's agents"]
      : config.enabled !== undefined
        ? [config.enabled, `agents.${adapter.name}.enabled is ${config.enabled}`]
        : adapter.name === "pi"
          ? [true, "pi is always guarded by default"]
          : [detected, detected ? "detected" : "not found"];
    return { location, detected, guarded, why };
  });
}

/**
 * Which agent each root of a snapshot belongs to. Snapshots record it (`agents`); older ones did
 * not, and there `agent` and `sessions` were pi's only roots. Untrusted: only string values count.
 */
export function snapshotRootAgents(snapshot: { roots?: unknown; agents?: unknown }): Map<string, string> {
  const out = new Map<string, string>();
  const recorded = snapshot.agents && typeof snapshot.agents === "object" && !Array.isArray(snapshot.agents) ? (snapshot.agents as Record<string, unknown>) : undefined;
  const roots = Array.isArray(snapshot.roots) ? snapshot.roots : [];
  for (const r of roots) {
    const name = typeof r?.name === "string" ? r.name : undefined;
    if (name === undefined) continue;
    const agent = recorded ? recorded[name] : name === "agent" || name === "sessions" ? "pi" : undefined;
    if (typeof agent === "string") out.set(name, agent);
  }
  return out;
}

/** The root names of `agent` in a snapshot. */
export function snapshotRootsOf(snapshot: { roots?: unknown; agents?: unknown }, agent: string): string[] {
  return [...snapshotRootAgents(snapshot)].filter(([, a]) => a === agent).map(([name]) => name);
}
