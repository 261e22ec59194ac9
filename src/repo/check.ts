import { createHash } from "node:crypto";
import { decrypt } from "./crypto.js";
import { decode } from "./compress.js";
import { blobId } from "./crypto.js";
import { RepoError } from "./errors.js";
import { AAD, decodePackHeader, packKey, type TreeNode } from "./format.js";
import type { Repository, SnapshotRecord } from "./repository.js";
import { BlobReader } from "./blob-reader.js";
import { checkKeyObjects } from "./check-keys.js";
import { SealPool } from "./seal-pool.js";
import type { BlobLocation } from "./memory-index.js";
import { readTree } from "../snapshot/tree.js";

export interface CheckProblem {
  severity: "error" | "warning";
  message: string;
}

export interface DamagedFile {
  snapshot: string;
  root: string;
  path: string;
}

export interface CheckReport {
  ok: boolean;
  snapshots: number;
  packs: number;
  blobs: number;
  packsRead: number;
  bytesRead: number;
  problems: CheckProblem[];
  /** Files whose data sits in damaged or missing blobs, per snapshot (for --read-data). */
  damagedFiles: DamagedFile[];
}

/**
 * Structure check: every index and snapshot decrypts, every blob a snapshot needs is indexed and its
 * pack exists with the indexed size. With readData, every pack is read in full: its name must be the
 * SHA-256 of its bytes and every blob must decrypt and match its id.
 */
export async function checkRepository(
  repo: Repository,
  opts: { readData?: boolean; onProgress?: (p: { packs: number; total: number }) => void } = {},
): Promise<CheckReport> {
  const problems: CheckProblem[] = [];
  const error = (message: string) => problems.push({ severity: "error", message });
  const warn = (message: string) => problems.push({ severity: "warning", message });
  problems.push(...(await checkKeyObjects(repo.target)));
  // What loading skips is reported below as a problem, not also as a warning on the way.
  const onWarning = repo.onWarning;
  repo.onWarning = () => undefined;
  try {
    await repo.loadIndex({ fromTarget: true });
  } catch (err) {
    if (!(err instanceof RepoError)) throw err;
    error(err.message);
  } finally {
    repo.onWarning = onWarning;
  }
  const index = repo.index;
  for (const bad of repo.unreadableIndexes) error(`${bad.error}; \`pi-guard repair index\` rebuilds the index from the packs`);
  for (const bad of repo.unreadablePacks) error(`${bad.error} (it is in no readable index)`);
  const present = new Map<string, number>();
  for await (const obj of repo.target.list("data")) present.set(obj.key.split("/").pop()!, obj.size);
  for (const [pack, size] of index.packs) {
    const actual = present.get(pack);
    if (actual === undefined) error(`pack ${pack.slice(0, 12)} is in the index but missing`);
    else if (actual !== size) error(`pack ${pack.slice(0, 12)} has ${actual} bytes, the index says ${size}`);
  }
  const unreadablePacks = new Set(repo.unreadablePacks.map((p) => p.id));
  const orphans = [...present.keys()].filter((p) => !index.packs.has(p) && !unreadablePacks.has(p));
  if (orphans.length) {
    warn(`${orphans.length} pack(s) are not in any index (left by an interrupted snapshot or prune; \`pi-guard repair index\` indexes them, \`pi-guard prune\` removes them)`);
  }

  const badBlobs = new Set<string>();
  let packsRead = 0;
  let bytesRead = 0;
  if (opts.readData) {
    // Leftover packs are read too: every object in data/ must match its name.
    const total = [...index.packs.keys(), ...orphans.filter((p) => /^[0-9a-f]{64}$/.test(p))].filter((p) => present.has(p));
    const byPack = new Map<string, IndexedBlob[]>();
    for (const [id, loc] of index.entries()) {
      const list = byPack.get(loc.pack) ?? [];
      list.push({ id, ...loc });
      byPack.set(loc.pack, list);
    }
    for (const pack of total) {
      const damaged = await verifyPack(repo, pack, byPack.get(pack) ?? []);
      packsRead++;
      bytesRead += present.get(pack) ?? 0;
      for (const msg of damaged.messages) error(msg);
      for (const id of damaged.blobs) badBlobs.add(id);
      opts.onProgress?.({ packs: packsRead, total: total.length });
    }
  }

  let snapshots: SnapshotRecord[] = [];
  const damagedFiles: DamagedFile[] = [];
  const missingPacks = new Set([...index.packs.keys()].filter((p) => !present.has(p)));
  const pool = new SealPool(0);
  try {
    snapshots = await repo.listSnapshots({ fromTarget: true });
    for (const bad of repo.unreadableSnapshots) error(bad.error);
    const reader = new BlobReader(repo, pool);
    const unusable = (id: string) => {
      const loc = index.get(id);
      return !loc || badBlobs.has(id) || missingPacks.has(loc.pack);
    };
    for (const { id, snapshot } of snapshots) {
      const brokenTree = snapshot.tree.filter(unusable);
      if (brokenTree.length) {
        error(`snapshot ${id.slice(0, 8)}: ${brokenTree.length} tree blob(s) missing or damaged; its file list cannot be read`);
        continue;
      }
      try {
        for await (const node of readTree(reader, snapshot.tree)) {
          if (node.type !== "file") continue;
          const missing = (node.content ?? []).filter(unusable);
          if (missing.length) damagedFiles.push({ snapshot: id, root: node.root, path: node.path });
        }
      } catch (err) {
        if (!(err instanceof RepoError)) throw err;
        error(`snapshot ${id.slice(0, 8)}: ${err.message}`);
      }
    }
  } finally {
    await pool.close();
  }
  for (const f of damagedFiles) error(`snapshot ${f.snapshot.slice(0, 8)}: ${f.path} has missing or damaged data`);
  return {
    ok: !problems.some((p) => p.severity === "error"),
    snapshots: snapshots.length,
    packs: index.packs.size,
    blobs: index.size,
    packsRead,
    bytesRead,
    problems,
    damagedFiles,
  };
}

type IndexedBlob = BlobLocation & { id: string };

async function verifyPack(repo: Repository, pack: string, indexed: IndexedBlob[]): Promise<{ messages: string[]; blobs: string[] }> {
  const key = packKey(pack);
  const short = pack.slice(0, 12);
  const raw = await repo.target.get(key);
  const messages: string[] = [];
  const actualId = createHash("sha256").update(raw).digest("hex");
  if (actualId !== pack) messages.push(`pack ${short}: content does not match its name (damaged)`);
  // The header is checked too, so that a pack can still be re-indexed from itself.
  try {
    const headerLen = raw.readUInt32LE(raw.length - 4);
    const header = decrypt(repo.key.encryption, raw.subarray(raw.length - 4 - headerLen, raw.length - 4), `pack ${short} header`, AAD.packHeader);
    decodePackHeader(header, `pack ${short} header`);
  } catch (err) {
    messages.push(err instanceof RepoError ? err.message : `pack ${short}: unreadable header`);
  }
  const bad: string[] = [];
  // A frame is sealed as a whole: damage anywhere in it makes all its blobs unreadable.
  const byFrame = new Map<number, IndexedBlob[]>();
  for (const b of indexed) byFrame.set(b.offset, [...(byFrame.get(b.offset) ?? []), b]);
  for (const [offset, blobs] of byFrame) {
    let frame: Buffer;
    try {
      const what = `pack ${short} frame at ${offset}`;
      frame = decode(decrypt(repo.key.encryption, raw.subarray(offset, offset + blobs[0].length), what, AAD.frame), what);
    } catch {
      bad.push(...blobs.map((b) => b.id));
      continue;
    }
    for (const b of blobs) {
      const data = frame.subarray(b.inFrame, b.inFrame + b.rawLength);
      if (data.length !== b.rawLength || !blobId(repo.key.id, data).equals(Buffer.from(b.id, "hex"))) bad.push(b.id);
    }
  }
  if (bad.length) messages.push(`pack ${short}: ${bad.length} blob(s) damaged`);
  return { messages, blobs: bad };
}

export type { TreeNode };
