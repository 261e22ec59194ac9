// `status --agent NAME`: the agent's part of the health report. An agent that is not guarded, or
// that no good snapshot holds, is not protected, and status says so (exit 1).

import type { Config } from "../config/config.js";
import { isImport, SUSPECT_LOSS_TAG } from "../repo/format.js";
import type { Repository } from "../repo/repository.js";
import { PRE_RESTORE_TAG } from "../restore/select.js";
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

export async function agentStatus(config: Pick<Config, "agents">, repo: Repository, name: string): Promise<AgentStatus> {
  const choice = config.agents.find((c) => c.location.agent === name);
  if (!choice) throw new Error(`agent ${name} is not registered`);
  const good = (await repo.listSnapshots()).filter((r) => !isImport(r.snapshot) && !r.snapshot.tags.includes(SUSPECT_LOSS_TAG) && !r.snapshot.tags.includes(PRE_RESTORE_TAG));
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
