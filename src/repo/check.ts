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
import { readTree, treeLeaves } from "../snapshot/tree.js";
import { ObjectNotFound } from "../targets/target.js";

export interface CheckProblem {
  severity: "error" | "warning";
  message: string;
  /** The pack this problem is part of the damage of ("" for blobs no index names): see damagedPacks. */
  pack?: string;
}

export interface DamagedFile {
  snapshot: string;
  root: string;
  path: string;
}

/**
 * The damage of one pack, grouped: what is wrong with it and what depends on it, so that a pack
 * that 5 files in 16 snapshots use is one line, not 80. `pack` is "" for blobs that no index
 * names at all.
 */
export interface DamagedPack {
  pack: string;
  /** What is wrong with the pack itself ("content does not match its name (damaged)", "2 blob(s) damaged"...). */
  problems: string[];
  /** Its blobs found damaged, or needed by a file or a file list and unusable. */
  blobs: number;
  /** Files (root and path) with data in it, and the snapshots holding them or whose file list it holds. */
  files: number;
  snapshots: number;
  /** A few of those files' paths. */
  examples: string[];
}

export interface CheckOptions {
  readData?: boolean;
  onProgress?: (p: { packs: number; total: number }) => void;
  /** How the user names this repository (for the next step's `--to`); default the target's location. */
  location?: string;
  /** The other copies of this repository (mirrors): what `repair --from` can heal from. */
  otherCopies?: string[];
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
  /** The pack problems and damagedFiles above, grouped by pack. */
  damagedPacks: DamagedPack[];
  /** What to run about the damage found, one command each (empty when there is none). */
  nextSteps: string[];
}

/** Paths a grouped line shows. */
const EXAMPLES = 3;

/** Collects, per pack, what is wrong with it and who depends on it. */
class PackDamage {
  private readonly packs = new Map<string, { problems: string[]; blobs: Set<string>; files: Set<string>; snapshots: Set<string>; examples: string[] }>();

  private of(pack: string) {
    let g = this.packs.get(pack);
    if (!g) this.packs.set(pack, (g = { problems: [], blobs: new Set(), files: new Set(), snapshots: new Set(), examples: [] }));
    return g;
  }

  problem(pack: string, message: string): void {
    this.of(pack).problems.push(message);
  }

  blobs(pack: string, ids: readonly string[]): void {
    if (!ids.length) return;
    const g = this.of(pack);
    for (const id of ids) g.blobs.add(id);
  }

  /** A file of `snapshot` (or, without a file, the snapshot's own file list) needs blob `id` of `pack`. */
  uses(pack: string, id: string, snapshot: string, file?: { root: string; path: string }): void {
    const g = this.of(pack);
    g.blobs.add(id);
    g.snapshots.add(snapshot);
    if (!file) return;
    const key = `${file.root}\0${file.path}`;
    if (g.files.has(key)) return;
    g.files.add(key);
    if (g.examples.length < EXAMPLES) g.examples.push(file.path);
  }

  list(): DamagedPack[] {
    return [...this.packs].map(([pack, g]) => ({ pack, problems: g.problems, blobs: g.blobs.size, files: g.files.size, snapshots: g.snapshots.size, examples: g.examples }));
  }
}

/**
 * Structure check: every index and snapshot decrypts, every blob a snapshot needs is indexed and its
 * pack exists with the indexed size. With readData, every pack is read in full: its name must be the
 * SHA-256 of its bytes and every blob must decrypt and match its id.
 */
export async function checkRepository(repo: Repository, opts: CheckOptions = {}): Promise<CheckReport> {
  const problems: CheckProblem[] = [];
  const damage = new PackDamage();
  const error = (message: string, pack?: string) => problems.push({ severity: "error", message, ...(pack === undefined ? {} : { pack }) });
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
  /** `message` for --json (as always), `phrase` for the pack's grouped line. */
  const packProblem = (pack: string, phrase: string, message = `pack ${pack.slice(0, 12)}: ${phrase}`) => {
    error(message, pack);
    damage.problem(pack, phrase);
  };
  for (const [pack, size] of index.packs) {
    const actual = present.get(pack);
    if (actual === undefined) packProblem(pack, "missing (in the index, not in the storage)", `pack ${pack.slice(0, 12)} is in the index but missing`);
    else if (actual !== size) packProblem(pack, `${actual} bytes, the index says ${size}`, `pack ${pack.slice(0, 12)} has ${actual} bytes, the index says ${size}`);
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
      bytesRead += damaged.read;
      for (const msg of damaged.messages) packProblem(pack, msg);
      damage.blobs(pack, damaged.blobs);
      for (const id of damaged.blobs) badBlobs.add(id);
      opts.onProgress?.({ packs: packsRead, total: total.length });
    }
  }

  let snapshots: SnapshotRecord[] = [];
  const damagedFiles: (DamagedFile & { pack: string })[] = [];
  const missingPacks = new Set([...index.packs.keys()].filter((p) => !present.has(p)));
  const pool = new SealPool(0);
  try {
    snapshots = await repo.listSnapshots({ fromTarget: true });
    for (const bad of repo.unreadableSnapshots) error(bad.error);
    await checkListings(repo, snapshots, { error, warn });
    const reader = new BlobReader(repo, pool);
    const unusable = (id: string) => {
      const loc = index.get(id);
      return !loc || badBlobs.has(id) || missingPacks.has(loc.pack);
    };
    const packOf = (blob: string) => index.get(blob)?.pack ?? "";
    for (const { id, snapshot } of snapshots) {
      const broken = (ids: readonly string[]) => {
        const brokenTree = ids.filter(unusable);
        if (!brokenTree.length) return false;
        error(`snapshot ${id.slice(0, 8)}: ${brokenTree.length} tree blob(s) missing or damaged; its file list cannot be read`, packOf(brokenTree[0]));
        for (const blob of brokenTree) damage.uses(packOf(blob), blob, id);
        return true;
      };
      try {
        // The tree list first (version 2), then the leaves it names.
        if (broken(snapshot.treeList ?? [])) continue;
        const leaves = await treeLeaves(reader, snapshot);
        if (broken(leaves)) continue;
        for await (const node of readTree(reader, { tree: leaves })) {
          if (node.type !== "file") continue;
          const missing = (node.content ?? []).filter(unusable);
          if (!missing.length) continue;
          damagedFiles.push({ snapshot: id, root: node.root, path: node.path, pack: packOf(missing[0]) });
          for (const blob of missing) damage.uses(packOf(blob), blob, id, node);
        }
      } catch (err) {
        if (!(err instanceof RepoError)) throw err;
        error(`snapshot ${id.slice(0, 8)}: ${err.message}`);
      }
    }
  } finally {
    await pool.close();
  }
  for (const { pack, ...f } of damagedFiles) error(`snapshot ${f.snapshot.slice(0, 8)}: ${f.path} has missing or damaged data`, pack);
  const damagedPacks = damage.list();
  const nextSteps = nextStepsFor(repo, opts, {
    packs: damagedPacks,
    // A missing pack's blobs come back from disk with the next snapshot once the index forgets them.
    onlyMissing: damagedPacks.every((d) => d.problems.every((p) => p.startsWith("missing"))) && !repo.unreadableSnapshots.length,
    snapshots: repo.unreadableSnapshots.length,
    indexFiles: repo.unreadableIndexes.length,
  });
  return {
    ok: !problems.some((p) => p.severity === "error"),
    snapshots: snapshots.length,
    packs: index.packs.size,
    blobs: index.size,
    packsRead,
    bytesRead,
    problems,
    damagedFiles: damagedFiles.map(({ pack: _pack, ...f }) => f),
    damagedPacks,
    nextSteps,
  };
}

/**
 * The snapshot listings (docs/FORMAT.md §7a) are copies: a damaged one is a warning (readers skip
 * it), but one that verifies and disagrees with a snapshot object would show a new machine
 * something the repository does not hold, which is an error. `repair index` rebuilds them.
 */
async function checkListings(repo: Repository, snapshots: SnapshotRecord[], report: { error: (m: string) => void; warn: (m: string) => void }): Promise<void> {
  const byId = new Map(snapshots.map((r) => [r.id, r.snapshot]));
  const listings = await repo.readListings();
  for (const bad of repo.unreadableListings) report.warn(`${bad.error}; readers skip it, \`pi-guard repair index\` rebuilds the listing`);
  for (const [listing, entries] of listings) {
    for (const [id, body] of entries) {
      const actual = byId.get(id);
      if (!actual) continue; // forgotten since, or unreadable (reported above)
      let same = false;
      try {
        same = JSON.stringify(JSON.parse(body.toString("utf8"))) === JSON.stringify(actual);
      } catch {
        // not JSON: not the same
      }
      if (!same) report.error(`snapshot listing ${listing.slice(0, 12)} disagrees with snapshot ${id.slice(0, 8)}; \`pi-guard repair index\` rebuilds the listing`);
    }
  }
}

/**
 * The commands that heal what check found: objects from another copy (`repair --from`), an index
 * from the packs (`repair index`). Names the configured mirror when there is one.
 */
function nextStepsFor(repo: Repository, opts: CheckOptions, found: { packs: DamagedPack[]; onlyMissing: boolean; snapshots: number; indexFiles: number }): string[] {
  const steps: string[] = [];
  const here = opts.location ?? repo.target.location;
  if (found.packs.length || found.snapshots) {
    const from = opts.otherCopies?.[0];
    steps.push(
      from
        ? `\`pi-guard repair --from ${from} --to ${here}\` heals the damaged objects from the mirror`
        : `\`pi-guard repair --from <another copy> --to ${here}\` heals the damaged objects from a mirror of this repository (none is configured)`,
    );
    if (!from && found.onlyMissing) steps.push("`pi-guard repair index` drops the missing packs from the index, so that the next `pi-guard snapshot` stores what is still on disk again");
  }
  if (found.indexFiles) steps.push("`pi-guard repair index` rebuilds the index from the packs");
  return steps;
}

/**
 * The problems as a user reads them: everything about a pack, and every file that needs it, as
 * one line per pack (the full list stays in `problems` and `damagedFiles`).
 */
export function groupedProblems(report: CheckReport): CheckProblem[] {
  const out = report.problems.filter((p) => p.pack === undefined);
  for (const d of report.damagedPacks) {
    const what = d.pack ? `pack ${d.pack.slice(0, 12)}: ${d.problems.join("; ") || "damaged"}` : `${d.blobs} blob(s) that no index names`;
    const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
    const it = d.pack ? "it" : "them";
    const users = d.files
      ? `; ${plural(d.files, "file")} in ${plural(d.snapshots, "snapshot")} ${d.files === 1 ? "uses" : "use"} ${it} (${d.examples.join(", ")}${d.files > d.examples.length ? `, and ${d.files - d.examples.length} more` : ""})`
      : d.snapshots
        ? `; the file list${d.snapshots === 1 ? " of 1 snapshot needs" : `s of ${d.snapshots} snapshots need`} ${it}`
        : d.blobs
          ? "; no snapshot uses its damaged blobs"
          : "";
    out.push({ severity: "error", message: `${what}${users}` });
  }
  return out;
}

type IndexedBlob = BlobLocation & { id: string };

/** `messages` are phrases about the pack ("content does not match its name (damaged)"). */
async function verifyPack(repo: Repository, pack: string, indexed: IndexedBlob[]): Promise<{ messages: string[]; blobs: string[]; read: number }> {
  const key = packKey(pack);
  const short = pack.slice(0, 12);
  let raw: Buffer;
  try {
    raw = await repo.target.get(key);
  } catch (err) {
    // Listed a moment ago, gone now (another host's prune, a lifecycle rule, a lagging listing):
    // as damaged as a missing pack. Any other failure (network, permissions) fails the check.
    if (!(err instanceof ObjectNotFound)) throw err;
    return { messages: ['listed, but reading it answers "not found" (deleted meanwhile?)'], blobs: indexed.map((b) => b.id), read: 0 };
  }
  const messages: string[] = [];
  const actualId = createHash("sha256").update(raw).digest("hex");
  if (actualId !== pack) messages.push("content does not match its name (damaged)");
  // The header is checked too, so that a pack can still be re-indexed from itself.
  try {
    const headerLen = raw.readUInt32LE(raw.length - 4);
    // The messages are listed under the pack already, so the part is named alone.
    const header = decrypt(repo.key.encryption, raw.subarray(raw.length - 4 - headerLen, raw.length - 4), "header", AAD.packHeader);
    decodePackHeader(header, "header");
  } catch (err) {
    messages.push(err instanceof RepoError ? err.message : "unreadable header");
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
  if (bad.length) messages.push(`${bad.length} blob(s) damaged`);
  return { messages, blobs: bad, read: raw.length };
}

export type { TreeNode };
