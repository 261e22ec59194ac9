// What `pi-guard agents` shows: every registered agent, where its data is, how that was found,
// how much there is, how many sessions, and whether pi-guard guards it. Only reads.

import type { Config } from "../config/config.js";
import { pathInScope } from "../snapshot/scan.js";
import { liveFiles } from "./files.js";
import { findAgent } from "./registry.js";
import type { AgentName, FoundBy } from "./types.js";

export interface AgentReport {
  name: AgentName;
  title: string;
  dir: string;
  foundBy: FoundBy;
  via?: string;
  detected: boolean;
  guarded: boolean;
  why: string;
  roots: { name: string; path: string }[];
  /** Bytes and files a snapshot would take (the config's filters applied); 0 when not detected. */
  bytes: number;
  files: number;
  sessions: number;
  notes: string[];
}

/** A report per registered agent, in the registry's order; `only` keeps one. */
export async function describeAgents(config: Pick<Config, "agents" | "filter">, only?: AgentName): Promise<AgentReport[]> {
  const inScope = pathInScope(config.filter);
  const out: AgentReport[] = [];
  for (const choice of config.agents) {
    const loc = choice.location;
    if (only && loc.agent !== only) continue;
    const adapter = findAgent(loc.agent)!;
    let bytes = 0;
    let files = 0;
    let sessions = 0;
    if (choice.detected) {
      const reader = liveFiles(loc.roots);
      for (const r of loc.roots) {
        for await (const f of reader.list(r.name)) {
          if (!inScope(f.path)) continue;
          bytes += f.size;
          files++;
        }
      }
      for await (const _ of adapter.sessions.list(reader)) sessions++;
    }
    out.push({
      name: loc.agent,
      title: adapter.title,
      dir: loc.dir,
      foundBy: loc.foundBy,
      ...(loc.via ? { via: loc.via } : {}),
      detected: choice.detected,
      guarded: choice.guarded,
      why: choice.why,
      roots: loc.roots.map((r) => ({ name: r.name, path: r.path })),
      bytes,
      files,
      sessions,
      notes: loc.notes ?? [],
    });
  }
  return out;
}
