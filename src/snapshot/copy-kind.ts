// The agents' copy rules (agents/types.ts CopyRule) as the snapshotter's `copyKind`: the first
// rule whose root and glob match a file says how it is copied; none means plain bytes.

import picomatch from "picomatch";
import type { CopyKind, CopyRule } from "../agents/types.js";

export function copyKindOf(rules: readonly CopyRule[]): (root: string, path: string) => CopyKind | undefined {
  const compiled = rules.map((r) => ({ root: r.root, kind: r.kind, match: picomatch(r.glob, { dot: true }) }));
  return (root, path) => compiled.find((r) => r.root === root && r.match(path))?.kind;
}
