/**
 * Several targets as replicas of one repository (docs/FORMAT.md §14): byte-identical `config` and
 * `keys/*`, so the same credential opens each and blob ids are the same everywhere, and each its own
 * packs and index. A snapshot reaches another replica as its missing blobs (read and verified from
 * the source, packed afresh on the destination), then an index file, then the snapshot object
 * itself, verbatim: in that order, a snapshot visible on a replica is always complete.
 */
import { BlobReader } from "./blob-reader.js";
import { BlobWriter } from "./blob-writer.js";
import { RepoError } from "./errors.js";
import { BlobType, CONFIG_KEY, keyKey, snapshotKey } from "./format.js";
import { acquireLock, type Lock } from "./lock.js";
import { canBeParent } from "./parent-heads.js";
import { listSnapshotIds, readRepoId } from "./peek.js";
import { removeWriterTempFiles } from "./repair-index.js";
import { sha256Hex, type Repository, type SnapshotRecord } from "./repository.js";
import { SealPool } from "./seal-pool.js";
import { readTree, treeSource } from "../snapshot/tree.js";
import { listNames, ObjectExists, ObjectNotFound, type Target } from "../targets/target.js";

export interface ReplicaSetup {
  /** The destination was empty and now holds this repository's config and keys. */
  created: boolean;
  /** Key objects the destination lacked and received (keys added to the source since). */
  keysCopied: number;
}

const short = (id: string) => id.slice(0, 8);

async function getOrUndefined(target: Target, key: string): Promise<Buffer | undefined> {
  try {
    return await target.get(key);
  } catch (err) {
    if (err instanceof ObjectNotFound) return undefined;
    throw err;
  }
}

/**
 * Make `dest` a replica of `source`'s repository, or confirm that it is one. An empty destination
 * gets the key objects, then `config` (last, as `init` does: its presence means usable), all
 * verbatim and conditional. A destination holding another repository is refused, naming both ids.
 * Key objects the destination lacks are copied every time, so a key added later opens every replica.
 */
export async function createReplica(source: Repository, dest: Target, opts: { verifyOnly?: boolean } = {}): Promise<ReplicaSetup> {
  const sourceConfig = await source.target.get(CONFIG_KEY);
  const destConfig = await getOrUndefined(dest, CONFIG_KEY);
  if (destConfig) {
    const destId = await readRepoId(dest).catch((err: unknown) => {
      throw new RepoError(`${dest.location} holds something that is not a pi-guard repository (${err instanceof Error ? err.message : String(err)}); a mirror must be an empty location or a copy of ${short(source.config.id)}`, "exists");
    });
    if (destId !== source.config.id) throw await foreignRepository(source, dest, destId);
    if (!destConfig.equals(sourceConfig)) {
      throw new RepoError(`${dest.location} holds repository ${short(destId)} with a config that differs from ${source.target.location}'s: refusing to mix them`, "corrupt");
    }
  }
  const present = new Set(await listNames(dest, "keys"));
  let keysCopied = 0;
  for (const name of await listNames(source.target, "keys")) {
    if (!/^[0-9a-f]{64}$/.test(name)) continue;
    if (present.has(name) && name !== source.keyId) continue;
    const raw = await source.target.get(keyKey(name));
    if (present.has(name)) {
      // The key that opened the source must open the destination to the same master key.
      const there = await getOrUndefined(dest, keyKey(name));
      if (there && !there.equals(raw)) throw new RepoError(`${dest.location}: key ${name.slice(0, 12)} differs from the one in ${source.target.location}: refusing to mix them`, "corrupt");
      continue;
    }
    if (opts.verifyOnly) continue;
    try {
      await dest.put(keyKey(name), raw, { ifAbsent: true });
      keysCopied++;
    } catch (err) {
      if (!(err instanceof ObjectExists)) throw err;
    }
  }
  if (destConfig) return { created: false, keysCopied };
  if (opts.verifyOnly) throw new RepoError(`no repository at ${dest.location}`, "not-found");
  try {
    await dest.put(CONFIG_KEY, sourceConfig, { ifAbsent: true });
  } catch (err) {
    if (!(err instanceof ObjectExists)) throw err;
    // Someone else made it at the same moment: it must be the same repository.
    return { ...(await createReplica(source, dest)), keysCopied };
  }
  return { created: true, keysCopied };
}

/**
 * The refusal for a destination that holds another repository, saying what to do. One without a
 * snapshot is what `init --repo <there>` leaves, the usual way to get here: deleting it loses
 * nothing, and copy then makes the mirror. One with snapshots is someone's backups: never suggest
 * deleting it.
 */
async function foreignRepository(source: Repository, dest: Target, destId: string): Promise<RepoError> {
  const snapshots = await listSnapshotIds(dest).catch(() => undefined);
  const what = `${dest.location} holds repository ${short(destId)}, not ${short(source.config.id)} of ${source.target.location}`;
  if (snapshots?.length === 0) {
    return new RepoError(
      `${what} (another repository, with no snapshot: what \`pi-guard init\` leaves): a mirror is made by copy into an empty location, not by init; if nothing there is needed, delete everything under ${dest.location}, then run \`pi-guard copy --to ${dest.location}\` again`,
      "exists",
    );
  }
  const held = snapshots ? `with ${snapshots.length} snapshot(s)` : "whose snapshots cannot be listed";
  return new RepoError(`${what} (another repository, ${held}): refusing to mix them; choose an empty location for the mirror (copy makes it there) or a copy of ${short(source.config.id)}`, "exists");
}

/**
 * A location the config names as a mirror is made by copy (or the next snapshot's shipping), never
 * by init: init would put a separate repository there, and every shipment would then be refused.
 */
export function assertNotAMirror(config: { repo: string; mirrors: string[]; configFile: string }): void {
  if (!config.mirrors.includes(config.repo)) return;
  throw new RepoError(
    `${config.repo} is a mirror in the config file ${config.configFile}: a mirror is made by \`pi-guard copy --to ${config.repo}\` (or by the next snapshot), not by init, which would make a separate repository there`,
    "usage",
  );
}

/**
 * The first of `locations` (other than `initialised`) that holds a pi-guard repository, with its id:
 * when `init --repo X` runs while another repository is configured, X is likely meant as its
 * mirror, and init should say that a mirror is made by copy. Best effort: nothing here fails.
 */
export async function otherRepository(locations: string[], initialised: string, open: (location: string) => Target): Promise<{ location: string; id: string } | undefined> {
  for (const location of new Set(locations)) {
    if (location === initialised) continue;
    try {
      return { location, id: await readRepoId(open(location)) };
    } catch {
      // Not there, not reachable, not ours: nothing to say about it.
    }
  }
  return undefined;
}

/**
 * `source`'s repository at `dest`. With `create`, an empty destination is made a replica first and
 * missing keys are copied; without, it must already be one and nothing is written to it.
 */
export async function openReplica(source: Repository, dest: Target, opts: { create?: boolean; dataDir?: string } = {}): Promise<{ repo: Repository; setup: ReplicaSetup }> {
  if (!opts.create && !(await dest.head(CONFIG_KEY))) throw new RepoError(`no repository at ${dest.location} (copy one there with \`pi-guard copy --to ${dest.location}\`)`, "not-found");
  const setup = await createReplica(source, dest, { verifyOnly: !opts.create });
  return { repo: source.atTarget(dest, { dataDir: opts.dataDir }), setup };
}

export interface CopyProgress {
  snapshot: number;
  snapshots: number;
  blobs: number;
  bytes: number;
}

export interface CopyOptions {
  /** Snapshot ids or unique prefixes; all snapshots when absent. */
  ids?: string[];
  host?: string;
  /** The newest snapshot of each host only (after `host`). */
  latestOnly?: boolean;
  /** Choose among the source's readable snapshots (oldest first) instead of ids/host/latestOnly. */
  select?: (all: SnapshotRecord[]) => SnapshotRecord[];
  lockWaitMs?: number;
  signal?: AbortSignal;
  onProgress?: (p: CopyProgress) => void;
}

export interface CopyReport {
  from: string;
  to: string;
  /** Snapshots chosen, and of them those copied now and those the destination already had. */
  selected: number;
  copied: string[];
  present: string[];
  /** Chosen snapshots that could not be copied because the source's data for them is damaged. */
  failed: { id: string; error: string }[];
  /** Snapshot objects of the source that cannot be read (never chosen). */
  unreadable: { id: string; error: string }[];
  blobsCopied: number;
  /** Plaintext bytes of the blobs copied. */
  bytesCopied: number;
  /** Bytes written to the destination: new packs and the index file. */
  bytesStored: number;
  packsWritten: number;
  indexWritten: string | null;
}

/** The snapshot's source data is unusable: only this snapshot fails, the copy goes on. */
class SourceDamage extends Error {}

/**
 * The ship policy (docs/FORMAT.md §14): per host the newest snapshot and the newest that can be a
 * parent, plus every tagged one, and the snapshot a tagged one's agent cleanup names as `against`
 * (it holds what the agent removed; forget keeps it, so a mirror must have it too).
 */
export function shipSelection(all: SnapshotRecord[]): SnapshotRecord[] {
  const keep = new Set<string>();
  const newest = new Map<string, SnapshotRecord>();
  const newestParent = new Map<string, SnapshotRecord>();
  for (const r of all) {
    newest.set(r.snapshot.host, r);
    if (canBeParent(r.snapshot)) newestParent.set(r.snapshot.host, r);
    if (Array.isArray(r.snapshot.tags) && r.snapshot.tags.length) {
      keep.add(r.id);
      const against = (r.snapshot.cleanup as { against?: unknown } | undefined)?.against;
      if (typeof against === "string") keep.add(against);
    }
  }
  for (const r of [...newest.values(), ...newestParent.values()]) keep.add(r.id);
  return all.filter((r) => keep.has(r.id));
}

function selectSnapshots(all: SnapshotRecord[], opts: CopyOptions): SnapshotRecord[] {
  if (opts.select) return opts.select(all);
  let chosen = all;
  if (opts.ids?.length) {
    const picked = new Set<string>();
    for (const want of opts.ids) {
      const matches = all.filter((r) => r.id.startsWith(want.toLowerCase()));
      if (matches.length === 0) throw new RepoError(`no snapshot ${want} in the source`, "not-found");
      if (matches.length > 1) throw new RepoError(`snapshot id "${want}" is ambiguous: ${matches.length} snapshots match; type more characters`, "usage");
      picked.add(matches[0].id);
    }
    chosen = chosen.filter((r) => picked.has(r.id));
  }
  if (opts.host) chosen = chosen.filter((r) => r.snapshot.host === opts.host);
  if (opts.latestOnly) {
    const newest = new Map<string, SnapshotRecord>();
    for (const r of chosen) newest.set(r.snapshot.host, r);
    const ids = new Set([...newest.values()].map((r) => r.id));
    chosen = chosen.filter((r) => ids.has(r.id));
  }
  return chosen;
}

const COPY_BATCH_BYTES = 4 * 1024 * 1024;

/**
 * Copy the chosen snapshots of `source` that `dest` lacks (both the same repository, see
 * openReplica). Holds a shared lock on the source and an append lock on the destination. Blobs are
 * read through the source's index and checked against their ids; all new ones go into the
 * destination's own packs, then one index file, then each snapshot object verbatim (its SHA-256 is
 * checked against its name). A snapshot whose source data is damaged is reported and not written;
 * the others are copied. A kill at any point leaves at worst packs no index names, or indexed blobs
 * no snapshot uses yet: nothing half-visible.
 */
export async function copySnapshots(source: Repository, dest: Repository, opts: CopyOptions = {}): Promise<CopyReport> {
  const report: CopyReport = { from: source.target.location, to: dest.target.location, selected: 0, copied: [], present: [], failed: [], unreadable: [], blobsCopied: 0, bytesCopied: 0, bytesStored: 0, packsWritten: 0, indexWritten: null };
  const waitMs = opts.lockWaitMs ?? 60_000;
  const sourceLock = await acquireLock(source, { mode: "shared", command: "copy", waitMs });
  let destLock: Lock | undefined;
  try {
    const all = await source.listSnapshots();
    report.unreadable = source.unreadableSnapshots;
    const chosen = selectSnapshots(all, opts);
    report.selected = chosen.length;
    const there = new Set(await listSnapshotIds(dest.target));
    const wanted = chosen.filter((r) => {
      if (there.has(r.id)) report.present.push(r.id);
      return !there.has(r.id);
    });
    if (!wanted.length) return report;
    destLock = await acquireLock(dest, { mode: "append", command: "copy", waitMs });
    await copyInto(source, dest, wanted, destLock, sourceLock, report, opts);
    sourceLock.assertHeld();
    destLock.assertHeld();
    return report;
  } finally {
    await destLock?.release();
    await sourceLock.release();
  }
}

async function copyInto(source: Repository, dest: Repository, wanted: SnapshotRecord[], destLock: Lock, sourceLock: Lock, report: CopyReport, opts: CopyOptions): Promise<void> {
  const signal = AbortSignal.any([destLock.signal, sourceLock.signal, ...(opts.signal ? [opts.signal] : [])]);
  await removeWriterTempFiles(dest.target, dest.stagingDir, "dead");
  await Promise.all([source.loadIndex(true), dest.loadIndex(true)]);
  const pool = new SealPool();
  const writer = new BlobWriter(dest, pool);
  const reader = new BlobReader(source, pool);
  const pending: { id: string; raw: Buffer }[] = [];
  const readSource = async (ids: string[]): Promise<Buffer[]> => {
    try {
      return await reader.read(ids);
    } catch (err) {
      if (err instanceof RepoError || err instanceof ObjectNotFound) throw new SourceDamage(err.message);
      throw err;
    }
  };
  const copyBlobs = async (type: BlobType, ids: string[], plains: Buffer[]) => {
    const ranges: number[] = [];
    let at = 0;
    for (const p of plains) ranges.push(at, (at += p.length));
    const seen = new Set<string>();
    for (let i = 0; i < ids.length; i++) {
      if (writer.has(ids[i]) || seen.has(ids[i])) continue;
      seen.add(ids[i]);
      report.blobsCopied++;
      report.bytesCopied += plains[i].length;
    }
    await writer.add(type, Buffer.concat(plains), ranges, ids);
  };
  try {
    for (const [n, record] of wanted.entries()) {
      signal.throwIfAborted();
      try {
        let raw: Buffer;
        try {
          raw = await source.target.get(snapshotKey(record.id));
        } catch (err) {
          if (err instanceof ObjectNotFound) throw new SourceDamage("it was deleted from the source meanwhile");
          throw err;
        }
        if (sha256Hex(raw) !== record.id) throw new SourceDamage("its object in the source does not match its name (damaged)");
        // The file list is read once: each tree blob is copied as it is read.
        // The tree list blobs (version 2) are read, and so copied, through it too.
        const treeReader = treeSource(async (ids) => {
          const plains = await readSource(ids);
          const missing = ids.map((id, i) => [id, plains[i]] as const).filter(([id]) => !writer.has(id));
          if (missing.length) await copyBlobs(BlobType.Tree, missing.map(([id]) => id), missing.map(([, p]) => p));
          return plains;
        }, 64, (id) => source.index.get(id)?.type);
        let batch: string[] = [];
        let batchBytes = 0;
        const flush = async () => {
          if (!batch.length) return;
          const ids = batch;
          batch = [];
          batchBytes = 0;
          await copyBlobs(BlobType.Data, ids, await readSource(ids));
          opts.onProgress?.({ snapshot: n + 1, snapshots: wanted.length, blobs: report.blobsCopied, bytes: report.bytesCopied });
        };
        const queued = new Set<string>();
        try {
          for await (const node of readTree(treeReader, record.snapshot)) {
            if (node.type !== "file" || !Array.isArray(node.content)) continue;
            for (const id of node.content) {
              if (typeof id !== "string" || writer.has(id) || queued.has(id)) continue;
              queued.add(id);
              batch.push(id);
              batchBytes += source.index.rawLengthOf(id);
              if (batchBytes >= COPY_BATCH_BYTES) {
                await flush();
                queued.clear();
              }
            }
          }
        } catch (err) {
          if (err instanceof SyntaxError) throw new SourceDamage(`its file list is not valid JSON lines`);
          if (err instanceof RepoError) throw new SourceDamage(err.message);
          throw err;
        }
        await flush();
        pending.push({ id: record.id, raw });
        opts.onProgress?.({ snapshot: n + 1, snapshots: wanted.length, blobs: report.blobsCopied, bytes: report.bytesCopied });
      } catch (err) {
        if (!(err instanceof SourceDamage)) throw err;
        report.failed.push({ id: record.id, error: `snapshot ${short(record.id)} cannot be copied from ${source.target.location}: ${err.message}` });
      }
    }
    if (!pending.length) {
      await writer.abort();
      return;
    }
    signal.throwIfAborted();
    // Packs, then the index, then the snapshots: an appender whose lock was taken commits nothing.
    await destLock.confirm();
    const finished = await writer.finish();
    report.indexWritten = finished.indexId ?? null;
    report.packsWritten = finished.packs;
    report.bytesStored = writer.bytesStored;
    for (const { id, raw } of pending) {
      signal.throwIfAborted();
      await destLock.confirm();
      await dest.target.put(snapshotKey(id), raw);
      report.copied.push(id);
    }
  } catch (err) {
    await writer.abort();
    throw err;
  } finally {
    await pool.close();
  }
  await dest.consolidateIndex().catch((err: unknown) => dest.onWarning(`index consolidation on ${dest.target.location} skipped: ${err instanceof Error ? err.message : String(err)}`));
}
