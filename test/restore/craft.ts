// A crafted repository: snapshots written with the repository's own key and code, holding
// whatever tree an attacker (or a damaged import) would put there.

import os from "node:os";
import { loadConfig } from "../../src/config/config.js";
import { openRepository } from "../../src/engine.js";
import type { TreeNode } from "../../src/repo/format.js";
import { withSnapshotBuilder } from "../../src/snapshot/snapshotter.js";
import type { Sandbox } from "../helpers/tmp.js";

export type CraftNode =
  | { type: "file"; path: string; data: string | Buffer; root?: string; pathBytes?: string; mode?: number }
  | { type: "symlink"; path: string; target: string; root?: string }
  | { type: "dir"; path: string; root?: string };

/** Store a snapshot whose tree is exactly `nodes` (in that order); returns its id. */
export async function craftSnapshot(
  sb: Sandbox,
  nodes: CraftNode[],
  roots: { name: string; path: string }[] = [{ name: "agent", path: sb.agentDir }],
): Promise<string> {
  const repo = await openRepository(loadConfig({}, sb.env));
  const mtimeMs = Date.parse("2026-01-02T03:04:05Z");
  const result = await withSnapshotBuilder(repo, { command: "test-craft" }, async (b) => {
    for (const n of nodes) {
      const base = { root: n.root ?? "agent", path: n.path, mtimeMs };
      if (n.type === "file") {
        const node: Omit<TreeNode, "content" | "size" | "type"> = { ...base, mode: n.mode ?? 0o644 };
        if (n.pathBytes) node.pathBytes = n.pathBytes;
        await b.addStreamedFile(node, once(Buffer.from(n.data)));
      } else if (n.type === "symlink") await b.addNode({ ...base, type: "symlink", mode: 0o777, target: n.target });
      else await b.addNode({ ...base, type: "dir", mode: 0o755 });
    }
    return b.commit({ host: os.hostname(), roots, tags: [] });
  });
  return result.id;
}

/** One buffer as the stream addStreamedFile takes. */
export async function* once(data: Buffer): AsyncGenerator<Buffer> {
  yield data;
}
