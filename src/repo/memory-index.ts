import type { BlobType, PackEntry } from "./format.js";

export interface BlobLocation {
  pack: string;
  type: BlobType;
  offset: number;
  length: number;
  inFrame: number;
  rawLength: number;
}

/** Every blob the repository holds, keyed by id, merged from all index files. */
export class MemoryIndex {
  readonly blobs = new Map<string, BlobLocation>();
  readonly packs = new Map<string, number>();
  /** Index files loaded, by id; consolidation replaces them. */
  readonly files = new Set<string>();

  addPack(pack: PackEntry): void {
    this.packs.set(pack.id, pack.size);
    for (const b of pack.blobs) {
      // A blob can sit in two packs after two hosts uploaded it concurrently; either copy will do.
      if (!this.blobs.has(b.id)) {
        this.blobs.set(b.id, { pack: pack.id, type: b.type, offset: b.offset, length: b.length, inFrame: b.inFrame, rawLength: b.rawLength });
      }
    }
  }

  has(id: string): boolean {
    return this.blobs.has(id);
  }

  get(id: string): BlobLocation | undefined {
    return this.blobs.get(id);
  }
}
