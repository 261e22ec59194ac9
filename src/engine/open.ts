/**
 * The engine the config selects: a `restic:` repository location gets the restic engine, every
 * other location pi-guard's own. Deciding costs nothing: the restic code (and execa) loads only
 * for a restic location.
 */
import type { Config } from "../config/config.js";
import type { Repository } from "../repo/repository.js";
import { parseRepoLocation } from "../targets/location.js";
import type { OpenTargetOptions } from "../targets/open.js";
import type { Engine } from "./types.js";

export interface OpenEngineOptions {
  /** Asked when the config names no password or key file (a terminal); never for a service. */
  promptPassword?: () => Promise<string>;
  /** Native: how the repository's storage is opened (the watcher counts its requests). */
  target?: OpenTargetOptions;
  /** Native: called on each warning the repository has for the user. */
  onWarning?: (message: string) => void;
}

export type OpenedEngine = Engine & {
  /** Native only: the unlocked repository, for the commands that are pi-guard's own format. */
  repository?: () => Promise<Repository>;
};

export function isResticLocation(config: Pick<Config, "repo">): boolean {
  return parseRepoLocation(config.repo).kind === "restic";
}

export async function openEngine(config: Config, opts: OpenEngineOptions = {}): Promise<OpenedEngine> {
  if (isResticLocation(config)) {
    const [{ resticEngine }, { resticSession }] = await Promise.all([import("./restic.js"), import("../restic/repository.js")]);
    return resticEngine(config, (isNew = false) => resticSession(config, opts.promptPassword, { confirm: isNew }));
  }
  const { nativeEngine } = await import("./native.js");
  return nativeEngine(config, async () => {
    // The whole engine (backup, restore, storage, worker pools) loads only when the repository
    // is opened: a warm `sessions list` or `search` reads cached views and never opens it.
    const { openRepository } = await import("./snapshot-open.js");
    const repo = await openRepository(config, opts.promptPassword, opts.target);
    if (opts.onWarning) repo.onWarning = opts.onWarning;
    return repo;
  });
}

/** The native engine over a repository that is open already (the watcher hands its own to the scheduled jobs). */
export async function engineOver(config: Config, repo: Repository): Promise<OpenedEngine> {
  const { nativeEngine } = await import("./native.js");
  return nativeEngine(config, async () => repo);
}
