import { StringDecoder } from "node:string_decoder";
import { BlobType, ID_BYTES, MAX_TREE_LEAVES, type TreeNode, type TreeRef } from "../repo/format.js";
import type { BlobWriter } from "../repo/blob-writer.js";
import { RepoError } from "../repo/errors.js";
import type { Repository } from "../repo/repository.js";
import { ContentChunker } from "./content-chunker.js";

/** A node as the tree stream holds it: one JSON line. */
export const treeLine = (node: TreeNode): Buffer => Buffer.from(JSON.stringify(node) + "\n");

/**
 * The file list of a snapshot is a stream of JSON lines (one TreeNode each), cut into leaf tree
 * blobs by the content-defined chunker. An unchanged file yields the same line as last time, so a
 * snapshot in which ten files grew stores a handful of new leaf blobs, not a new copy of the whole
 * list. The leaf ids, 32 bytes each, are cut again into tree list blobs (docs/FORMAT.md §8), so
 * the snapshot object names a few list blobs instead of every leaf: its size no longer grows with
 * the leaf count, and small leaves pay off however large the tree is.
 */
export class TreeWriter {
  private readonly stream: ContentChunker;
  private readonly list: ContentChunker;

  constructor(repo: Repository, writer: BlobWriter) {
    this.stream = new ContentChunker(repo, writer, repo.treeChunker, BlobType.Tree);
    this.list = new ContentChunker(repo, writer, repo.listChunker, BlobType.Tree);
  }

  add(node: TreeNode): Promise<void> {
    return this.addLine(treeLine(node));
  }

  /** A node already serialised by treeLine. */
  addLine(line: Buffer): Promise<void> {
    return this.stream.push(line);
  }

  /** The leaf ids, and the list blobs that hold them (the snapshot's `treeList`). */
  async finish(): Promise<{ leaves: string[]; treeList: string[] }> {
    const leaves = (await this.stream.end()).ids;
    for (const id of leaves) await this.list.push(Buffer.from(id, "hex"));
    return { leaves, treeList: (await this.list.end()).ids };
  }
}

/** Where readTree gets tree blobs: their plaintexts in order, a batch at a time (BlobReader.batches). */
export interface TreeBlobSource {
  batches(ids: string[]): AsyncIterable<Buffer[]>;
  /** A blob's type as the index records it (undefined: not indexed), where the source can tell. */
  typeOf?(id: string): BlobType | undefined;
}

/** A TreeBlobSource over a function that reads blobs by id (copy and repair read from two places). */
export function treeSource(read: (ids: string[]) => Promise<Buffer[]>, batch = 64, typeOf?: TreeBlobSource["typeOf"]): TreeBlobSource {
  return {
    typeOf,
    async *batches(ids) {
      for (let i = 0; i < ids.length; i += batch) yield await read(ids.slice(i, i + batch));
    },
  };
}

/**
 * The leaf tree blob ids of a snapshot: its `tree` (version 1), or the ids its `treeList` blobs
 * hold (version 2). The lists are hostile input: bounded (MAX_TREE_LEAVES), whole ids, and every
 * id a tree blob where the source knows types. There are exactly two levels: a leaf is never read
 * as a list, so a list that names itself or another list is a leaf that is not JSON lines.
 */
export async function treeLeaves(source: TreeBlobSource, ref: TreeRef): Promise<string[]> {
  // Read objects may come unvalidated (repair reads what it can): a wrong shape is no file list.
  const ids = (v: unknown): v is string[] => Array.isArray(v) && v.every((t) => typeof t === "string");
  if (ref.treeList === undefined) {
    if (!ids(ref.tree)) throw new RepoError("its tree is not a list of ids", "corrupt");
    return [...ref.tree];
  }
  if (!ids(ref.treeList)) throw new RepoError("its treeList is not a list of ids", "corrupt");
  notTree(source, ref.treeList, "tree list blob");
  const leaves: string[] = [];
  let carry = Buffer.alloc(0);
  for await (const blobs of source.batches([...ref.treeList])) {
    for (const blob of blobs) {
      const bytes = carry.length ? Buffer.concat([carry, blob]) : blob;
      const whole = bytes.length - (bytes.length % ID_BYTES);
      if (leaves.length + whole / ID_BYTES > MAX_TREE_LEAVES) throw new RepoError(`its tree list names more than ${MAX_TREE_LEAVES} tree blobs`, "corrupt");
      for (let o = 0; o < whole; o += ID_BYTES) leaves.push(bytes.toString("hex", o, o + ID_BYTES));
      carry = Buffer.from(bytes.subarray(whole));
    }
  }
  if (carry.length) throw new RepoError(`its tree list ends in ${carry.length} bytes that are no whole blob id`, "corrupt");
  notTree(source, leaves, "tree blob");
  return leaves;
}

/** Refuse ids the index has as another type (a data blob named as part of a file list). */
function notTree(source: TreeBlobSource, ids: readonly string[], what: string): void {
  if (!source.typeOf) return;
  for (const id of ids) {
    const type = source.typeOf(id);
    if (type !== undefined && type !== BlobType.Tree) throw new RepoError(`its ${what} ${id.slice(0, 12)} is a data blob, not a tree blob`, "corrupt");
  }
}

/** Stream the nodes of a tree, holding a few tree blobs (plus one partial line) at a time. */
export async function* readTree(reader: TreeBlobSource, ref: TreeRef): AsyncGenerator<TreeNode> {
  let carry = "";
  // A multi-byte character can straddle two tree blobs.
  const decoder = new StringDecoder("utf8");
  // Batches by bytes, the next one in flight: a tree's blobs share frames, and each batch reads
  // each of its frames once (batches of a fixed count of blobs read the same frames again and again).
  for await (const blobs of reader.batches(await treeLeaves(reader, ref))) {
    for (const blob of blobs) {
      const lines = (carry + decoder.write(blob)).split("\n");
      carry = lines.pop() ?? "";
      for (const line of lines) if (line) yield JSON.parse(line) as TreeNode;
    }
  }
  carry += decoder.end();
  if (carry) yield JSON.parse(carry) as TreeNode;
}

export const nodeKey = (root: string, path: string): string => `${root}\0${path}`;
