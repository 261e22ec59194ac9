// Shared by the restore read-path tests: a repository of 1 MiB packs (the smallest allowed, so a
// few MiB span many packs and frames) holding one snapshot of the given files, made by the real
// snapshotter, and the snapshot's file nodes read back.

import { randomBytes } from "node:crypto";
import path from "node:path";
import type { TreeNode } from "../../src/repo/format.js";
import type { Credentials } from "../../src/repo/keys.js";
import { BlobReader } from "../../src/repo/blob-reader.js";
import { Repository, type SnapshotRecord } from "../../src/repo/repository.js";
import { SealPool } from "../../src/repo/seal-pool.js";
import { createSnapshot } from "../../src/snapshot/snapshotter.js";
import { readTree } from "../../src/snapshot/tree.js";
import { LocalTarget } from "../../src/targets/local.js";
import { makeSandbox, writeFileExact, type Sandbox } from "../helpers/tmp.js";

export interface PipelineFixture {
  sb: Sandbox;
  cred: Credentials;
  record: SnapshotRecord;
  /** The snapshot's files by path relative to the agent dir. */
  nodes: Map<string, TreeNode>;
  /** What each file held when the snapshot was taken. */
  source: Map<string, Buffer>;
}

export async function pipelineFixture(label: string, files: [string, Buffer][]): Promise<PipelineFixture> {
  const sb = makeSandbox(label);
  const cred: Credentials = { kind: "keyfile", secret: randomBytes(32), path: "test" };
  const repo = await Repository.init(new LocalTarget(sb.repo), cred, { packSize: 1024 * 1024 });
  const source = new Map<string, Buffer>();
  for (const [rel, data] of files) {
    writeFileExact(path.join(sb.agentDir, rel), data, 0o600);
    source.set(rel, data);
  }
  await createSnapshot(repo, { roots: [{ name: "agent", path: sb.agentDir }], filter: { include: [], exclude: [] } });
  const record = (await repo.listSnapshots())[0];
  const nodes = new Map<string, TreeNode>();
  const reader = new BlobReader(repo, new SealPool(0));
  for await (const n of readTree(reader, record.snapshot.tree)) if (n.type === "file") nodes.set(n.path, n);
  return { sb, cred, record, nodes, source };
}
