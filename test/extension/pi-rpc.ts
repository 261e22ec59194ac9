// pi 1.6.0 in RPC mode (bench/pi-rpc.ts) the way the extension tests run it: the faux provider
// extension (test/helpers/pi1-faux-extension.mjs) answering from a script, and, unless told
// otherwise, pi-guard's built extension (dist/pi-extension/index.js), in a sandbox's HOME.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { spawnRpcPi, type RpcPi } from "../../bench/pi-rpc.js";
import { PROJECT_ROOT } from "../helpers/cli.js";
import { PI1_FAUX_EXTENSION, PI1_FAUX_MODEL, PI1_FAUX_PROVIDER, pi1Env, type Pi1Reply } from "../helpers/pi1.js";
import { pi1Dir, pi1Node } from "../helpers/tools.js";
import type { Sandbox } from "../helpers/tmp.js";

export { stopPi, type PiEvent, type RpcPi } from "../../bench/pi-rpc.js";

export const EXTENSION = path.join(PROJECT_ROOT, "dist", "pi-extension", "index.js");

export interface RpcPiOptions {
  sb: Sandbox;
  /** The environment of pi-guard's processes in the sandbox (its XDG_STATE_HOME is pi's too). */
  env: Record<string, string>;
  cwd: string;
  replies: Pi1Reply[];
  tokensPerSecond?: number;
  /** Load pi-guard's extension with -e (default true; false to rely on an installed loader). */
  withExtension?: boolean;
  args?: string[];
}

export function startRpcPi(o: RpcPiOptions): RpcPi {
  const script = path.join(o.sb.dir("faux-script"), `script-${Date.now()}-${Math.random().toString(16).slice(2)}.json`);
  writeFileSync(script, JSON.stringify({ replies: o.replies, tokenSize: { min: 2, max: 4 }, tokensPerSecond: o.tokensPerSecond }));
  return spawnRpcPi({
    node: pi1Node(),
    piCli: path.join(pi1Dir(), "node_modules", ".bin", "pi"),
    extensions: o.withExtension === false ? [PI1_FAUX_EXTENSION] : [PI1_FAUX_EXTENSION, EXTENSION],
    provider: PI1_FAUX_PROVIDER,
    model: PI1_FAUX_MODEL,
    cwd: o.cwd,
    args: o.args,
    env: { ...pi1Env(o.sb.home, o.sb.agentDir, { PI1_FAUX_SCRIPT: script }), ...(o.env.XDG_STATE_HOME ? { XDG_STATE_HOME: o.env.XDG_STATE_HOME } : {}) },
  });
}
