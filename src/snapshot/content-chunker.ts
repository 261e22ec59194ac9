import type { BlobType } from "../repo/format.js";
import type { BlobWriter } from "../repo/blob-writer.js";
import type { Repository } from "../repo/repository.js";
import type { Chunker } from "../repo/chunker.js";

const BLOCK = 1024 * 1024;

/**
 * Streams bytes through the content-defined chunker into the blob writer. Holds at most one block
 * plus one maximum-size chunk, whatever the size of the input: memory does not grow with the file.
 */
export class ContentChunker {
  private readonly buf: Buffer;
  private have = 0;
  private ids: string[] = [];
  private lengths: number[] = [];

  constructor(
    private readonly repo: Repository,
    /** Without a writer the chunker only computes ids (restore uses that to compare files). */
    private readonly writer: BlobWriter | undefined,
    private readonly chunker: Chunker,
    private readonly type: BlobType,
  ) {
    this.buf = chunker.workBuffer(BLOCK + chunker.params.max);
  }

  /** Room left in the internal buffer; `fill` writes straight into it to avoid a copy. */
  get space(): Buffer {
    return this.buf.subarray(this.have);
  }

  async filled(n: number): Promise<void> {
    this.have += n;
    if (this.have === this.buf.length) await this.cut(false);
  }

  async push(data: Uint8Array): Promise<void> {
    let off = 0;
    while (off < data.length) {
      const n = Math.min(data.length - off, this.buf.length - this.have);
      this.buf.set(data.subarray(off, off + n), this.have);
      off += n;
      await this.filled(n);
    }
  }

  /** Flush the last chunk and hand back the chunk list; the chunker is then ready for the next input. */
  async end(): Promise<{ ids: string[]; lengths: number[] }> {
    await this.cut(true);
    const out = { ids: this.ids, lengths: this.lengths };
    this.ids = [];
    this.lengths = [];
    return out;
  }

  private async cut(final: boolean): Promise<void> {
    const { buf, chunker } = this;
    const ranges: number[] = [];
    const ids: string[] = [];
    let pos = 0;
    // Without `final`, cut only where the chunker can see a whole maximum-size window.
    while (pos < this.have && (final || this.have - pos >= chunker.params.max)) {
      const end = chunker.boundary(buf, pos, this.have);
      ranges.push(pos, end);
      ids.push(this.repo.blobId(buf.subarray(pos, end)));
      this.lengths.push(end - pos);
      pos = end;
    }
    this.ids.push(...ids);
    if (this.writer) await this.writer.add(this.type, buf, ranges, ids);
    buf.copy(buf, 0, pos, this.have);
    this.have -= pos;
  }
}
