// `pi-guard restore` from a restic repository, with pi-guard's guarantees: restic restores the
// chosen files into a private staging folder first; pi-guard checks each staged file against
// the size the snapshot lists, compares it with what is on disk, snapshots what it is about to
// replace (tag pre-restore), and only then swaps each file in (temp file, fsync, rename), walking
// every parent folder with lstat so that no symlink leads a write elsewhere.
//
// Why staging rather than `restic dump` per file: one restic process restores every file (dump
// is one process per file and cannot be verified before anything is touched), and nothing in
// the user's folders changes until all the bytes are here and checked.
import { randomBytes } from "node:crypto";
import { constants, promises as fs } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import type { Config } from "../config/config.js";
import { makeDirs, syncDir, writeFully } from "../fs-safe.js";
import { parseSessionFileName } from "../agents/pi/writer.js";
import { type FoundSession, resolveSession, shownName } from "../agents/find-session.js";
import { findAgent } from "../agents/registry.js";
import { snapshotRootAgents } from "../agents/roots.js";
import type { AgentAdapter, FileRef } from "../agents/types.js";
import { copyRulesOf, liveDatabases, type MergeDone, mergeFrom, type SessionMerge, sessionMerges } from "../restore/session-rows.js";
import { SQLITE_SIDE_SUFFIXES } from "../snapshot/sqlite-copy.js";
import type { SqliteMergeReport } from "../restore/sqlite-merge.js";
import { RepoError } from "../repo/errors.js";
import { deleteFile, describeFsError, type FileAction, type RestoreFailure, type RestoreReport, sessionMatcher } from "../restore/restorer.js";
import type { TreeLayout } from "../restore/layout.js";
import { onlyAgent, refusedRoot, rootDestination, withRestoredRoots } from "../restore/destinations.js";
import { type FsPath, joinPath, nodeComponents, RefusedPath, resolveDestRoot, walkDirs } from "../restore/safe-path.js";
import { PRE_RESTORE_TAG, type ResolvedTime, type Selection, selectSnapshotAt, snapshotsOfHost } from "../restore/select.js";
import { hostName } from "../host.js";
import { resticBackup } from "./backup.js";
import { escapePattern } from "./backup.js";
import { runRestic, type ResticSession } from "./run.js";
import { resticSnapshotFiles } from "./catalog.js";
import { findInResticSnapshots, listResticNodes, listResticSnapshots, nodeRoot, type ResticNode, type ResticSnapshotRecord } from "./snapshots.js";

export interface ResticRestoreOptions extends TreeLayout {
  targetDir?: string;
  paths?: string[];
  session?: string;
  /** Only this agent's roots (restore --agent NAME), as on a native repository (destinations.ts onlyAgent). */
  agent?: string;
  dryRun?: boolean;
  /** Choose among this host's snapshots (select.ts snapshotsOfHost: the default when several hosts share the repository is this one's). */
  host?: string;
  onProgress?: (p: { files: number; bytes: number; current: string }) => void;
}

export interface ResticRestoreResult {
  snapshot: ResticSnapshotRecord;
  report: RestoreReport;
  undoSnapshot?: string;
  resolved?: ResolvedTime;
  /** What the choice of snapshot should tell the user (select.ts). */
  warnings: string[];
  /** With --session into a live SQLite database: each merge of the session's rows (as on a native repository). */
  rows?: SqliteMergeReport[];
}

interface Item {
  node: ResticNode;
  root: string;
  rel: string;
  rootDir: string;
  comps: FsPath[];
  action: FileAction;
}

/** `<when>` among pi-guard's snapshots in the repository, by pi-guard's rules (select.ts). */
export async function chooseResticSnapshot(s: ResticSession, when: string, host?: string): Promise<Selection<ResticSnapshotRecord>> {
  const all = await listResticSnapshots(s);
  const choosable = all.map((r) => ({ id: r.id, snapshot: { time: r.time, host: r.host, tags: r.tags }, record: r }));
  const { record, resolved, warnings } = selectSnapshotAt(snapshotsOfHost(choosable, when, host, hostName()), when);
  return { record: record.record, resolved, warnings };
}

export async function resticRestore(config: Config, s: ResticSession, when: string, opts: ResticRestoreOptions = {}): Promise<ResticRestoreResult> {
  const started = Date.now();
  const { record: snap, resolved, warnings } = await chooseResticSnapshot(s, when, opts.host);
  const placed: { destinations: Record<string, string>; refused: RestoreFailure[] } = { destinations: {}, refused: [] };
  for (const root of snap.roots) {
    const to = rootDestination(config, root, opts.targetDir, opts);
    if (to && "dir" in to) placed.destinations[root.name] = to.dir;
    else if (to) placed.refused.push(refusedRoot(root.name, to.refused));
  }
  if (snap.roots.length === 0) throw new RepoError(`restic snapshot ${snap.id.slice(0, 8)} has no pi-guard root tags: restore it with plain restic`, "corrupt");
  const { destinations: chosen, refused: failed } = onlyAgent(placed, snap, opts.agent);
  const destinations = new Map(Object.entries(chosen));

  const wantPath = opts.paths?.length ? picomatch(opts.paths, { dot: true }) : () => true;
  const listed: ResticNode[] = [];
  await listResticNodes(s, snap.id, (node) => listed.push(node));
  const session = opts.session !== undefined ? await sessionUnits(s, snap, listed, opts.session, opts.agent, wantPath) : undefined;
  const inSnapshot = new Set<string>();
  const nodes: { node: ResticNode; root: string; rel: string }[] = [];
  for (const node of listed) {
    const where = nodeRoot(snap, node.path);
    if (where) inSnapshot.add(`${where.root}\0${where.rel}`);
    if (!where || !destinations.has(where.root) || node.type === "dir") continue;
    if (session ? !session.keys.has(`${where.root}\0${where.rel}`) : !wantPath(where.rel)) continue;
    if (node.type !== "file") {
      failed.push({ path: where.rel, root: where.root, error: `a ${node.type === "symlink" ? "symbolic link" : "special file"}: only files are restored from restic (use restic restore)`, kind: "refused" });
      continue;
    }
    nodes.push({ node, ...where });
  }
  if (session && !nodes.length) {
    const why = failed[0]?.error ?? `its roots are not written by this restore`;
    throw new RepoError(`session ${shownName(session.found.meta.id)} is not restored: ${shownName(why)}`, "not-found");
  }

  const items: Item[] = [];
  const rootDirs = new Map<string, string>();
  for (const [name, dir] of destinations) rootDirs.set(name, await resolveDestRoot(dir));
  const staging = path.join(config.dataDir, "restic-staging", `${process.pid}-${randomBytes(6).toString("hex")}`);
  await makeDirs(staging, 0o700);
  try {
    if (nodes.length) await stage(s, snap, opts.paths?.length || opts.session ? nodes.map((n) => n.node.path) : snap.roots.filter((r) => destinations.has(r.name)).map((r) => r.path), staging);
    for (const n of nodes) {
      let comps: FsPath[];
      try {
        // Before the path is used anywhere, even inside the staging folder: no "..", no empty part.
        comps = nodeComponents({ path: n.rel });
      } catch (err) {
        failed.push(failureOf(n.rel, n.root, err));
        continue;
      }
      const staged = path.join(staging, n.node.path);
      const st = await fs.lstat(staged).catch(() => undefined);
      if (!st?.isFile() || st.size !== n.node.size) {
        failed.push({ path: n.rel, root: n.root, error: st?.isFile() ? `restic restored ${st.size} bytes, the snapshot lists ${n.node.size}` : "restic did not restore it", kind: "damaged" });
        continue;
      }
      try {
        const rootDir = rootDirs.get(n.root)!;
        const action = await plannedAction(rootDir, comps, staged);
        items.push({ ...n, rootDir, comps, action });
      } catch (err) {
        failed.push(failureOf(n.rel, n.root, err));
      }
    }
    const sides = await staleSideFiles(items, inSnapshot);
    const merges = session ? sessionMerges(session.found, liveDatabases({ items: [...items, ...sides] }, session.files, copyRulesOf(config, session.found.adapter))) : [];
    const isMerged = (root: string, rel: string) => merges.some((m) => m.db.ref.root === root && (rel === m.db.ref.path || SQLITE_SIDE_SUFFIXES.some((x) => rel === m.db.ref.path + x)));
    const files = items.filter((i) => !isMerged(i.root, i.rel));
    const deletes = sides.filter((d) => !isMerged(d.root, d.rel));
    // restic staged the snapshot's copy of each merged database: checked and counted before anything is written.
    const stagedDb = (m: SessionMerge) => path.join(staging, items.find((i) => i.root === m.db.ref.root && i.rel === m.db.ref.path)!.node.path);
    const counted: MergeDone[] = [];
    for (const m of merges) counted.push(await mergeFrom(m, stagedDb(m), { dryRun: true }));
    const report: RestoreReport = { snapshotId: snap.id, files: [], failed, bytesWritten: 0, durationMs: 0 };
    const entry = (i: Item) => ({ path: i.rel, root: i.root, action: i.action, size: i.node.size, dest: path.join(i.rootDir, i.rel) });
    const deleted = (d: SideFile) => ({ path: d.rel, root: d.root, action: "delete" as const, size: 0, dest: path.join(d.rootDir, d.rel) });
    const rows = (done: MergeDone[]) => (merges.length ? { rows: done.map((d) => d.report) } : {});
    if (opts.dryRun) {
      report.files = [...files.map(entry), ...deletes.map(deleted)];
      report.durationMs = Date.now() - started;
      return { snapshot: snap, report, resolved, warnings, ...rows(counted) };
    }
    if (opts.targetDir) await makeDirs(path.resolve(opts.targetDir));
    let undoSnapshot: string | undefined;
    // Only a replaced or deleted file, or a merged database, needs saving first: with no --delete, a
    // created one is undone by hand, and on a new machine (no agent dir yet) there is nothing to save at all.
    if (!opts.targetDir && (merges.length > 0 || deletes.length > 0 || files.some((i) => i.action === "replace"))) {
      const pre = await resticBackup(withRestoredRoots(config, chosen), s, { tags: [PRE_RESTORE_TAG] });
      undoSnapshot = pre.id;
      if (pre.skipped.length) {
        const first = pre.skipped[0];
        throw new RepoError(`cannot save ${first.path || "a file"} (${first.error}) before restoring over it; nothing was restored`, "io");
      }
    }
    for (const item of files) {
      if (item.action !== "unchanged") {
        try {
          await swapIn(item, path.join(staging, item.node.path), !opts.targetDir);
          report.bytesWritten += item.node.size;
        } catch (err) {
          failed.push(failureOf(item.rel, item.root, err));
          continue;
        }
      }
      report.files.push(entry(item));
      opts.onProgress?.({ files: report.files.length, bytes: report.bytesWritten, current: item.rel });
    }
    // A database comes back alone (a consistent copy): the -wal/-shm of the one it replaced would be replayed over it.
    for (const d of deletes) {
      if (failed.some((f) => f.root === d.root && d.rel.startsWith(f.path))) continue;
      try {
        if (await deleteFile(d)) report.files.push(deleted(d));
      } catch (err) {
        failed.push(failureOf(d.rel, d.root, err));
      }
    }
    const merged: MergeDone[] = [];
    for (const m of merges) {
      try {
        merged.push(await mergeFrom(m, stagedDb(m), {}));
      } catch (err) {
        failed.push(failureOf(m.db.ref.path, m.db.ref.root, err));
      }
    }
    report.durationMs = Date.now() - started;
    return { snapshot: snap, report, undoSnapshot, resolved, warnings, ...rows(merged) };
  } finally {
    await fs.rm(staging, { recursive: true, force: true });
  }
}

interface SideFile {
  root: string;
  rel: string;
  rootDir: string;
  comps: FsPath[];
  action: "delete";
}

/** The -wal, -shm and -journal beside each file this restore writes that the snapshot does not hold (restorer.ts dropStaleSqliteSides, for restic's items). */
async function staleSideFiles(items: readonly Item[], inSnapshot: ReadonlySet<string>): Promise<SideFile[]> {
  const out: SideFile[] = [];
  for (const item of items) {
    const name = item.comps.at(-1);
    if (item.action === "unchanged" || typeof name !== "string") continue;
    for (const suffix of SQLITE_SIDE_SUFFIXES) {
      const rel = item.rel + suffix;
      if (inSnapshot.has(`${item.root}\0${rel}`) || items.some((i) => i.root === item.root && i.rel === rel)) continue;
      const comps = [...item.comps.slice(0, -1), name + suffix];
      const parent = await walkDirs(item.rootDir, comps.slice(0, -1), false).catch(() => undefined);
      const st = parent ? await fs.lstat(joinPath(parent, comps[comps.length - 1])).catch(() => undefined) : undefined;
      if (st?.isFile()) out.push({ root: item.root, rel, rootDir: item.rootDir, comps, action: "delete" });
    }
  }
  return out;
}


/**
 * `--session` on restic, found as on a native repository (agents/find-session.ts): through each
 * agent's session reader over the snapshot's files, then the session's files grown by the agent's
 * restore units. A session the snapshot lacks: the pi search of other snapshots, else not found.
 */
async function sessionUnits(
  s: ResticSession,
  snap: ResticSnapshotRecord,
  listed: readonly ResticNode[],
  id: string,
  agent: string | undefined,
  wantPath: (rel: string) => boolean,
): Promise<{ found: FoundSession; keys: Set<string>; files: FileRef[] }> {
  const files = resticSnapshotFiles(s, snap, listed);
  const rootAgent = snapshotRootAgents(snap);
  const adapters = [...new Set(rootAgent.values())].map(findAgent).filter((a): a is AgentAdapter => !!a && (agent === undefined || a.name === agent));
  const found = await resolveSession(files, id, adapters);
  if (!found) throw await sessionElsewhere(s, snap, id);
  const selected = found.meta.files.filter((f) => wantPath(f.path));
  if (!selected.length) throw new RepoError(`session ${shownName(found.meta.id)} has no file that --path matches`, "not-found");
  const available: FileRef[] = [];
  for (const root of files.roots) if (rootAgent.get(root) === found.adapter.name) for await (const f of files.list(root)) available.push({ root: f.root, path: f.path });
  const unitFiles = found.adapter.restoreUnits(selected, available).flatMap((u) => u.files);
  return { found, keys: new Set(unitFiles.map((f) => `${f.root}\0${f.path}`)), files: unitFiles };
}

/**
 * `--session` names a session the chosen snapshot lacks: name the newest other snapshot that has
 * it (one `restic find` over all snapshots), as a native restore does.
 */
async function sessionElsewhere(s: ResticSession, chosen: ResticSnapshotRecord, session: string): Promise<RepoError> {
  const matches = sessionMatcher(session);
  const hits = await findInResticSnapshots(s, `*_${escapePattern(session)}*.jsonl`);
  const others = (await listResticSnapshots(s)).filter((r) => r.id !== chosen.id).reverse();
  for (const other of others) {
    const found = new Set<string>();
    for (const node of hits.get(other.id) ?? []) {
      const where = nodeRoot(other, node.path);
      if (where && node.type === "file" && matches(where.rel)) found.add(parseSessionFileName(where.rel)!.id);
    }
    if (found.size > 1) return new RepoError(`session id "${session}" is ambiguous: ${found.size} sessions match (${[...found].slice(0, 4).join(", ")}); type more characters`, "usage");
    if (found.size === 1) {
      const id = [...found][0];
      return new RepoError(
        `snapshot ${chosen.id.slice(0, 8)} (${chosen.time}) does not hold session ${id}; the last snapshot that does is ${other.id.slice(0, 8)} (${other.time}): pi-guard restore ${other.id.slice(0, 8)} --session ${id}`,
        "not-found",
      );
    }
  }
  return new RepoError(`restic snapshot ${chosen.id.slice(0, 8)} holds no session whose id starts with "${shownName(session)}", and no other snapshot a pi session of that id (pi-guard sessions list shows every agent's sessions in every snapshot)`, "not-found");
}

/**
 * restic restores into the staging folder: the roots restored whole, or the chosen files only.
 * restic takes --include patterns, so the paths are escaped to mean themselves.
 */
async function stage(s: ResticSession, snap: ResticSnapshotRecord, paths: string[], staging: string): Promise<void> {
  await runRestic(s, ["restore", snap.id, "--target", staging, ...paths.flatMap((p) => ["--include", escapePattern(p)])]);
}

async function plannedAction(rootDir: string, comps: FsPath[], staged: string): Promise<FileAction> {
  const parent = await walkDirs(rootDir, comps.slice(0, -1), false);
  if (!parent) return "create";
  const dest = joinPath(parent, comps[comps.length - 1]);
  const st = await fs.lstat(dest).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw err;
  });
  if (!st) return "create";
  if (st.isDirectory()) throw new RefusedPath("a folder is in the way: not replaced");
  if (!st.isFile()) return "replace";
  return (await sameBytes(staged, dest, st.size)) ? "unchanged" : "replace";
}

async function sameBytes(a: string, b: FsPath, size: number): Promise<boolean> {
  if ((await fs.stat(a)).size !== size) return false;
  const [ha, hb] = await Promise.all([fs.open(a, "r"), fs.open(b, constants.O_RDONLY | constants.O_NOFOLLOW)]);
  try {
    const ba = Buffer.alloc(1 << 20);
    const bb = Buffer.alloc(1 << 20);
    for (let pos = 0; pos < size; ) {
      const [ra, rb] = await Promise.all([ha.read(ba, 0, ba.length, pos), hb.read(bb, 0, bb.length, pos)]);
      if (ra.bytesRead !== rb.bytesRead || ra.bytesRead === 0 || !ba.subarray(0, ra.bytesRead).equals(bb.subarray(0, rb.bytesRead))) return false;
      pos += ra.bytesRead;
    }
    return true;
  } finally {
    await Promise.all([ha.close(), hb.close()]);
  }
}

/** Copy the staged file to a temp name beside its destination, check its length, rename it in. */
async function swapIn(item: Item, staged: string, durable: boolean): Promise<void> {
  const parent = await walkDirs(item.rootDir, item.comps.slice(0, -1), true);
  const dest = joinPath(parent!, item.comps[item.comps.length - 1]);
  const tmp = joinPath(parent!, `.pi-guard-restore-${randomBytes(6).toString("hex")}`);
  const src = await fs.open(staged, "r");
  let out: fs.FileHandle | undefined;
  try {
    out = await fs.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, item.node.mode & 0o777 || 0o600);
    const buf = Buffer.alloc(1 << 20);
    let pos = 0;
    for (;;) {
      const { bytesRead } = await src.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      await writeFully(out, buf.subarray(0, bytesRead), pos);
      pos += bytesRead;
    }
    if (pos !== item.node.size) throw new RepoError(`${item.rel}: staged copy has ${pos} bytes, the snapshot lists ${item.node.size}`, "corrupt");
    await out.chmod(item.node.mode & 0o7777 || 0o600);
    if (durable) await out.sync();
    await out.close();
    out = undefined;
    if (item.node.mtime && !Number.isNaN(Date.parse(item.node.mtime))) await fs.utimes(tmp, new Date(), new Date(Date.parse(item.node.mtime)));
    // The parent was checked when the walk made it; check the final name once more right before the rename.
    const st = await fs.lstat(dest).catch(() => undefined);
    if (st?.isDirectory()) throw new RefusedPath("a folder is in the way: not replaced");
    await fs.rename(tmp, dest);
    if (durable) await syncDir(parent!);
  } catch (err) {
    await out?.close().catch(() => undefined);
    await fs.unlink(tmp).catch(() => undefined);
    throw err;
  } finally {
    await src.close();
  }
}

function failureOf(rel: string, root: string, err: unknown): RestoreFailure {
  if (err instanceof RefusedPath) return { path: rel, root, error: err.message, kind: "refused" };
  if (err instanceof RepoError) return { path: rel, root, error: err.message, kind: err.kind === "corrupt" ? "damaged" : "io" };
  return { path: rel, root, error: describeFsError(err, rel).message, kind: "io" };
}
