import { StringDecoder } from "node:string_decoder";
import { BlobType, type TreeNode } from "../repo/format.js";
import type { BlobWriter } from "../repo/blob-writer.js";
import type { Repository } from "../repo/repository.js";
import { ContentChunker } from "./content-chunker.js";

/**
 * The file list of a snapshot is a stream of JSON lines (one TreeNode each), cut into tree blobs by
 * the content-defined chunker. An unchanged file yields the same line as last time, so a snapshot in
 * which ten files grew stores a handful of new tree blobs, not a new copy of the whole list.
 */
export class TreeWriter {
  private readonly stream: ContentChunker;

  constructor(repo: Repository, writer: BlobWriter) {
    this.stream = new ContentChunker(repo, writer, repo.treeChunker, BlobType.Tree);
  }

  add(node: TreeNode): Promise<void> {
    return this.stream.push(Buffer.from(JSON.stringify(node) + "\n"));
  }

  async finish(): Promise<string[]> {
    return (await this.stream.end()).ids;
  }
}

/** Where readTree gets tree blobs: their plaintexts in order, a batch at a time (BlobReader.batches). */
export interface TreeBlobSource {
  batches(ids: string[]): AsyncIterable<Buffer[]>;
}

/** A TreeBlobSource over a function that reads blobs by id (copy and repair read from two places). */
export function treeSource(read: (ids: string[]) => Promise<Buffer[]>, batch = 64): TreeBlobSource {
  return {
    async *batches(ids) {
      for (let i = 0; i < ids.length; i += batch) yield await read(ids.slice(i, i + batch));
    },
  };
}

/** Stream the nodes of a tree, holding a few tree blobs (plus one partial line) at a time. */
export async function* readTree(reader: TreeBlobSource, treeIds: readonly string[]): AsyncGenerator<TreeNode> {
  let carry = "";
  // A multi-byte character can straddle two tree blobs.
  const decoder = new StringDecoder("utf8");
  // Batches by bytes, the next one in flight: a tree's blobs share frames, and each batch reads
  // each of its frames once (batches of a fixed count of blobs read the same frames again and again).
  for await (const blobs of reader.batches([...treeIds])) {
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
