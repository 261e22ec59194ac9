// Runs the real pi-guard program (main.ts's buildProgram plus the salvage commands) in a child
// process, so exit codes, stdout and stderr are exactly what a user sees.

import { execa } from "execa";
import { fileURLToPath } from "node:url";

const entry = fileURLToPath(new URL("./pi-guard-entry.ts", import.meta.url));
/** The repo root: node resolves `--import tsx` from the working directory. */
const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

export interface CliRun {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Run pi-guard with a temp HOME/XDG/agent dir so nothing touches the real ~/.pi. */
export async function runCli(args: string[], env: Record<string, string>): Promise<CliRun> {
  const r = await execa("node", ["--import", "tsx", entry, ...args], { cwd: repoRoot, env: { NO_COLOR: "1", ...env }, reject: false, extendEnv: true });
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** An environment rooted at a temp dir. */
export function tempEnv(root: string): Record<string, string> {
  return {
    HOME: `${root}/home`,
    XDG_DATA_HOME: `${root}/data`,
    XDG_CONFIG_HOME: `${root}/config`,
    PI_CODING_AGENT_DIR: `${root}/agent`,
  };
}
