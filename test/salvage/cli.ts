// The salvage tests run the built pi-guard (`node bin/pi-guard.js`, see test/helpers/cli.ts) as a
// child process, so exit codes, stdout and stderr are exactly what a user sees.

import { cli } from "../helpers/cli.js";

export interface CliRun {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Run pi-guard with a temp HOME/XDG/agent dir so nothing touches the real ~/.pi. */
export async function runCli(args: string[], env: Record<string, string>, timeoutMs?: number): Promise<CliRun> {
  const r = await cli(env, args, { timeoutMs });
  // Without the final newline, as the tests were written against execa's output.
  const strip = (s: string) => s.replace(/\n$/, "");
  return { exitCode: r.code ?? -1, stdout: strip(r.stdout), stderr: strip(r.stderr) };
}

/** An environment rooted at a temp dir (and nothing else from the test's environment). */
export function tempEnv(root: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    TMPDIR: process.env.TMPDIR ?? "/tmp",
    NO_COLOR: "1",
    HOME: `${root}/home`,
    XDG_DATA_HOME: `${root}/data`,
    XDG_CONFIG_HOME: `${root}/config`,
    PI_CODING_AGENT_DIR: `${root}/agent`,
  };
}
