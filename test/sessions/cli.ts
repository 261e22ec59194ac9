// Run the built CLI with the sessions commands registered (entry.mjs), in a sandbox.

import { spawn } from "node:child_process";
import path from "node:path";
import { collect, PROJECT_ROOT, staleOutputs, type CliResult } from "../helpers/cli.js";
import type { Sandbox } from "../helpers/tmp.js";

const ENTRY = path.join(PROJECT_ROOT, "test", "sessions", "entry.mjs");

let checked = false;
function assertBuilt(): void {
  if (checked || process.env.PI_GUARD_TEST_ALLOW_STALE_DIST === "1") return;
  const stale = staleOutputs("src/cli/sessions-commands.ts");
  if (stale.length) throw new Error(`dist/ is older than ${stale.slice(0, 3).join(", ")}: run \`npm run build\` first`);
  checked = true;
}

export function run(sb: Sandbox, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  assertBuilt();
  const child = spawn(process.execPath, [ENTRY, ...args], { cwd: PROJECT_ROOT, env: { ...sb.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  return collect(child);
}

export async function runOk(sb: Sandbox, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const r = await run(sb, args, env);
  if (r.code !== 0) throw new Error(`pi-guard ${args.join(" ")} exited ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  return r;
}
