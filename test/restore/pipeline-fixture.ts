// Shared by the restore read-path tests: a repository of 1 MiB packs (the smallest allowed, so a
// few MiB span many packs and frames) holding one snapshot of the given files, made by the real
// snapshotter, and the snapshot's file nodes read back.

import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { decrypt, encrypt } from "../../src/repo/crypto.js";
import { AAD, packKey, type TreeNode } from "../../src/repo/format.js";
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
  for await (const n of readTree(reader, record.snapshot)) if (n.type === "file") nodes.set(n.path, n);
  return { sb, cred, record, nodes, source };
}

/**
 * Change one bit of one blob inside a stored-raw frame (random bytes do not compress) of the
 * repository in `dir`, and seal the frame again with the right key: it authenticates, but the blob
 * no longer matches its id. The blob is the first of `candidates` in such a frame that `accept`
 * allows; returns its id.
 */
export function damageBlobInRawFrame(repo: Repository, dir: string, candidates: string[], at: number, mask: number, accept: (id: string) => boolean = () => true): string {
  const sealedOf = (id: string) => {
    const loc = repo.index.get(id)!;
    return readFileSync(path.join(dir, packKey(loc.pack))).subarray(loc.offset, loc.offset + loc.length);
  };
  const victim = candidates.find((id) => accept(id) && decrypt(repo.key.encryption, sealedOf(id), "frame", AAD.frame)[0] === 0);
  if (!victim) throw new Error("no blob in a stored-raw frame among the candidates");
  const loc = repo.index.get(victim)!;
  const file = path.join(dir, packKey(loc.pack));
  const pack = readFileSync(file);
  const plain = decrypt(repo.key.encryption, pack.subarray(loc.offset, loc.offset + loc.length), "frame", AAD.frame);
  plain[1 + loc.inFrame + at] ^= mask;
  const resealed = encrypt(repo.key.encryption, plain, AAD.frame);
  if (resealed.length !== loc.length) throw new Error("the re-sealed frame changed length");
  resealed.copy(pack, loc.offset);
  writeFileSync(file, pack);
  return victim;
}
