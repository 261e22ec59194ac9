// Whether a path lies inside a folder: on its own so that the agents' locators (src/agents/*/locate.ts),
// which config.ts loads, use the same test without importing config.ts back. config.ts re-exports both.

import path from "node:path";

export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(path.resolve(parent), path.resolve(child));
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/**
 * isInside against one parent for many children that are already resolved (path.resolve): the
 * watcher's filter runs for every file event, and resolving the parent (and the child, twice, in
 * path.relative) on each call was most of its cost.
 */
export function insideOf(parent: string): (resolvedChild: string) => boolean {
  const base = path.resolve(parent);
  const prefix = base.endsWith(path.sep) ? base : base + path.sep;
  return (child) => child === base || child.startsWith(prefix);
}
