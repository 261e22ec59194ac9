import type { Command } from "commander";
import { loadConfig, type Config } from "../config/config.js";
import type { Repository } from "../repo/repository.js";
import type { OpenTargetOptions } from "../targets/open.js";
import { RepoError } from "../repo/errors.js";
import type { GlobalOptions } from "./main.js";
import { warn, type Output } from "./output.js";
import { promptHidden } from "./prompt.js";

export interface Context {
  config: Config;
  out: Output;
  globals: GlobalOptions;
  lockWaitMs: number;
  open(opts?: OpenTargetOptions): Promise<Repository>;
}

/** Resolve global flags into a Config and an output mode; repositories open lazily. */
export function context(cmd: Command): Context {
  const globals = cmd.optsWithGlobals() as GlobalOptions;
  const config = loadConfig({
    repo: globals.repo,
    passwordFile: globals.passwordFile,
    keyFile: globals.keyFile,
    agentDir: globals.agentDir,
    configFile: globals.config,
  });
  const lockWait = Number(globals.lockWait ?? 60);
  if (!Number.isFinite(lockWait) || lockWait < 0) throw new RepoError(`--lock-wait must be a number of seconds, not "${globals.lockWait}"`, "usage");
  return {
    config,
    globals,
    out: { json: !!globals.json, quiet: !!globals.quiet },
    lockWaitMs: lockWait * 1000,
    async open(opts?: OpenTargetOptions) {
      const { openRepository } = await import("../engine.js");
      const prompt = process.stdin.isTTY && process.stderr.isTTY ? () => promptHidden("repository password: ") : undefined;
      const repo = await openRepository(config, prompt, opts);
      repo.onWarning = warn;
      return repo;
    },
  };
}
