// The sessions commands through the real CLI (bin/pi-guard.js), in a sandbox.

import { cli, ok, type CliResult } from "../helpers/cli.js";
import type { Sandbox } from "../helpers/tmp.js";

export function run(sb: Sandbox, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return cli(sb, args, { env });
}

export function runOk(sb: Sandbox, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return ok(sb, args, { env });
}
