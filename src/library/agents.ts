/**
 * The agents pi-guard knows, as `pi-guard agents` describes them (where each one's data is, how
 * that was found, whether snapshots guard it), and pi-guard's own pi extension, installed into or
 * removed from an agent dir (only the loader file pi-guard wrote is ever removed).
 */
import type { Config } from "../config/config.js";
import type { AgentReport } from "../agents/detect.js";
import type { AgentName } from "../agents/types.js";
import type { InstallResult } from "../pi-extension/install.js";

/** Every agent, or only `agent` (a name the registry knows; a typo is a usage error). */
export async function describeAgents(config: Pick<Config, "agents" | "filter">, agent?: string): Promise<AgentReport[]> {
  const { agentByName } = await import("../agents/registry.js");
  const only = agent === undefined ? undefined : (agentByName(agent).name as AgentName);
  return (await import("../agents/detect.js")).describeAgents(config, only);
}

/** Write <agent dir>/extensions/pi-guard.js, which loads `extension` (nothing else of pi's is touched). */
export async function installPiExtension(agentDir: string, extension: string, dryRun = false): Promise<InstallResult> {
  return (await import("../pi-extension/install.js")).installExtension(agentDir, extension, dryRun);
}

/** Remove that loader, and only if it is pi-guard's. */
export async function uninstallPiExtension(agentDir: string, extension: string, dryRun = false): Promise<InstallResult> {
  return (await import("../pi-extension/install.js")).uninstallExtension(agentDir, extension, dryRun);
}
