import type { Command } from "commander";
import { loadConfig, type Config } from "../config/config.js";
import type { Repository } from "../repo/repository.js";
import type { OpenTargetOptions } from "../targets/open.js";
import type { OpenedEngine } from "../engine/open.js";
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
  /** The engine the config selects (native or restic), opened on first use. */
  engine(): Promise<OpenedEngine>;
}

/** Resolve global flags into a Config and an output mode; repositories open lazily. */
export function context(cmd: Command): Context {
  return contextOf(cmd.optsWithGlobals() as GlobalOptions);
}

/** The same, from global flags parsed without commander (src/cli/start.ts). */
export function contextOf(globals: GlobalOptions): Context {
  const config = loadConfig({
    repo: globals.repo,
    passwordFile: globals.passwordFile,
    keyFile: globals.keyFile,
    agentDir: globals.agentDir,
    configFile: globals.config,
  });
  const lockWait = Number(globals.lockWait ?? 60);
  if (!Number.isFinite(lockWait) || lockWait < 0) throw new RepoError(`--lock-wait must be a number of seconds, not "${globals.lockWait}"`, "usage");
  const prompt = (what: string) => (process.stdin.isTTY && process.stderr.isTTY ? () => promptHidden(what) : undefined);
  let engine: Promise<OpenedEngine> | undefined;
  return {
    config,
    globals,
    out: { json: !!globals.json, quiet: !!globals.quiet },
    lockWaitMs: lockWait * 1000,
    async open(opts?: OpenTargetOptions) {
      const { openRepository } = await import("../engine.js");
      const repo = await openRepository(config, prompt("repository password: "), opts);
      repo.onWarning = warn;
      return repo;
    },
    engine() {
      engine ??= import("../engine/open.js").then(({ isResticLocation, openEngine }) =>
        openEngine(config, { promptPassword: prompt(isResticLocation(config) ? "restic repository password: " : "repository password: "), onWarning: warn }),
      );
      return engine;
    },
  };
}
