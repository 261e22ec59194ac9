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

/**
 * What readTreeReusing keeps of one leaf tree blob: the nodes of the lines wholly inside it, and
 * the bytes of the line it ends (`head`) and of the one it starts (`tail`). Empty `nodes` and a
 * null `tail` mean the blob holds no newline: all of it belongs to the line that runs through it.
 */
interface LeafLines {
  head: Buffer;
  nodes: TreeNode[];
  tail: Buffer | null;
}

/**
 * Leaf tree blobs already parsed, by id, and the lines that run across leaves, by the ids of the
 * leaves they run through: what one walk of readTreeReusing leaves for the next (only the last
 * walk's are kept, so it holds about one tree's nodes).
 */
export interface LeafCache {
  leaves: Map<string, LeafLines>;
  spans: Map<string, TreeNode | undefined>;
}

const NEWLINE = 0x0a;

function leafLines(blob: Buffer): LeafLines {
  const first = blob.indexOf(NEWLINE);
  if (first < 0) return { head: Buffer.from(blob), nodes: [], tail: null };
  const last = blob.lastIndexOf(NEWLINE);
  const nodes: TreeNode[] = [];
  // A newline never falls inside a UTF-8 sequence, so each line decodes on its own exactly as
  // readTree's decoder of the whole stream decodes it, invalid bytes included.
  for (let start = first + 1; start < last; ) {
    const nl = blob.indexOf(NEWLINE, start);
    if (nl > start) nodes.push(JSON.parse(blob.toString("utf8", start, nl)) as TreeNode);
    start = nl + 1;
  }
  return { head: Buffer.from(blob.subarray(0, first)), nodes, tail: Buffer.from(blob.subarray(last + 1)) };
}

/**
 * readTree's nodes, in the same order, for a caller that walks many snapshots of one tree (the
 * session catalog's history): a leaf blob the last walk read (`cache`) is neither read, decrypted
 * nor parsed again, since unchanged files yield the same leaves. Nodes taken from the cache are
 * the same objects as last time. A walk read to its end leaves its own leaves in `cache`.
 */
export async function* readTreeReusing(reader: TreeBlobSource, ref: TreeRef, cache: LeafCache): AsyncGenerator<TreeNode> {
  const leaves = await treeLeaves(reader, ref);
  const previous = cache.leaves;
  const next = new Map<string, LeafLines>();
  // Each missing leaf once, in the order of its first use: a leaf named twice is parsed once.
  const fetched = reader.batches([...new Set(leaves.filter((id) => !previous.has(id)))])[Symbol.asyncIterator]();
  let batch: Buffer[] = [];
  let taken = 0;
  const fetch = async (): Promise<Buffer> => {
    while (taken === batch.length) {
      const r = await fetched.next();
      if (r.done) throw new RepoError("its tree blobs were not all read", "corrupt");
      [batch, taken] = [r.value, 0];
    }
    return batch[taken++];
  };
  // The line that runs on into the next blobs, in pieces: joined once, when its newline comes.
  // Its bytes are named by the leaves it runs through (^: it starts the tree, $: it ends it), so
  // a line across two unchanged leaves is not joined and parsed again either.
  let carry: Buffer[] = [];
  let through = "^";
  const spans = new Map<string, TreeNode | undefined>();
  const spanned = (key: string): TreeNode | undefined => {
    const known = spans.has(key) ? spans : cache.spans.has(key) ? cache.spans : undefined;
    let node = known?.get(key);
    if (!known) {
      const bytes = carry.length === 1 ? carry[0] : Buffer.concat(carry);
      if (bytes.length) node = JSON.parse(bytes.toString("utf8")) as TreeNode;
    }
    spans.set(key, node);
    return node;
  };
  for (const id of leaves) {
    const leaf = next.get(id) ?? previous.get(id) ?? leafLines(await fetch());
    next.set(id, leaf);
    carry.push(leaf.head);
    through += `,${id}`;
    if (leaf.tail === null) continue;
    const node = spanned(through);
    if (node) yield node;
    yield* leaf.nodes;
    carry = [leaf.tail];
    through = id;
  }
  const node = spanned(`${through},$`);
  if (node) yield node;
  cache.leaves = next;
  cache.spans = spans;
}
