import { makeDirs, writeFully } from "../fs-safe.js";
import { createHash, type Hash } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { FRAME_TARGET } from "./blob-writer.js";
import { encode } from "./compress.js";
import { encrypt } from "./crypto.js";
import { AAD, encodePackHeader, packKey, type BlobRef, type BlobType, type FrameRef, type PackEntry, type PackedBlob } from "./format.js";
import type { Repository } from "./repository.js";
import { stagingName } from "./staging.js";

interface OpenPack {
  file: string;
  handle: fs.FileHandle;
  hash: Hash;
  size: number;
  frames: FrameRef[];
  blobs: PackedBlob[];
  /** Blobs waiting to be sealed together as the next frame. */
  pending: { parts: Buffer[]; blobs: BlobRef[]; raw: number };
}

/**
 * Writes blobs that prune keeps into new packs. Unlike BlobWriter it does not skip blobs the index
 * already holds (moving them is the point), and it frames them afresh: a frame is sealed only from
 * the plaintexts of blobs that stay, so no byte of a dropped blob is carried over. Packs are built
 * in the staging folder like a snapshot's (one per blob type) and become objects only when closed;
 * nothing names them until prune writes its index.
 */
export class RepackWriter {
  private readonly open = new Map<BlobType, OpenPack>();
  readonly written: PackEntry[] = [];
  bytesWritten = 0;

  constructor(private readonly repo: Repository) {}

  async add(type: BlobType, id: string, plain: Buffer): Promise<void> {
    let pack = this.open.get(type);
    if (!pack) this.open.set(type, (pack = await this.openPack()));
    pack.pending.parts.push(plain);
    pack.pending.blobs.push({ type, id, rawLength: plain.length });
    pack.pending.raw += plain.length;
    if (pack.pending.raw >= FRAME_TARGET) await this.flushFrame(type, pack);
  }

  private async openPack(): Promise<OpenPack> {
    const dir = this.repo.stagingDir;
    await makeDirs(dir);
    const file = path.join(dir, stagingName());
    const handle = await fs.open(file, "wx", 0o600);
    return { file, handle, hash: createHash("sha256"), size: 0, frames: [], blobs: [], pending: { parts: [], blobs: [], raw: 0 } };
  }

  private async flushFrame(type: BlobType, pack: OpenPack): Promise<void> {
    const { parts, blobs } = pack.pending;
    if (blobs.length === 0) return;
    pack.pending = { parts: [], blobs: [], raw: 0 };
    const frame = encrypt(this.repo.key.encryption, encode(Buffer.concat(parts)), AAD.frame);
    await writeFully(pack.handle, frame, pack.size);
    pack.hash.update(frame);
    let inFrame = 0;
    for (const b of blobs) {
      pack.blobs.push({ ...b, offset: pack.size, length: frame.length, inFrame });
      inFrame += b.rawLength;
    }
    pack.frames.push({ length: frame.length, blobs });
    pack.size += frame.length;
    if (pack.size >= this.repo.config.packSize) await this.closePack(type);
  }

  /** Same layout as BlobWriter's packs (docs/FORMAT.md §5). */
  private async closePack(type: BlobType): Promise<void> {
    const pack = this.open.get(type);
    if (!pack) return;
    this.open.delete(type);
    const header = encrypt(this.repo.key.encryption, encodePackHeader(pack.frames), AAD.packHeader);
    const trailer = Buffer.alloc(4);
    trailer.writeUInt32LE(header.length);
    const tail = Buffer.concat([header, trailer]);
    const id = pack.hash.update(tail).digest("hex");
    const size = pack.size + tail.length;
    try {
      try {
        await writeFully(pack.handle, tail, pack.size);
        await pack.handle.sync();
      } finally {
        await pack.handle.close();
      }
      await this.repo.target.putFile(packKey(id), pack.file);
    } catch (err) {
      await fs.unlink(pack.file).catch(() => undefined);
      throw err;
    }
    this.written.push({ id, size, blobs: pack.blobs });
    this.bytesWritten += size;
  }

  /** Seal the last frames and close every pack; returns the packs written. */
  async finish(): Promise<PackEntry[]> {
    for (const [type, pack] of [...this.open]) {
      await this.flushFrame(type, pack);
      await this.closePack(type);
    }
    return this.written;
  }

  /** Give up before any index names the new packs: remove them and the staging files. */
  async abort(): Promise<void> {
    for (const pack of this.open.values()) {
      await pack.handle.close().catch(() => undefined);
      await fs.unlink(pack.file).catch(() => undefined);
    }
    this.open.clear();
    for (const pack of this.written.splice(0)) await this.repo.target.delete(packKey(pack.id)).catch(() => undefined);
  }
}
