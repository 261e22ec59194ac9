// `pi-guard snapshot` on a restic repository: restic backs up the same roots, minus the same
// excludes, as pi-guard's own snapshot would take, tagged so that pi-guard finds its way back, by
// the same policy as a native snapshot (snapshot/backup.ts): reserved tags, a missing agent dir,
// --init, and the suspect-loss guard.
import { hostName } from "../host.js";
import { promises as fs } from "node:fs";
import type { Config } from "../config/config.js";
import type { MirrorShipment } from "../repo/ship.js";
import { RepoError } from "../repo/errors.js";
import { SUSPECT_LOSS_TAG } from "../repo/format.js";
import { agentDirPresent, assertOwnTags, checkMissingAgentDir } from "../snapshot/backup.js";
import { judgeLoss, ScanPlaces, sessionFileTest, type LossVerdict } from "../snapshot/loss-guard.js";
import { scanSources } from "../snapshot/scan.js";
import type { SourceRoot } from "../snapshot/sources.js";
import { runRestic, type ResticSession, unexpectedOutput } from "./run.js";
import { agentTag, isOwnTag, listResticNodes, listResticSnapshots, nodeRoot, PI_GUARD_TAG, type ResticNode, type ResticSnapshotRecord, rootTag } from "./snapshots.js";

export interface ResticBackupOptions {
  tags?: string[];
  /** The files that vanished since the last whole snapshot were deleted on purpose: no suspect-loss tag. */
  acceptLoss?: boolean;
  onProgress?: (p: { files: number; bytes: number; current: string }) => void;
  signal?: AbortSignal;
}

export interface ResticBackupResult {
  id: string;
  snapshot: ResticSnapshotRecord;
  summary: { files: number; filesNew: number; filesChanged: number; filesUnchanged: number; bytesTotal: number; bytesNew: number; durationMs: number };
  /** restic exit code 3: these could not be read, the snapshot holds everything else. */
  skipped: { path: string; error: string }[];
  /** The snapshot lost most files of the last whole one: tagged suspect-loss, unless acceptLoss. */
  loss?: LossVerdict;
  /** The last whole snapshot the loss was judged against. */
  parent?: string;
}

export interface ResticSnapshotOptions extends ResticBackupOptions {
  allowEmpty?: boolean;
  init?: boolean;
}

/**
 * `pi-guard snapshot` on restic, by the native policy; null when there was nothing to back up
 * (allowEmpty). Mirrors are pi-guard repositories: each one of the config is reported as not
 * shipped to, rather than left out in silence.
 */
export async function resticSnapshot(
  config: Config,
  open: () => Promise<ResticSession>,
  opts: ResticSnapshotOptions = {},
): Promise<{ result: ResticBackupResult | null; created: boolean; mirrors: MirrorShipment[] }> {
  assertOwnTags(opts.tags, { also: isOwnTag });
  const missing = !(await agentDirPresent(config));
  if (missing && !opts.allowEmpty) await checkMissingAgentDir(config, opts, async () => undefined);
  // Opened only now: a missing agent dir is said as such, not as a missing password.
  const s = await open();
  let created = false;
  if (opts.init && !(await snapshotsIfAny(s))) {
    const { resticInit } = await import("./repository.js");
    await resticInit(s);
    created = true;
  }
  if (missing) {
    // One listing says both whether there is a repository and which snapshot holds the agent dir.
    const held = async () => {
      const all = created ? undefined : await snapshotsIfAny(s);
      return all && newestWhole(all, holdsAgentDir(config.agentDir));
    };
    await checkMissingAgentDir(config, opts, held);
    return { result: null, created, mirrors: [] };
  }
  const result = await resticBackup(config, s, opts);
  const mirrors = config.mirrors.map((mirror) => ({ mirror, error: "mirrors are shipped to only from pi-guard's own repositories, not from a restic one (docs/RESTIC.md)" }));
  return { result, created, mirrors };
}

/** pi-guard's snapshots in the repository; undefined when there is no repository. */
async function snapshotsIfAny(s: ResticSession): Promise<ResticSnapshotRecord[] | undefined> {
  return listResticSnapshots(s).catch((err: unknown) => {
    if (err instanceof RepoError && err.kind === "not-found") return undefined;
    throw err;
  });
}

/**
 * The newest pi-guard snapshot of this host among `records` (oldest first) that is no suspected
 * loss and passes `fits`, as native ones are chosen (snapshotter.ts findBases).
 */
function newestWhole(records: ResticSnapshotRecord[], fits: (r: ResticSnapshotRecord) => boolean): ResticSnapshotRecord | undefined {
  const host = hostName();
  return records.filter((r) => r.host === host && !r.tags.includes(SUSPECT_LOSS_TAG) && fits(r)).at(-1);
}

/** Whether a snapshot's roots hold `agentDir` as root "agent" (its other roots may differ). */
const holdsAgentDir = (agentDir: string) => (r: ResticSnapshotRecord) => r.roots.some((root) => root.name === "agent" && root.path === agentDir);

/** Same roots, in any order: restic records the roots it was given, which are those present. */
const sameRoots = (a: SourceRoot[], b: SourceRoot[]) => {
  const key = (rs: SourceRoot[]) => JSON.stringify(rs.map((r) => [r.name, r.path]).sort());
  return key(a) === key(b);
};

/**
 * The suspect-loss guard for restic (loss-guard.ts): the files of the last whole snapshot (`restic
 * ls`) against the files on disk now, scanned with the same roots and filter, before restic runs,
 * so that the tag is part of the snapshot from the start (restic can only add one later by
 * rewriting it). The last whole snapshot is the newest pi-guard snapshot of this host holding the
 * agent dir that is no suspected loss, whatever its other roots: the accident that deletes a
 * sessions symlink or settings.json takes root "sessions" with it, and every file of a root that
 * is not backed up now counts as lost. A deletion in the seconds between the scan and restic's own
 * read is not seen.
 */
async function judgeResticLoss(config: Config, s: ResticSession, roots: SourceRoot[], signal?: AbortSignal): Promise<{ loss?: LossVerdict; parent?: string }> {
  const host = hostName();
  const nodeKey = (root: string, rel: string) => `${root}\0${rel}`;
  const now = new Set<string>();
  for await (const e of scanSources(roots, config.filter, () => undefined)) if (e.type === "file") now.add(nodeKey(e.root, e.path));
  const holdsIt = holdsAgentDir(config.agentDir);
  let parent: ResticSnapshotRecord | undefined;
  const before: { root: string; path: string; at: string }[] = [];
  const collect = (node: ResticNode) => {
    const where = node.type === "file" ? nodeRoot(parent!, node.path) : undefined;
    if (where) before.push({ root: where.root, path: where.rel, at: node.path });
  };
  // Most often the newest snapshot holding the agent dir is the last whole one: one restic process.
  const onSnapshot = (r: ResticSnapshotRecord | undefined) => {
    if (r && r.host === host && !r.tags.includes(SUSPECT_LOSS_TAG) && holdsIt(r)) parent = r;
    return parent !== undefined;
  };
  const listed = await listResticNodes(s, { host, paths: [config.agentDir] }, collect, { signal, onSnapshot });
  if (!listed) return {};
  if (!parent) {
    // The newest is a suspected loss: the last whole one is older.
    parent = newestWhole(await listResticSnapshots(s, { signal }), holdsIt);
    if (!parent) return {};
    await listResticNodes(s, parent.id, collect, { signal });
  }
  let found = (f: (typeof before)[number]) => now.has(nodeKey(f.root, f.path));
  if (!sameRoots(parent.roots, roots)) {
    const places = new ScanPlaces(roots);
    for (const key of now) places.add(key.slice(0, key.indexOf("\0")), key.slice(key.indexOf("\0") + 1));
    found = (f) => places.has(f.at, f.path);
  }
  const files = before.map((f) => ({ root: f.root, path: f.path, found: found(f) }));
  return { loss: judgeLoss(files, now.size, config.watch.suspectLoss, sessionFileTest(config), parent.id), parent: parent.id };
}

/** restic patterns treat * ? [ and \ specially; a root path is meant literally. */
export function escapePattern(p: string): string {
  return p.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/**
 * pi-guard's excludes are globs relative to a root ("bin", "**\/node_modules"); restic's are
 * matched against absolute paths, so each is anchored at each root. Includes have no restic
 * equivalent for a backup, so a config with `sources.include` is refused rather than widened.
 */
export function excludeArgs(roots: SourceRoot[], filter: Config["filter"]): string[] {
  if (filter.include.length) {
    throw new RepoError("sources.include in the config has no restic equivalent: a restic repository backs up whole roots minus sources.exclude (docs/RESTIC.md)", "usage");
  }
  const args: string[] = [];
  for (const root of roots) for (const glob of filter.exclude) args.push("--exclude", `${escapePattern(root.path)}/${glob.replace(/^\/+/, "")}`);
  return args;
}

/** The roots that exist now; restic fails a backup over a path that is not there. */
async function presentRoots(roots: SourceRoot[]): Promise<SourceRoot[]> {
  const out: SourceRoot[] = [];
  for (const r of roots) if (await fs.stat(r.path).then((s) => s.isDirectory(), () => false)) out.push(r);
  return out;
}

const SNAPSHOT_ID = /^[0-9a-f]{8,64}$/;
const count = (v: unknown): number => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : NaN);

export async function resticBackup(config: Config, s: ResticSession, opts: ResticBackupOptions = {}): Promise<ResticBackupResult> {
  const roots = await presentRoots(config.roots);
  if (!roots.length) throw new RepoError(`nothing to back up: ${config.agentDir} does not exist`, "not-found");
  for (const t of opts.tags ?? []) if (t.includes(",") || t.trim() === "") throw new RepoError(`--tag "${t}": restic tags cannot be empty or hold a comma`, "usage");
  const excludes = excludeArgs(roots, config.filter);
  const { loss, parent } = await judgeResticLoss(config, s, roots, opts.signal);
  const guard = loss && !opts.acceptLoss && !opts.tags?.includes(SUSPECT_LOSS_TAG) ? [SUSPECT_LOSS_TAG] : [];
  const agents = roots.flatMap((r) => (config.rootAgents[r.name] ? [agentTag(r.name, config.rootAgents[r.name])] : []));
  const tags = [PI_GUARD_TAG, ...roots.map(rootTag), ...agents, ...(opts.tags ?? []), ...guard];
  const args = ["backup", "--json", "--host", hostName(), ...tags.flatMap((t) => ["--tag", t]), ...excludes, "--", ...roots.map((r) => r.path)];
  let summary: Record<string, unknown> | undefined;
  let bad: string | undefined;
  const skipped: { path: string; error: string }[] = [];
  const started = Date.now();
  const r = await runRestic(s, args, {
    okExitCodes: [3],
    signal: opts.signal,
    onJson: (v) => {
      const o = v as Record<string, unknown>;
      if (!o || typeof o !== "object" || Array.isArray(o)) return void (bad ??= JSON.stringify(v));
      if (o.message_type === "status") {
        const files = count(o.files_done);
        const bytes = count(o.bytes_done);
        const current = Array.isArray(o.current_files) && typeof o.current_files[0] === "string" ? o.current_files[0] : "";
        if (Number.isFinite(files) && Number.isFinite(bytes)) opts.onProgress?.({ files, bytes, current });
      } else if (o.message_type === "summary") summary = o;
      else if (o.message_type === "error") skipped.push(errorItem(o));
    },
  });
  if (bad) throw unexpectedOutput("backup", bad);
  if (r.exitCode === 3) skipped.push(...stderrErrors(r.stderr).filter((e) => !skipped.some((k) => k.path === e.path)));
  // restic 0.14 prints the short id (8 hex digits); later versions the full one.
  const shortId = summary?.snapshot_id;
  if (typeof shortId !== "string" || !SNAPSHOT_ID.test(shortId)) throw unexpectedOutput("backup", summary ? `summary without a snapshot id: ${JSON.stringify(summary).slice(0, 60)}` : "(no summary line)");
  const numbers = {
    filesNew: count(summary!.files_new),
    filesChanged: count(summary!.files_changed),
    filesUnchanged: count(summary!.files_unmodified),
    bytesTotal: count(summary!.total_bytes_processed),
    bytesNew: count(summary!.data_added),
  };
  if (Object.values(numbers).some((n) => Number.isNaN(n))) throw unexpectedOutput("backup", `summary ${JSON.stringify(summary).slice(0, 60)}`);
  // Success is what the repository holds, not what restic said: the snapshot must list, with our tags.
  const matches = (await listResticSnapshots(s, { signal: opts.signal })).filter((x) => x.id.startsWith(shortId));
  if (matches.length !== 1) throw new RepoError(`restic reported snapshot ${shortId.slice(0, 8)}, but the repository ${matches.length ? "lists several such ids" : "does not list it as pi-guard's"}`, "io");
  const made = matches[0];
  const id = made.id;
  if (r.exitCode === 3 && skipped.length === 0) skipped.push({ path: "", error: "restic could not read some files (exit 3)" });
  const summaryOut = { files: numbers.filesNew + numbers.filesChanged + numbers.filesUnchanged, ...numbers, durationMs: Date.now() - started };
  return { id, snapshot: made, summary: summaryOut, skipped, loss, parent };
}

function errorItem(o: Record<string, unknown>): { path: string; error: string } {
  const err = o.error as Record<string, unknown> | undefined;
  const message = typeof err?.message === "string" ? err.message : typeof o.error === "string" ? o.error : "unreadable";
  return { path: typeof o.item === "string" ? o.item : "", error: message.slice(0, 200) };
}

/** restic 0.14 prints read errors on stderr: one JSON object, or "error: open /x: permission denied". */
function stderrErrors(stderr: string): { path: string; error: string }[] {
  const out: { path: string; error: string }[] = [];
  for (const line of stderr.split("\n")) {
    const t = line.trim();
    if (t.startsWith("{")) {
      try {
        const o = JSON.parse(t) as Record<string, unknown>;
        if (o && o.message_type === "error") out.push(errorItem(o));
      } catch {
        // not JSON after all: fall through to the text form
      }
      continue;
    }
    const m = /^error: (?:\w+ )?(\/.*?): (.+)$/.exec(t);
    if (m) out.push({ path: m[1], error: m[2] });
  }
  return out;
}
