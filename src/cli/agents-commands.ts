import type { Command } from "commander";
import { context } from "./context.js";
import { formatBytes, printJson, table } from "./output.js";

export function registerAgentsCommand(program: Command): void {
  program
    .command("agents")
    .description("list the coding agents found on this machine and whether pi-guard guards them (reads only)")
    .option("--agent <name>", "show this agent only")
    .addHelpText(
      "after",
      `
For every agent pi-guard knows (pi, Claude Code, and the others as they are added) this shows where
its data is and how that was found (a flag, its environment variable such as PI_CODING_AGENT_DIR or
CLAUDE_CONFIG_DIR, the config file, or the default), how much a snapshot takes of it, how many
sessions it holds, and whether snapshots guard it.

By default pi is always guarded and every other agent is guarded when its data dir exists. The
config file's "agents" says otherwise: a list guards exactly those, e.g. "agents": ["pi", "claude"];
settings per agent switch one off or move its dir: "agents": {"claude": {"enabled": false}}.

Examples:
  $ pi-guard agents
  $ pi-guard agents --agent claude
  $ pi-guard agents --json | jq '.[] | select(.guarded) | .name'`,
    )
    .action(async (opts: { agent?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const { describeAgents } = await import("../library/agents.js");
      const reports = await describeAgents(ctx.config, opts.agent);
      if (ctx.out.json) return printJson(reports);
      const rows = [["AGENT", "GUARDED", "SESSIONS", "SIZE", "WHERE", "FOUND BY"]];
      for (const r of reports) {
        rows.push([
          r.name,
          r.guarded ? "yes" : "no",
          r.detected ? String(r.sessions) : "-",
          r.detected ? formatBytes(r.bytes) : "-",
          r.detected ? r.dir : `${r.dir} (not found)`,
          r.via ? `${r.foundBy} (${r.via})` : r.foundBy,
        ]);
      }
      process.stdout.write(table(rows) + "\n");
      for (const r of reports) for (const n of r.notes) process.stdout.write(`${r.name}: ${n}\n`);
    });
}
