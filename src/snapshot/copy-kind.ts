// The agents' copy rules (agents/types.ts CopyRule) as the snapshotter's `copyKind`: the first
// rule whose root and glob match a file says how it is copied; none means plain bytes.

import picomatch from "picomatch";
import { findAgent } from "../agents/registry.js";
import type { CopyKind, CopyRule } from "../agents/types.js";
import type { Config } from "../config/config.js";

export function copyKindOf(rules: readonly CopyRule[]): (root: string, path: string) => CopyKind | undefined {
  const compiled = rules.map((r) => ({ root: r.root, kind: r.kind, match: picomatch(r.glob, { dot: true }) }));
  return (root, path) => compiled.find((r) => r.root === root && r.match(path))?.kind;
}

/** The copy rules of every agent the config guards: what `pi-guard snapshot` and the watcher both pass to createSnapshot. */
export function guardedCopyKind(config: Partial<Pick<Config, "agents">>): (root: string, path: string) => CopyKind | undefined {
  return copyKindOf((config.agents ?? []).filter((a) => a.guarded).flatMap((a) => findAgent(a.location.agent)?.copyRules(a.location) ?? []));
}
