// `status --agent NAME`: the agent's part of the health report. An agent that is not guarded, or
// that no good snapshot holds, is not protected, and status says so (exit 1).

import type { Config } from "../config/config.js";
import { isImport, type Snapshot, SUSPECT_LOSS_TAG } from "../repo/format.js";
import { PRE_RESTORE_TAG } from "../restore/select.js";
import type { StatusReport } from "../watch/status.js";
import { snapshotRootsOf } from "./roots.js";

export interface AgentStatus {
  name: string;
  dir: string;
  detected: boolean;
  guarded: boolean;
  why: string;
  /** The newest good snapshot holding this agent's roots (not an import, pre-restore or suspect-loss one). */
  lastGoodSnapshot: { id: string; time: string; roots: string[] } | null;
  /** Why the agent is not protected, one line each; empty when it is. */
  problems: string[];
}

/** A snapshot as both engines list it (native: its record; restic: its tags and roots), oldest first. */
export interface JudgedSnapshot {
  id: string;
  snapshot: Pick<Snapshot, "imported" | "tags" | "time"> & { roots?: unknown; agents?: unknown };
}

/** One agent's part, judged on `snapshots` (every snapshot of the repository, oldest first), whichever engine listed them. */
export function agentStatus(config: Pick<Config, "agents">, snapshots: JudgedSnapshot[], name: string): AgentStatus {
  const choice = config.agents.find((c) => c.location.agent === name);
  if (!choice) throw new Error(`agent ${name} is not registered`);
  const good = snapshots.filter((r) => !isImport(r.snapshot) && !r.snapshot.tags.includes(SUSPECT_LOSS_TAG) && !r.snapshot.tags.includes(PRE_RESTORE_TAG));
  const holding = good.map((r) => ({ r, roots: snapshotRootsOf(r.snapshot, name) })).filter((x) => x.roots.length > 0).at(-1);
  const problems: string[] = [];
  if (!choice.guarded) problems.push(`${name} is not guarded (${choice.why}): snapshots do not take ${choice.location.dir}`);
  else if (!holding && choice.detected) problems.push(`no good snapshot holds ${name}'s data (${choice.location.dir}) yet: run pi-guard snapshot`);
  return {
    name,
    dir: choice.location.dir,
    detected: choice.detected,
    guarded: choice.guarded,
    why: choice.why,
    lastGoodSnapshot: holding ? { id: holding.r.id, time: holding.r.snapshot.time, roots: holding.roots } : null,
    problems,
  };
}

/** The agent's part added to a status report: its own problems make the guard unhealthy. */
export function withAgentStatus(report: StatusReport, agent: AgentStatus): StatusReport {
  for (const message of agent.problems) {
    report.problems.push(message);
    report.problemKinds.push({ kind: "no-snapshot", subject: agent.name, message });
  }
  report.healthy &&= agent.problems.length === 0;
  report.agent = agent;
  return report;
}
