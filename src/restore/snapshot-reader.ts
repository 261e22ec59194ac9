import { BlobReader } from "../repo/blob-reader.js";
import type { TreeNode, TreeRef } from "../repo/format.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { SealPool } from "../repo/seal-pool.js";
import { readTree, readTreeReusing, type LeafCache } from "../snapshot/tree.js";

/**
 * Read-only access to the files of snapshots, for `sessions` and `export`: list a snapshot's
 * files and read one file's bytes (every blob verified against its id). Close it when done.
 */
export class SnapshotReader {
  private readonly pool: SealPool;
  private readonly reader: BlobReader;

  private constructor(private readonly repo: Repository, workers: number) {
    this.pool = new SealPool(workers);
    this.reader = new BlobReader(repo, this.pool);
  }

  /** workers = 0 decrypts on the calling thread: best for many small reads. */
  static async open(repo: Repository, workers = 0): Promise<SnapshotReader> {
    await repo.loadIndex();
    return new SnapshotReader(repo, workers);
  }

  snapshots(): Promise<SnapshotRecord[]> {
    return this.repo.listSnapshots();
  }

  /** The nodes of a snapshot's tree (its `tree` or `treeList`), in (root, path) order. */
  files(tree: TreeRef): AsyncGenerator<TreeNode> {
    return readTree(this.reader, tree);
  }

  /** files(tree), reading only the leaf tree blobs the last walk with this cache did not (readTreeReusing). */
  filesReusing(tree: TreeRef, cache: LeafCache): AsyncGenerator<TreeNode> {
    return readTreeReusing(this.reader, tree, cache);
  }

  /** The file's bytes in order, a batch of blobs at a time. */
  stream(node: TreeNode): AsyncGenerator<Buffer> {
    return this.reader.stream(node.content ?? []);
  }

  async read(node: TreeNode): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const part of this.stream(node)) parts.push(part);
    return Buffer.concat(parts);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
