/**
 * A pack being built in the repository's local staging folder (docs/FORMAT.md §5): frames are
 * appended as they are sealed, then the sealed header and its length close it, and the finished,
 * fsynced file is handed to the target whole. Shared by snapshots (BlobWriter) and prune (RepackWriter).
 */
import { makeDirs, writeFully } from "../fs-safe.js";
import { createHash, type Hash } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { encrypt } from "./crypto.js";
import { AAD, encodePackHeader, packKey, type BlobRef, type FrameRef, type PackEntry, type PackedBlob } from "./format.js";
import type { Repository } from "./repository.js";
import { stagingName } from "./staging.js";
import { fileBody } from "../targets/target.js";

export class StagedPack {
  size = 0;
  private readonly hash: Hash = createHash("sha256");
  private readonly frames: FrameRef[] = [];
  private readonly blobs: PackedBlob[] = [];

  private constructor(
    private readonly repo: Repository,
    readonly file: string,
    private readonly handle: fs.FileHandle,
  ) {}

  static async open(repo: Repository): Promise<StagedPack> {
    await makeDirs(repo.stagingDir, 0o700);
    const file = path.join(repo.stagingDir, stagingName());
    return new StagedPack(repo, file, await fs.open(file, "wx", 0o600));
  }

  get full(): boolean {
    return this.size >= this.repo.config.packSize;
  }

  /** Append one sealed frame holding `blobs`, in order; every byte is checked written. */
  async appendFrame(frame: Buffer, blobs: BlobRef[]): Promise<void> {
    await writeFully(this.handle, frame, this.size);
    this.hash.update(frame);
    let inFrame = 0;
    for (const b of blobs) {
      this.blobs.push({ ...b, offset: this.size, length: frame.length, inFrame });
      inFrame += b.rawLength;
    }
    this.frames.push({ length: frame.length, blobs });
    this.size += frame.length;
  }

  /**
   * Write header and trailer, store under the pack's hash; the staging file is gone either way.
   * fsync only for a target that moves the file into place (local disk): for a remote one the file
   * is read back once for the upload and deleted, and the target's answer is what makes it durable,
   * so it is not forced to the disk first (mostly it never reaches the disk at all).
   */
  async store(): Promise<PackEntry> {
    const header = encrypt(this.repo.key.encryption, encodePackHeader(this.frames), AAD.packHeader);
    const trailer = Buffer.alloc(4);
    trailer.writeUInt32LE(header.length);
    const tail = Buffer.concat([header, trailer]);
    const id = this.hash.update(tail).digest("hex");
    try {
      try {
        await writeFully(this.handle, tail, this.size);
        if (this.repo.target.localPath) await this.handle.sync();
      } finally {
        await this.handle.close();
      }
      await this.repo.target.put(packKey(id), fileBody(this.file, this.size + tail.length), { sha256: id });
    } finally {
      // Moved into place by a local target, uploaded and left behind by others. A file that
      // cannot be removed must not hide the put's own outcome; a later run clears dead staging.
      await fs.rm(this.file, { force: true }).catch(() => undefined);
    }
    return { id, size: this.size + tail.length, blobs: this.blobs };
  }

  /** Give up on an unfinished pack. */
  async discard(): Promise<void> {
    await this.handle.close().catch(() => undefined);
    await fs.unlink(this.file).catch(() => undefined);
  }
}
