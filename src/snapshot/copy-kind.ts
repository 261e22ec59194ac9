// The agents' copy rules (agents/types.ts CopyRule) as the snapshotter's `copyKind`: the first
// rule whose root and glob match a file says how it is copied; none means plain bytes.

import picomatch from "picomatch";
import { findAgent } from "../agents/registry.js";
import type { CopyKind, CopyRule } from "../agents/types.js";
import type { Config } from "../config/config.js";

function firstRule(rules: readonly CopyRule[]): (root: string, path: string) => CopyRule | undefined {
  const compiled = rules.map((r) => ({ rule: r, match: picomatch(r.glob, { dot: true }) }));
  return (root, path) => compiled.find((c) => c.rule.root === root && c.match(path))?.rule;
}

export function copyKindOf(rules: readonly CopyRule[]): (root: string, path: string) => CopyKind | undefined {
  const rule = firstRule(rules);
  return (root, path) => rule(root, path)?.kind;
}

const guardedRules = (config: Partial<Pick<Config, "agents">>): CopyRule[] =>
  (config.agents ?? []).filter((a) => a.guarded).flatMap((a) => findAgent(a.location.agent)?.copyRules(a.location) ?? []);

/** The copy rules of every agent the config guards: what `pi-guard snapshot` and the watcher both pass to createSnapshot. */
export function guardedCopyKind(config: Partial<Pick<Config, "agents">>): (root: string, path: string) => CopyKind | undefined {
  return copyKindOf(guardedRules(config));
}

/** The key table of a guarded agent's SQLite db (CopyRule.keyTable), whose rows a snapshot counts. */
export function guardedKeyTable(config: Partial<Pick<Config, "agents">>): (root: string, path: string) => string | undefined {
  const rule = firstRule(guardedRules(config));
  return (root, path) => rule(root, path)?.keyTable;
}
