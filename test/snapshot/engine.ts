// The snapshot engine in this test process, on a sandbox's repository, as the watcher runs it: one
// Repository kept open, createSnapshot per change, and the stored nodes read back through the index.

import path from "node:path";
import { readKeyFile } from "../../src/config/credentials.js";
import { BlobReader } from "../../src/repo/blob-reader.js";
import type { TreeNode } from "../../src/repo/format.js";
import { Repository } from "../../src/repo/repository.js";
import { SealPool } from "../../src/repo/seal-pool.js";
import { createSnapshot, type SnapshotOptions, type SnapshotResult } from "../../src/snapshot/snapshotter.js";
import { readTree } from "../../src/snapshot/tree.js";
import { LocalTarget } from "../../src/targets/local.js";
import type { Sandbox } from "../helpers/tmp.js";

// Seal on this thread: vitest cannot start the .ts worker script.
process.env.PI_GUARD_WORKERS = "0";

export interface Engine {
  repo: Repository;
  snap(opts?: Partial<SnapshotOptions>): Promise<SnapshotResult>;
  nodes(s: SnapshotResult): Promise<TreeNode[]>;
  node(s: SnapshotResult, rel: string): Promise<TreeNode>;
  bytes(node: TreeNode): Promise<Buffer>;
}

/** The sandbox's repository (made by `pi-guard init`), snapshotting the agent dir as root "agent". */
export async function openEngine(sb: Sandbox): Promise<Engine> {
  const repo = await Repository.open(new LocalTarget(sb.repo), (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!);
  const reader = new BlobReader(repo, new SealPool(0));
  const nodes = async (s: SnapshotResult) => {
    const out: TreeNode[] = [];
    for await (const n of readTree(reader, s.snapshot)) out.push(n);
    return out;
  };
  return {
    repo,
    snap: (opts = {}) => createSnapshot(repo, { roots: [{ name: "agent", path: sb.agentDir }], filter: { include: [], exclude: [] }, host: "test-host", ...opts }),
    nodes,
    async node(s, rel) {
      const found = (await nodes(s)).find((n) => n.path === rel);
      if (!found) throw new Error(`${rel} is not in snapshot ${s.id.slice(0, 8)}`);
      return found;
    },
    bytes: async (node) => Buffer.concat(await reader.read(node.content ?? [])),
  };
}

/** JSONL of `bytes` or a little more, whose lines differ (so the chunker finds cuts), seeded by `seed`. */
/**
 * `jsonl` behind a pi session header, for a file under sessions/: a restore by --path checks that
 * pi will load what it puts back there (its first line must be a header).
 */
export function piSessionJsonl(bytes: number, seed: string): Buffer {
  const header = JSON.stringify({ type: "session", version: 3, id: `0198${Buffer.from(seed).toString("hex").padEnd(28, "0").slice(0, 28)}`, timestamp: "2026-11-30T09:00:00.000Z", cwd: "/p" }) + "\n";
  return Buffer.concat([Buffer.from(header), jsonl(bytes, seed)]);
}

export function jsonl(bytes: number, seed: string): Buffer {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = JSON.stringify({ type: "message", id: `${seed}-${i}`, text: `${seed} line ${i} ${(i * 2654435761) % 1000003} ${"x".repeat(i % 97)}` }) + "\n";
    lines.push(line);
    size += line.length;
  }
  return Buffer.from(lines.join(""));
}
