import { FRAME_TARGET } from "./blob-writer.js";
import { encode } from "./compress.js";
import { encrypt } from "./crypto.js";
import { AAD, packKey, type BlobRef, type BlobType, type PackEntry } from "./format.js";
import type { Repository } from "./repository.js";
import { StagedPack } from "./staged-pack.js";

interface OpenPack {
  staged: StagedPack;
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
    return { staged: await StagedPack.open(this.repo), pending: { parts: [], blobs: [], raw: 0 } };
  }

  private async flushFrame(type: BlobType, pack: OpenPack): Promise<void> {
    const { parts, blobs } = pack.pending;
    if (blobs.length === 0) return;
    pack.pending = { parts: [], blobs: [], raw: 0 };
    const frame = encrypt(this.repo.key.encryption, encode(Buffer.concat(parts)), AAD.frame);
    await pack.staged.appendFrame(frame, blobs);
    if (pack.staged.full) await this.closePack(type);
  }

    private async closePack(type: BlobType): Promise<void> {
    const pack = this.open.get(type);
    if (!pack) return;
    this.open.delete(type);
    const stored = await pack.staged.store();
    this.written.push(stored);
    this.bytesWritten += stored.size;
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
      await pack.staged.discard();
    }
    this.open.clear();
    for (const pack of this.written.splice(0)) await this.repo.target.delete(packKey(pack.id)).catch(() => undefined);
  }
}
