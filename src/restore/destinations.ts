// Where each root of a snapshot is restored, and which roots `restore --agent NAME` keeps: the
// rules both engines follow (engine.ts for pi-guard's own repositories, restic/restore.ts for
// restic), so that a restore puts the same root in the same place whichever engine holds it.
import { snapshotRootsOf } from "../agents/roots.js";
import type { Config } from "../config/config.js";
import { RepoError } from "../repo/errors.js";
import { targetRootDir, type TreeLayout } from "./layout.js";
import type { RestoreFailure } from "./restorer.js";

/** A root's folder, a one-line reason it is not restored, or nothing (a root the layout leaves out). */
export type RootDestination = { dir: string } | { refused: string } | undefined;

/**
 * Where one root goes. The snapshot is untrusted: into a target, a root lands in a folder named
 * after it only when the name is one plain component; in place, only roots the current
 * configuration has are restored (a snapshot's own root paths could point anywhere). `why` adds
 * the reason a caller's own rule for the root did not place it (sessions-root.ts).
 */
export function rootDestination(config: Pick<Config, "roots" | "agents">, root: { name: string; path: string }, targetDir: string | undefined, layout: TreeLayout, why?: string): RootDestination {
  if (targetDir) {
    const dir = targetRootDir(root.name, targetDir, layout);
    if (dir === "unsafe") return { refused: "unsafe root name: not restored" };
    return dir === undefined ? undefined : { dir };
  }
  // An agent's root that is no source now is still where that agent looks: a ~/.claude wiped
  // whole is no longer detected, and the restore is what brings it back.
  const current = config.roots.find((r) => r.name === root.name) ?? config.agents.flatMap((a) => a.location.roots).find((r) => r.name === root.name);
  if (current) return { dir: current.path };
  return { refused: `root ${JSON.stringify(root.name)} (${String(root.path)}) is not configured now${why ? ` (${why})` : ""}: restore it with --target` };
}

/**
 * The config the pre-restore snapshot is taken with: each agent root this restore writes in place
 * that the config does not guard (rootDestination's fallback: an agent switched off, or no longer
 * detected) is snapshotted too, its agent guarded for that snapshot (so a SQLite db is copied
 * consistently), so that what the restore replaces there can be put back as well.
 */
export function withRestoredRoots<C extends Pick<Config, "roots" | "rootAgents" | "agents">>(config: C, destinations: Record<string, string>): C {
  const extra = config.agents.flatMap((a) => a.location.roots).filter((r) => destinations[r.name] === r.path && !config.roots.some((c) => c.name === r.name));
  if (!extra.length) return config;
  const agents = new Set(extra.map((r) => r.agent));
  return {
    ...config,
    roots: [...config.roots, ...extra.map((r) => ({ name: r.name, path: r.path }))],
    rootAgents: { ...config.rootAgents, ...Object.fromEntries(extra.map((r) => [r.name, r.agent])) },
    agents: config.agents.map((a) => (agents.has(a.location.agent) ? { ...a, guarded: true } : a)),
  };
}

/** The refusal of a root, as a restore report names it. */
export const refusedRoot = (root: string, error: string): RestoreFailure => ({ path: `${root}/`, root, error, kind: "refused" });

/**
 * With `agent` (restore --agent NAME; agents/roots.ts snapshotRootsOf): only that agent's roots of
 * the snapshot are restored, and only their refusals count. A snapshot holding nothing of it is
 * an error, never an empty restore that exits 0.
 */
export function onlyAgent<T extends { destinations: Record<string, string>; refused: RestoreFailure[] }>(
  where: T,
  snapshot: { id: string; roots?: unknown; agents?: unknown },
  agent: string | undefined,
): T {
  if (agent === undefined) return where;
  const own = new Set(snapshotRootsOf(snapshot, agent));
  if (!own.size) throw new RepoError(`snapshot ${snapshot.id.slice(0, 8)} holds nothing of agent ${agent}`, "not-found");
  return {
    ...where,
    destinations: Object.fromEntries(Object.entries(where.destinations).filter(([name]) => own.has(name))),
    refused: where.refused.filter((r) => r.root !== undefined && own.has(r.root)),
  };
}
