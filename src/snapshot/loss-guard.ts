/**
 * The suspect-loss guard's rule, the same on every snapshot path: `pi-guard snapshot`, the
 * scheduled snapshot job, the watcher, an in-place restore's undo snapshot and the restic engine.
 * pi-guard exists because an `npm install` removed a whole sessions dir; a snapshot that recorded
 * that state as the newest truth would make `restore latest` restore the loss. So a snapshot that
 * loses most of the files at once, or every session file, is still taken (it is what the disk
 * holds) but tagged, and never "latest" nor a parent, unless the user accepts the deletion.
 *
 * Losses are counted against the last whole snapshot file by file, not as a difference of totals:
 * a new session started after the accident must not hide the lost ones. That snapshot is the
 * newest whole one of this host with the same agent dir (snapshotter.ts findBases): mostly the
 * parent, but not when the roots changed. The accident changes them itself: it deletes the
 * sessions symlink, or the settings.json whose sessionDir named a moved sessions dir, and with it
 * root "sessions"; every file of a root that is not configured now then counts as lost.
 */
import os from "node:os";
import path from "node:path";
import { findAgent } from "../agents/registry.js";
import { isInside, META_ROOT_NAME, type Config, type WatchSettings } from "../config/config.js";
import { sessionsDir } from "../agents/pi/paths.js";
import { parseSessionFileName } from "../agents/pi/writer.js";
import { AGENT_CLEANUP_TAG, type AgentCleanup, type CleanupRecord } from "../repo/format.js";
import type { AgeCleanup, FileRef } from "../agents/types.js";
import type { ParentFile } from "./snapshotter.js";
import type { SourceRoot } from "./sources.js";

/** How a deliberate deletion is accepted: a snapshot taken so is not tagged, and becomes the last whole state. */
export const ACCEPT_LOSS_COMMAND = "pi-guard snapshot --accept-loss";

export interface LossVerdict {
  /** files: most files vanished; sessions: every session file of an agent; rows: a SQLite db lost most rows of its key table. */
  reason: "files" | "sessions" | "rows";
  /** Files of the last whole snapshot. */
  filesBefore: number;
  /** Files this snapshot holds. */
  filesNow: number;
  /** Files of the last whole snapshot that are gone. */
  lost: number;
  /** A few of them, for the log. */
  sample: string[];
  /** The last whole snapshot's id, when the caller named it (it is not the parent when the roots changed). */
  against?: string;
  /** reason "rows": each db that lost most rows of its key table ("root:path"). */
  rows?: { file: string; table: string; before: number; now: number }[];
}

export function judgeLoss(
  parentFiles: ParentFile[],
  filesNow: number,
  rule: WatchSettings["suspectLoss"],
  /** Whether a file is a session file, or which agent's (every session file of one agent gone is a loss). */
  sessionGroup: (f: ParentFile) => string | boolean | undefined,
  against?: string,
): LossVerdict | undefined {
  const gone = parentFiles.filter((f) => !f.found);
  // A db emptied in place (a migration that dropped the sessions) vanishes from no folder.
  const shrunk = parentFiles.flatMap((f) => {
    const r = f.rows;
    const lostRows = r ? r.before - r.now : 0;
    return r && lostRows >= rule.minFiles && lostRows >= rule.fraction * r.before ? [{ file: `${f.root}:${f.path}`, table: r.table, before: r.before, now: r.now }] : [];
  });
  if (gone.length === 0 && shrunk.length === 0) return undefined;
  const groups = new Map<string, { total: number; gone: number }>();
  for (const f of parentFiles) {
    const g = sessionGroup(f);
    if (!g) continue;
    const key = g === true ? "" : g;
    const n = groups.get(key) ?? { total: 0, gone: 0 };
    n.total++;
    if (!f.found) n.gone++;
    groups.set(key, n);
  }
  const verdict = (reason: LossVerdict["reason"]): LossVerdict => ({
    reason,
    filesBefore: parentFiles.length,
    filesNow,
    lost: gone.length,
    sample: gone.slice(0, 5).map((f) => `${f.root}:${f.path}`),
    ...(against ? { against } : {}),
  });
  if ([...groups.values()].some((g) => g.total > 0 && g.gone === g.total)) return verdict("sessions");
  if (gone.length >= rule.minFiles && gone.length >= rule.fraction * parentFiles.length) return verdict("files");
  if (shrunk.length) return { ...verdict("rows"), rows: shrunk, sample: shrunk.slice(0, 5).map((r) => r.file) };
  return undefined;
}

/** Days an agent's files may age before a burst of them vanishing reads as its own cleanup, when its adapter does not say (AgentAdapter.ageCleanup). */
export const DEFAULT_CLEANUP_DAYS = 30;
/** Removed session files a cleanup record names; the count says how many there were. */
export const CLEANUP_SAMPLE = 20;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface CleanupJudge {
  /** Which agent a file belongs to (undefined: none, never a cleanup). */
  agentOf: (f: ParentFile) => string | undefined;
  /** Which agent's session file it is (sessionFileTest). */
  sessionOf: (f: ParentFile) => string | boolean | undefined;
  /** The agent's age-based cleanup, when its adapter knows it. */
  cleanupOf: (agent: string) => AgeCleanup | undefined;
  /** When the snapshot is taken, ms. */
  now: number;
  /** Files of this scan the last whole snapshot lacks: a session begun since counts as one that remains. */
  newFiles?: readonly FileRef[];
}

/**
 * An agent's own age-based cleanup (Claude Code's cleanupPeriodDays sweep, Gemini CLI's
 * sessionRetention): it deletes old files in a burst as the agent starts, which the "most files at
 * once" rule would call a loss, and which is not one. Per agent, the files of the last whole
 * snapshot that are gone are that agent's cleanup when every one of them was recorded with an
 * mtime older than the agent's days, at least one is a session file, and a session file of that
 * agent is still there, an older one or one begun since (the sweep runs as the agent starts a
 * session; a wipe takes every one). Anything else gone stays for judgeLoss.
 * Returns the cleanups found and the files they account for.
 */
export function judgeCleanup(parentFiles: readonly ParentFile[], judge: CleanupJudge): { agents: AgentCleanup[]; swept: Set<ParentFile> } | undefined {
  const gone = new Map<string, ParentFile[]>();
  const sessionsLeft = new Set<string>();
  for (const f of parentFiles) {
    const agent = judge.agentOf(f);
    if (agent === undefined) continue;
    if (f.found) {
      if (judge.sessionOf(f) === agent) sessionsLeft.add(agent);
      continue;
    }
    const list = gone.get(agent);
    if (list) list.push(f);
    else gone.set(agent, [f]);
  }
  for (const f of judge.newFiles ?? []) {
    const file = { ...f, found: true };
    const agent = judge.agentOf(file);
    if (agent !== undefined && judge.sessionOf(file) === agent) sessionsLeft.add(agent);
  }
  const agents: AgentCleanup[] = [];
  const swept = new Set<ParentFile>();
  for (const [agent, files] of gone) {
    if (!sessionsLeft.has(agent)) continue;
    const rule = judge.cleanupOf(agent);
    const days = rule?.days ?? DEFAULT_CLEANUP_DAYS;
    const cutoff = judge.now - days * DAY_MS;
    if (!files.every((f) => f.mtimeMs !== undefined && f.mtimeMs < cutoff)) continue;
    const sessions = files.filter((f) => judge.sessionOf(f) === agent);
    if (sessions.length === 0) continue;
    for (const f of files) swept.add(f);
    agents.push({ agent, days, ...(rule ? { setting: rule.setting } : {}), files: files.length, sessions: sessions.length, sample: sessions.slice(0, CLEANUP_SAMPLE).map((f) => `${f.root}:${f.path}`) });
  }
  return agents.length ? { agents, swept } : undefined;
}

export interface GuardVerdict {
  /** Most files, or every session file of an agent, vanished: tagged suspect-loss unless accepted. */
  loss?: LossVerdict;
  /** An agent removed its old files itself: recorded (tag agent-cleanup), not a loss. */
  cleanup?: CleanupRecord;
}

/**
 * The guard's whole verdict on a snapshot about to be committed, for the pi-guard engine's
 * snapshot paths (the command, the scheduled job, the watcher): an agent's age-based cleanup is
 * recognised first, and what it removed is not counted as lost; the rest is judged by judgeLoss.
 * `against` is the last whole snapshot the files were judged against (no record without it).
 */
export function judgeSnapshot(
  parentFiles: ParentFile[],
  filesNow: number,
  config: Pick<Config, "agentDir" | "roots" | "watch"> & Partial<Pick<Config, "rootAgents" | "agents">>,
  against: string | undefined,
  opts: { now?: number; newFiles?: readonly FileRef[] } = {},
): GuardVerdict {
  const sessionOf = sessionFileTest(config);
  const anyGone = parentFiles.some((f) => !f.found);
  const sweep = anyGone && against ? judgeCleanup(parentFiles, { agentOf: agentOfRoot(config), sessionOf, cleanupOf: (agent) => ageCleanupOf(config, agent), now: opts.now ?? Date.now(), newFiles: opts.newFiles }) : undefined;
  const judged = sweep ? parentFiles.map((f) => (sweep.swept.has(f) ? { ...f, found: true } : f)) : parentFiles;
  const loss = judgeLoss(judged, filesNow, config.watch.suspectLoss, sessionOf, against);
  return { ...(loss ? { loss } : {}), ...(sweep && against ? { cleanup: { against, agents: sweep.agents } } : {}) };
}

/** Which agent a file is of, by its root: the config's rootAgents, and root "sessions" is pi's (as in sessionFileTest). */
function agentOfRoot(config: Partial<Pick<Config, "rootAgents">>): (f: ParentFile) => string | undefined {
  return (f) => config.rootAgents?.[f.root] ?? (f.root === "sessions" ? "pi" : undefined);
}

/** The agent's age-based cleanup as its adapter reads it from the agent's settings. */
function ageCleanupOf(config: Partial<Pick<Config, "agents">>, agent: string): AgeCleanup | undefined {
  const loc = config.agents?.find((a) => a.location.agent === agent)?.location;
  const adapter = loc ? findAgent(agent) : undefined;
  try {
    return loc && adapter?.ageCleanup ? adapter.ageCleanup(loc) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The line a snapshot that recorded an agent's cleanup ends with: who removed what, and where it
 * stays. Paths come from a snapshot: no control character reaches a terminal or a log line.
 */
export function describeCleanup(c: CleanupRecord, snapshotId: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = (s: string) => s.replace(/[\u0000-\u001f\u007f]/g, "?");
  const parts = c.agents.map((a) => {
    const sample = a.sample.slice(0, 3).map(clean).join(", ");
    return `${a.sessions} ${clean(a.agent)} session file(s) (${a.files} file(s)) older than ${a.days} days were removed${a.setting ? ` (${clean(a.setting)})` : ""}, e.g. ${sample}${a.sessions > 3 ? ", ..." : ""}`;
  });
  return `agent cleanup: ${parts.join("; ")}. Snapshot ${snapshotId.slice(0, 8)} is tagged ${AGENT_CLEANUP_TAG}; what was removed stays restorable from snapshot ${c.against.slice(0, 8)}, which forget keeps whatever the policy`;
}

/**
 * Which agent's session a file of a snapshot is: pi's are those below the sessions dir, wherever
 * it is now, and every file of a root "sessions" (a last whole snapshot may have one the config
 * lacks now); another agent's are what its adapter calls session files (Claude Code's transcripts,
 * Codex's rollouts), in the roots the config gives that agent. Each agent is judged alone, so that
 * a Claude Code sweep that took every transcript is flagged even while pi's sessions are all there.
 */
export function sessionFileTest(config: Pick<Config, "agentDir" | "roots"> & Partial<Pick<Config, "rootAgents">>): (f: ParentFile) => string | undefined {
  const dir = sessionsDir({ agentDir: config.agentDir, home: process.env.HOME || os.homedir() }).dir;
  // The deepest root that holds it: a symlinked sessions dir is a root of its own inside the agent root.
  const root = config.roots.filter((r) => isInside(dir, r.path) && r.name !== META_ROOT_NAME).sort((a, b) => b.path.length - a.path.length)[0];
  const prefix = root ? path.relative(root.path, dir).split(path.sep).join("/") : "";
  const isPi = (f: ParentFile) => f.root === "sessions" || (!!root && f.root === root.name && (prefix === "" || f.path.startsWith(`${prefix}/`)));
  const others = new Map(Object.entries(config.rootAgents ?? {}).flatMap(([rootName, agent]) => (agent === "pi" ? [] : [[rootName, findAgent(agent)] as const])));
  return (f) => {
    if (isPi(f)) return "pi";
    const adapter = others.get(f.root);
    return adapter?.sessions.isSessionFile({ root: f.root, path: f.path }) ? adapter.name : undefined;
  };
}

/**
 * The files a scan found, by where they are, to judge against a last whole snapshot whose roots are
 * not the scan's. A file is found again at the same place under other roots (a sessions dir that
 * became a symlink is walked as root "sessions" by the link's path, so agent:sessions/x and
 * sessions:x are one place), or, a pi session file, by its name anywhere (a sessions dir moved by
 * sessionDir keeps its file names). A file of a root the scan did not walk is not found.
 */
export class ScanPlaces {
  private readonly places = new Set<string>();
  private readonly sessionNames = new Set<string>();
  private readonly rootPaths: Map<string, string>;

  constructor(roots: readonly SourceRoot[]) {
    this.rootPaths = new Map(roots.map((r) => [r.name, r.path]));
  }

  add(root: string, rel: string): void {
    const at = placeIn(this.rootPaths, root, rel);
    if (at !== undefined) this.places.add(at);
    const name = sessionName(rel);
    if (name) this.sessionNames.add(name);
  }

  /** Whether the scan found the file at `place` (undefined: its root is unknown), or the session file named as `rel` ends. */
  has(place: string | undefined, rel: string): boolean {
    if (place !== undefined && this.places.has(place)) return true;
    const name = sessionName(rel);
    return name !== undefined && this.sessionNames.has(name);
  }
}

/** The root paths of a snapshot's untrusted roots, by name. */
export function rootPathsOf(roots: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (Array.isArray(roots)) for (const r of roots) if (typeof r?.name === "string" && typeof r?.path === "string") out.set(r.name, r.path);
  return out;
}

/** Where a file of root `root` is on disk. */
export function placeIn(rootPaths: Map<string, string>, root: string, rel: string): string | undefined {
  const at = rootPaths.get(root);
  return at === undefined ? undefined : path.posix.join(at, rel);
}

function sessionName(rel: string): string | undefined {
  const name = rel.slice(rel.lastIndexOf("/") + 1);
  return parseSessionFileName(name) ? name : undefined;
}

/**
 * The one loud line a snapshot judged a loss ends with: what vanished, how many, and both ways out.
 * The loss was counted against `v.against`, else `parent`.
 */
export function describeLoss(v: LossVerdict, snapshotId: string, parent: string | undefined): string {
  const against = v.against ?? parent;
  const of = against ? ` of snapshot ${against.slice(0, 8)}` : "";
  // eslint-disable-next-line no-control-regex
  const clean = (s: string) => s.replace(/^agent:/, "").replace(/[\u0000-\u001f\u007f]/g, "?");
  const sample = v.sample.slice(0, 3).map(clean).join(", ");
  const what =
    v.reason === "rows"
      ? `a database lost most of its sessions (${(v.rows ?? []).slice(0, 3).map((r) => `${clean(r.file)}: ${r.now} of ${r.before} rows of table ${clean(r.table)} left`).join(", ")}${of})`
      : `${v.reason === "sessions" ? "every session file is gone" : "most files vanished at once"} (${v.lost} of ${v.filesBefore} files${of}, e.g. ${sample}${v.lost > 3 ? ", ..." : ""})`;
  return (
    `SUSPECTED LOSS: ${what}; ` +
    `snapshot ${snapshotId.slice(0, 8)} is tagged suspect-loss and is not "latest": \`pi-guard restore latest\` brings them back; ` +
    `if you deleted them on purpose, \`${ACCEPT_LOSS_COMMAND}\` accepts the deletion`
  );
}
