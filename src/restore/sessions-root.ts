// Root "sessions" of a snapshot, restored in place after the accident took what named it: the
// symlink <agent dir>/sessions to a folder on another disk, or `sessionDir` in settings.json (the
// npm reify deletes both with everything else it does not know). The config then has no root
// "sessions", and the restore that puts the link or settings.json back would refuse the sessions,
// needing a second run; when the folder behind a link is gone too, even that run refused to write
// through the dangling link. This decides where such a root goes in the same run.
//
// A snapshot is hostile input (invariant 9), so the root is taken over only on its own evidence
// and only for what a sessions dir holds:
// - its recorded path is what the snapshot's own agent root names: <agent root>/sessions with a
//   symlink node `sessions` there, or settings.json's sessionDir (absolute or ~/);
// - nothing else names a sessions dir now (no PI_CODING_AGENT_SESSION_DIR), no folder stands
//   where the link goes, and --paths/--session do not leave the link or settings.json out;
// - the folder it leads to is outside the agent dir and does not hold it, and its parent exists
//   (a folder is re-created, never a path to it: a disk that is not mounted is not papered over);
// - this run writes there only pi session files (`*.jsonl`, at the top or in one `--<cwd>--`
//   folder) where nothing is yet; a file it would replace (nothing saved it first: the undo
//   snapshot covers the configured roots) and anything else are refused, named, for the next run,
//   which has the root configured and saves what it replaces.
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Config, isInside } from "../config/config.js";
import { expandTilde, sessionsDir } from "../agents/pi/paths.js";
import type { TreeNode } from "../repo/format.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import { agentRootPath } from "../repo/parent-heads.js";
import { resolveDestRoot } from "./safe-path.js";
import { SnapshotReader } from "./snapshot-reader.js";

const SESSIONS = "sessions";
/** settings.json is read to find sessionDir: a bigger one is not pi's. */
const MAX_SETTINGS_BYTES = 1024 * 1024;

/** A root whose destination the config does not name yet: only what `allows` passes is written, only where nothing is. */
export interface AdoptedRoot {
  allows: (rel: string, type: TreeNode["type"]) => boolean;
  /** Why a node is not written in this run, and what to run for it. */
  refusal: (replacing: boolean) => string;
}

export interface SessionsRootPlace {
  /** The root's destination as the config names it once this restore is done (the restore journal keeps it). */
  destination: string;
  /** The real folder its files go to, when the destination is a link this restore puts back, or one whose folder is gone. */
  realDir?: string;
  /** Set when the config does not name the root now. */
  adopted?: AdoptedRoot;
}

/**
 * Where root "sessions" of `record` goes in place: `place`, or `why` not (a clause for the
 * refusal); undefined when it needs nothing beyond the config (configured, and not a link whose
 * folder is gone).
 */
export async function sessionsRootInPlace(
  repo: Repository,
  record: SnapshotRecord,
  config: Config,
  opts: { filtered: boolean },
): Promise<{ place?: SessionsRootPlace; why?: string } | undefined> {
  const recorded = record.snapshot.roots.find((r) => r?.name === SESSIONS)?.path;
  const configured = config.roots.find((r) => r.name === SESSIONS);
  const dangling = configured && config.sessionsLink?.state === "missing" && config.sessionsLink.path === configured.path ? config.sessionsLink : undefined;
  if (typeof recorded !== "string" || (configured && !dangling)) return undefined;
  const linkPath = path.join(config.agentDir, SESSIONS);
  const named = await namedBySnapshot(repo, record);
  if (dangling) {
    // The user's link, whose folder is gone: write into where it points, if the snapshot's link says the same.
    if (named.link?.target === undefined || path.resolve(config.agentDir, named.link.target) !== dangling.target) return undefined;
    const realDir = await folderBehind(dangling.target, config.agentDir);
    return typeof realDir === "string" ? { place: { destination: configured!.path, realDir } } : { why: realDir.why };
  }
  const home = process.env.HOME || os.homedir();
  const now = sessionsDir({ agentDir: config.agentDir, home });
  if (now.source !== "default" && now.source !== "settings") return { why: `pi is told to keep its sessions in ${now.dir} now` };
  const agentPath = agentRootPath(record.snapshot.roots);
  // pi reads a relative sessionDir against the folder it runs in: only an absolute or ~/ one names a place.
  const setting = named.sessionDir === undefined ? undefined : expandTilde(named.sessionDir, home);
  const fromSettings = setting !== undefined && path.isAbsolute(setting) && path.resolve(setting) === recorded;
  const fromLink = setting === undefined && agentPath !== undefined && recorded === path.join(agentPath, SESSIONS) && typeof named.link?.target === "string";
  if (!fromSettings && !fromLink) return { why: "nothing in the snapshot's agent dir names it" };
  const what = fromSettings ? `settings.json (its sessionDir ${recorded})` : `the link ${linkPath}`;
  if (opts.filtered) return { why: `--paths and --session leave out ${what}; restore without them first` };
  let realDir: string | { why: string };
  if (fromLink) {
    const there = await fs.lstat(linkPath).catch(() => undefined);
    if (there && !there.isSymbolicLink()) return { why: `${linkPath} is not a link now` };
    realDir = await folderBehind(path.resolve(config.agentDir, named.link!.target!), config.agentDir);
  } else realDir = await folderBehind(recorded, config.agentDir);
  if (typeof realDir !== "string") return { why: realDir.why };
  const again = `pi-guard restore ${record.id.slice(0, 8)}`;
  const adopted: AdoptedRoot = {
    allows: sessionShaped,
    refusal: (replacing) =>
      replacing
        ? `not replaced: this run puts back ${what} and saved nothing of ${realDir} first; run \`${again}\` again, which does`
        : `not a pi session file, so not written before ${what} is back: run \`${again}\` again to restore it`,
  };
  return { place: { destination: fromLink ? linkPath : recorded, realDir, adopted } };
}

/** What the snapshot's agent root says about the sessions dir: its `sessions` link, and settings.json's sessionDir. */
async function namedBySnapshot(repo: Repository, record: SnapshotRecord): Promise<{ link?: TreeNode; sessionDir?: string }> {
  const reader = await SnapshotReader.open(repo);
  let link: TreeNode | undefined;
  let settings: TreeNode | undefined;
  try {
    for await (const node of reader.files(record.snapshot)) {
      if (node?.root !== "agent" || node.pathBytes !== undefined) continue;
      if (node.path === SESSIONS && node.type === "symlink" && typeof node.target === "string") link = node;
      if (node.path === "settings.json" && node.type === "file") settings = node;
    }
    if (!settings || typeof settings.size !== "number" || settings.size > MAX_SETTINGS_BYTES) return { link };
    let value: unknown;
    try {
      value = JSON.parse((await reader.read(settings)).toString("utf8"));
    } catch (err) {
      if (err instanceof SyntaxError) return { link };
      throw err;
    }
    const dir = (value as { sessionDir?: unknown } | null)?.sessionDir;
    return { link, sessionDir: typeof dir === "string" && dir ? dir : undefined };
  } finally {
    await reader.close();
  }
}

/**
 * The real folder a sessions dir at `dir` is written into, or why not: outside the agent dir and
 * not holding it, and either there or with its parent there.
 */
async function folderBehind(dir: string, agentDir: string): Promise<string | { why: string }> {
  let real: string;
  let agentReal: string;
  try {
    [real, agentReal] = await Promise.all([resolveDestRoot(dir), resolveDestRoot(agentDir)]);
  } catch (err) {
    return { why: (err as Error).message };
  }
  if (isInside(real, agentReal)) return { why: `${dir} is inside the agent dir` };
  if (isInside(agentReal, real)) return { why: `${dir} holds the agent dir` };
  const parent = path.dirname(real);
  if (!(await fs.stat(parent).then((s) => s.isDirectory(), () => false))) return { why: `${dir} and its parent ${parent} are missing (is that disk mounted?)` };
  return real;
}

/** What pi keeps in a sessions dir: `*.jsonl` files at the top or in one `--<cwd>--` folder, and those folders. */
function sessionShaped(rel: string, type: TreeNode["type"]): boolean {
  const parts = rel.split("/");
  const cwdFolder = (p: string) => p.length >= 4 && p.startsWith("--") && p.endsWith("--");
  const sessionFile = (p: string) => p.endsWith(".jsonl") && !p.startsWith(".");
  if (type === "dir") return parts.length === 1 && cwdFolder(parts[0]);
  if (type !== "file") return false;
  return parts.length === 1 ? sessionFile(parts[0]) : parts.length === 2 && cwdFolder(parts[0]) && sessionFile(parts[1]);
}
