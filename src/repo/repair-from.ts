/**
 * `repair --from A --to B`: heal one replica of a repository from another (docs/FORMAT.md §14).
 * Every pack of B is read in full and checked against its name; every index file and snapshot
 * object of B is read. Then, under B's exclusive lock:
 *  - blobs that B's index places in a missing or damaged pack are written again into new packs:
 *    from the damaged pack itself where their frame still authenticates and matches the id
 *    (salvaged), otherwise from A (read through A's index and verified);
 *  - so is every blob a snapshot of B uses that B no longer holds;
 *  - one new index file names the good packs and the new ones and supersedes every index file;
 *  - damaged snapshot objects are replaced by A's copy (verbatim, checked against the name);
 *  - only then are the damaged packs (each of whose blobs now lives elsewhere) and the superseded
 *    index files deleted.
 * What cannot be healed (A lacks it too, or A's copy is damaged) is reported exactly, and the
 * damaged objects that hold it are kept. A crash at any point leaves B no worse than before: new
 * packs unindexed, or a new index beside the files it supersedes (readers ignore those).
 */
import { BlobReader } from "./blob-reader.js";
import { BlobWriter } from "./blob-writer.js";
import { decode } from "./compress.js";
import { blobId, decrypt } from "./crypto.js";
import { RepoError } from "./errors.js";
import { AAD, BlobType, indexKey, packKey, snapshotKey, type IndexFile, type PackEntry, type Snapshot } from "./format.js";
import { acquireLock, type Lock } from "./lock.js";
import { MemoryIndex } from "./memory-index.js";
import { readPackHeader } from "./pack-scan.js";
import { listSnapshotIds } from "./peek.js";
import { removeWriterTempFiles } from "./repair-index.js";
import { sha256Hex, type Repository } from "./repository.js";
import { SealPool } from "./seal-pool.js";
import { readTree, treeSource } from "../snapshot/tree.js";
import { listNames, ObjectNotFound } from "../targets/target.js";

export interface RepairFromReport {
  from: string;
  to: string;
  dryRun: boolean;
  packs: { checked: number; missing: string[]; damaged: string[] };
  indexFiles: { listed: number; damaged: string[] };
  snapshots: { checked: number; damaged: string[]; replaced: string[] };
  /** Blobs written again into new packs: salvaged from B's damaged packs, or copied from A. */
  blobs: { salvaged: number; copied: number; bytesCopied: number; dropped: number };
  packsWritten: number;
  newIndex: string | null;
  /** Objects removed after the new index was in place (damaged packs, superseded index files). */
  deleted: { packs: string[]; indexFiles: string[] };
  /**
   * What neither B nor A could supply and a snapshot of B needs: the damaged objects that hold it are
   * kept. (`blobs.dropped` counts lost blobs no snapshot uses: their index entries go, as in `repair index`.)
   */
  unhealed: { blobs: string[]; snapshots: { id: string; error: string }[] };
  /** Snapshots A has that B never had (not damage: `copy` sends them). */
  notOnDestination: number;
  /** B had nothing to heal. */
  sound: boolean;
}

const short = (id: string) => id.slice(0, 12);
const HEX = /^[0-9a-f]{64}$/;

/** The blobs of a damaged pack whose frame still authenticates and whose bytes match their ids. */
function salvage(repo: Repository, raw: Buffer, entry: PackEntry): Map<string, { type: BlobType; plain: Buffer }> {
  const out = new Map<string, { type: BlobType; plain: Buffer }>();
  const frames = new Map<number, PackEntry["blobs"]>();
  for (const b of entry.blobs) frames.set(b.offset, [...(frames.get(b.offset) ?? []), b]);
  for (const [offset, blobs] of frames) {
    let frame: Buffer;
    try {
      if (offset + blobs[0].length > raw.length) continue;
      frame = decode(decrypt(repo.key.encryption, raw.subarray(offset, offset + blobs[0].length), "frame", AAD.frame), "frame");
    } catch {
      continue;
    }
    for (const b of blobs) {
      const plain = frame.subarray(b.inFrame, b.inFrame + b.rawLength);
      if (plain.length === b.rawLength && blobId(repo.key.id, plain).equals(Buffer.from(b.id, "hex"))) out.set(b.id, { type: b.type === BlobType.Tree ? BlobType.Tree : BlobType.Data, plain: Buffer.from(plain) });
    }
  }
  return out;
}

export async function repairFrom(source: Repository, dest: Repository, opts: { dryRun?: boolean; lockWaitMs?: number; onProgress?: (line: string) => void } = {}): Promise<RepairFromReport> {
  const waitMs = opts.lockWaitMs ?? 60_000;
  const dryRun = !!opts.dryRun;
  const destLock = await acquireLock(dest, { mode: dryRun ? "shared" : "exclusive", command: dryRun ? "repair --dry-run" : "repair", waitMs });
  let sourceLock: Lock | undefined;
  const pool = new SealPool();
  let writer: BlobWriter | undefined;
  try {
    sourceLock = await acquireLock(source, { mode: "shared", command: "repair (source)", waitMs });
    return await heal(source, dest, destLock, dryRun, pool, (w) => (writer = w), opts.onProgress);
  } catch (err) {
    await writer?.abort();
    throw err;
  } finally {
    await pool.close();
    await sourceLock?.release();
    await destLock.release();
  }
}

async function heal(source: Repository, dest: Repository, lock: Lock, dryRun: boolean, pool: SealPool, setWriter: (w: BlobWriter) => void, progress?: (line: string) => void): Promise<RepairFromReport> {
  const report: RepairFromReport = {
    from: source.target.location,
    to: dest.target.location,
    dryRun,
    packs: { checked: 0, missing: [], damaged: [] },
    indexFiles: { listed: 0, damaged: [] },
    snapshots: { checked: 0, damaged: [], replaced: [] },
    blobs: { salvaged: 0, copied: 0, bytesCopied: 0, dropped: 0 },
    packsWritten: 0,
    newIndex: null,
    deleted: { packs: [], indexFiles: [] },
    unhealed: { blobs: [], snapshots: [] },
    notOnDestination: 0,
    sound: true,
  };
  if (!dryRun) await removeWriterTempFiles(dest.target, dest.stagingDir, "all");

  // Index files: the live readable ones say where blobs should be.
  const listed = await listNames(dest.target, "index");
  report.indexFiles.listed = listed.length;
  const readable: { id: string; index: IndexFile }[] = [];
  const unreadable: string[] = [];
  for (const id of listed) {
    try {
      readable.push({ id, index: await dest.readIndexFile(id) });
    } catch (err) {
      if (!(err instanceof RepoError) && !(err instanceof ObjectNotFound)) throw err;
      unreadable.push(id);
    }
  }
  const superseded = new Set(readable.flatMap((f) => f.index.supersedes));
  report.indexFiles.damaged = unreadable.filter((id) => !superseded.has(id));
  const indexed = new Map<string, PackEntry>();
  for (const f of readable) if (!superseded.has(f.id)) for (const p of f.index.packs) if (!indexed.has(p.id)) indexed.set(p.id, p);

  // Every pack read in full: its name must be the hash of its bytes.
  const present = new Map<string, number>();
  for await (const obj of dest.target.list("data")) {
    const id = obj.key.split("/").pop()!;
    if (HEX.test(id) && obj.key === packKey(id)) present.set(id, obj.size);
  }
  const good = new Map<string, PackEntry>();
  const damaged = new Map<string, PackEntry | undefined>();
  const salvaged = new Map<string, { type: BlobType; plain: Buffer }>();
  for (const [id, size] of present) {
    report.packs.checked++;
    progress?.(`reading packs ${report.packs.checked}/${present.size}`);
    const raw = await dest.target.get(packKey(id));
    const entry = indexed.get(id);
    if (sha256Hex(raw) === id) {
      if (entry && entry.size === size) good.set(id, entry);
      else {
        try {
          good.set(id, await readPackHeader(dest, id, size));
        } catch (err) {
          if (!(err instanceof RepoError)) throw err;
          damaged.set(id, undefined); // named by its hash but not a pack: nothing can locate its blobs
        }
      }
      continue;
    }
    damaged.set(id, entry);
    const described = entry ?? (await readPackHeader(dest, id, size).catch(() => undefined));
    if (described) for (const [blob, s] of salvage(dest, raw, described)) salvaged.set(blob, s);
  }
  report.packs.damaged = [...damaged.keys()];
  report.packs.missing = [...indexed.keys()].filter((id) => !present.has(id));

  const goodIndex = new MemoryIndex();
  for (const p of good.values()) goodIndex.addPack(p);
  dest.index = goodIndex;
  const writer = dryRun ? undefined : new BlobWriter(dest, pool);
  if (writer) setWriter(writer);
  // Blobs B's index placed in packs that are gone or damaged, and blobs B's snapshots use: all must be held again.
  const needed = new Set<string>();
  const used = new Set<string>();
  for (const id of [...report.packs.missing, ...report.packs.damaged]) for (const b of (indexed.get(id) ?? damaged.get(id))?.blobs ?? []) if (!goodIndex.has(b.id)) needed.add(b.id);

  // Snapshots: B's own when sound, A's copy when damaged.
  await source.loadIndex(true);
  const sourceReader = new BlobReader(source, pool);
  const destReader = new BlobReader(dest, pool);
  const names = await listSnapshotIds(dest.target);
  const replacements: { id: string; raw: Buffer }[] = [];
  const usable: { id: string; snapshot: Snapshot }[] = [];
  for (const id of names) {
    report.snapshots.checked++;
    try {
      usable.push({ id, snapshot: await dest.loadSnapshotFromTarget(id) });
      continue;
    } catch (err) {
      if (!(err instanceof RepoError)) throw err;
      report.snapshots.damaged.push(id);
    }
    try {
      const raw = await source.target.get(snapshotKey(id));
      if (sha256Hex(raw) !== id) throw new RepoError(`its object in ${source.target.location} is damaged too`, "corrupt");
      usable.push({ id, snapshot: await source.loadSnapshotFromTarget(id) });
      replacements.push({ id, raw });
    } catch (err) {
      if (!(err instanceof RepoError) && !(err instanceof ObjectNotFound)) throw err;
      report.unhealed.snapshots.push({ id, error: err instanceof ObjectNotFound ? `snapshot ${id.slice(0, 8)} is damaged and ${source.target.location} does not have it` : `snapshot ${id.slice(0, 8)}: ${err.message}` });
    }
  }
  report.notOnDestination = (await listSnapshotIds(source.target)).filter((id) => !names.includes(id)).length;

  // File lists are read from B's good packs, salvaged blobs, or A, whichever holds them.
  const readAny = async (ids: string[]): Promise<Buffer[]> => {
    const out: Buffer[] = [];
    for (const id of ids) {
      const s = salvaged.get(id);
      if (s) {
        needed.add(id);
        used.add(id);
        out.push(s.plain);
      }
      else if (goodIndex.has(id)) out.push((await destReader.read([id]))[0]);
      else if (source.index.has(id)) {
        needed.add(id);
        used.add(id);
        out.push((await sourceReader.read([id]))[0]);
      } else throw new RepoError(`tree blob ${short(id)} is in neither repository`, "corrupt");
    }
    return out;
  };
  for (const s of usable) {
    try {
      for await (const node of readTree(treeSource(readAny), s.snapshot)) {
        if (node.type !== "file" || !Array.isArray(node.content)) continue;
        for (const id of node.content) {
          if (typeof id !== "string" || goodIndex.has(id)) continue;
          needed.add(id);
          used.add(id);
        }
      }
    } catch (err) {
      if (!(err instanceof RepoError) && !(err instanceof SyntaxError)) throw err;
      report.unhealed.snapshots.push({ id: s.id, error: `snapshot ${s.id.slice(0, 8)}: its file list cannot be read from either repository (${err.message})` });
    }
  }

  // Salvage first (no transfer), then A.
  const fromSource: string[] = [];
  for (const id of needed) {
    if (goodIndex.has(id)) continue;
    const s = salvaged.get(id);
    if (s) {
      report.blobs.salvaged++;
      await writer?.add(s.type, s.plain, [0, s.plain.length], [id]);
    } else fromSource.push(id);
  }
  const lost = new Set<string>();
  const copyOne = async (ids: string[]) => {
    let plains: Buffer[];
    try {
      plains = await sourceReader.read(ids);
    } catch (err) {
      if (!(err instanceof RepoError) && !(err instanceof ObjectNotFound)) throw err;
      // Find which: one at a time.
      if (ids.length > 1) for (const id of ids) await copyOne([id]);
      else lost.add(ids[0]);
      return;
    }
    for (const [i, id] of ids.entries()) {
      const type = source.index.get(id)?.type === BlobType.Tree ? BlobType.Tree : BlobType.Data;
      report.blobs.copied++;
      report.blobs.bytesCopied += plains[i].length;
      await writer?.add(type, plains[i], [0, plains[i].length], [id]);
    }
  };
  let batch: string[] = [];
  let bytes = 0;
  for (const id of fromSource) {
    if (!source.index.has(id)) {
      lost.add(id);
      continue;
    }
    batch.push(id);
    bytes += source.index.rawLengthOf(id);
    if (bytes >= 4 * 1024 * 1024) {
      await copyOne(batch);
      batch = [];
      bytes = 0;
    }
  }
  if (batch.length) await copyOne(batch);
  report.unhealed.blobs = [...lost].filter((id) => used.has(id));
  report.blobs.dropped = lost.size - report.unhealed.blobs.length;

  report.sound = !report.packs.missing.length && !report.packs.damaged.length && !report.indexFiles.damaged.length && !report.snapshots.damaged.length && !needed.size && !report.unhealed.snapshots.length;
  // Packs that no index names are left to `repair index` and prune: they are not damage.
  if (dryRun || report.sound) return report;

  // Packs, then the one index that replaces every other, then snapshots; deletions last.
  lock.assertHeld();
  const finished = await writer!.finish();
  report.packsWritten = finished.packs;
  const newPacks = finished.indexId ? (await dest.readIndexFile(finished.indexId)).packs : [];
  // A damaged pack that still holds blobs nothing else supplies is kept, and stays indexed.
  const stillNeeded = (p: PackEntry | undefined) => !!p && p.blobs.some((b) => lost.has(b.id) && used.has(b.id));
  const keptDamaged = [...damaged].filter(([, p]) => stillNeeded(p)).map(([, p]) => p!);
  const packs = [...newPacks, ...good.values(), ...keptDamaged];
  const everyIndex = await listNames(dest.target, "index");
  lock.assertHeld();
  const saved = await dest.saveIndex({ supersedes: everyIndex, packs });
  const back = await dest.readIndexFile(saved.id);
  const named = new Set(back.packs.map((p) => p.id));
  if (!packs.every((p) => named.has(p.id))) throw new RepoError(`index ${short(saved.id)} on ${dest.target.location} does not read back as written; nothing was deleted`, "corrupt");
  report.newIndex = saved.id;
  for (const { id, raw } of replacements) {
    lock.assertHeld();
    await dest.target.put(snapshotKey(id), raw);
    report.snapshots.replaced.push(id);
  }
  for (const [id, p] of damaged) {
    if (stillNeeded(p)) continue;
    await dest.target.delete(packKey(id));
    report.deleted.packs.push(id);
  }
  for (const id of everyIndex) {
    await dest.target.delete(indexKey(id));
    report.deleted.indexFiles.push(id);
  }
  await dest.loadIndex({ fromTarget: true });
  return report;
}
