// pi-guard's snapshots in a restic repository: how they are tagged, and reading restic's JSON
// about them (snapshot lists, `ls` nodes) as hostile input.
import { RepoError } from "../repo/errors.js";
import type { SourceRoot } from "../snapshot/sources.js";
import { clean, runRestic, type ResticSession, unexpectedOutput } from "./run.js";

/** Every snapshot pi-guard makes carries this tag; the others in the repository are not ours. */
export const PI_GUARD_TAG = "pi-guard";
/**
 * One tag per root: `pi-guard-root:<name>:<base64url of its absolute path>`. restic stores only
 * the absolute paths; the tag says which of them is the agent dir (and which the sessions dir),
 * so a restore on another machine, or with another $HOME, knows where each one goes. Base64url
 * because restic splits tags at commas, and a path may hold one.
 */
export const ROOT_TAG_PREFIX = "pi-guard-root:";

export function rootTag(root: SourceRoot): string {
  return `${ROOT_TAG_PREFIX}${root.name}:${Buffer.from(root.path).toString("base64url")}`;
}

/**
 * One tag per root that belongs to an agent: `pi-guard-agent:<root name>:<agent name>`, what a
 * native snapshot's `agents` records. A snapshot without them (made before) knows only pi's roots,
 * `agent` and `sessions`, as a native snapshot without `agents` does.
 */
export const AGENT_TAG_PREFIX = "pi-guard-agent:";

export function agentTag(root: string, agent: string): string {
  return `${AGENT_TAG_PREFIX}${root}:${agent}`;
}

/** pi-guard's bookkeeping tags, never the user's. */
export const isOwnTag = (t: string): boolean => t === PI_GUARD_TAG || t.startsWith(ROOT_TAG_PREFIX) || t.startsWith(AGENT_TAG_PREFIX);

export interface ResticSnapshotRecord {
  id: string;
  time: string;
  host: string;
  user: string;
  /** The user-visible tags: pi-guard's own bookkeeping tags left out. */
  tags: string[];
  roots: SourceRoot[];
  /** Which agent each root belongs to, by root name, where the snapshot's tags record it. */
  agents?: Record<string, string>;
  paths: string[];
}

const ROOT_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;

/** A snapshot object from `restic snapshots --json`; undefined when it is not pi-guard's. Throws on a malformed one. */
export function readSnapshot(raw: unknown): ResticSnapshotRecord | undefined {
  const o = raw as Record<string, unknown>;
  if (!o || typeof o !== "object" || Array.isArray(o)) throw unexpectedOutput("snapshots", JSON.stringify(raw) ?? String(raw));
  const bad = (what: string) => unexpectedOutput("snapshots", `${what}: ${JSON.stringify(raw).slice(0, 60)}`);
  if (typeof o.id !== "string" || !/^[0-9a-f]{64}$/.test(o.id)) throw bad("snapshot id");
  if (typeof o.time !== "string" || Number.isNaN(Date.parse(o.time))) throw bad("snapshot time");
  const tags = o.tags === undefined || o.tags === null ? [] : o.tags;
  if (!Array.isArray(tags) || !tags.every((t) => typeof t === "string")) throw bad("snapshot tags");
  const paths = o.paths === undefined || o.paths === null ? [] : o.paths;
  if (!Array.isArray(paths) || !paths.every((p) => typeof p === "string")) throw bad("snapshot paths");
  if (!tags.includes(PI_GUARD_TAG)) return undefined;
  const roots: SourceRoot[] = [];
  for (const t of tags as string[]) {
    if (!t.startsWith(ROOT_TAG_PREFIX)) continue;
    const [name, encoded] = t.slice(ROOT_TAG_PREFIX.length).split(":");
    const rootPath = encoded === undefined ? "" : Buffer.from(encoded, "base64url").toString("utf8");
    // A root must be one of the snapshot's own absolute paths, named safely; anything else is ignored.
    if (!ROOT_NAME.test(name ?? "") || !rootPath.startsWith("/") || rootPath.split("/").includes("..") || !paths.includes(rootPath)) continue;
    if (!roots.some((r) => r.name === name)) roots.push({ name, path: rootPath });
  }
  let agents: Record<string, string> | undefined;
  for (const t of tags as string[]) {
    if (!t.startsWith(AGENT_TAG_PREFIX)) continue;
    const [root, agent, ...rest] = t.slice(AGENT_TAG_PREFIX.length).split(":");
    // Only for a root the snapshot has, named safely: anything else is ignored.
    if (rest.length || !ROOT_NAME.test(agent ?? "") || !roots.some((r) => r.name === root)) continue;
    (agents ??= {})[root] ??= agent;
  }
  return {
    id: o.id,
    // restic writes local times with an offset and nanoseconds; pi-guard compares UTC instants.
    time: new Date(Date.parse(o.time)).toISOString(),
    host: typeof o.hostname === "string" ? o.hostname : "",
    user: typeof o.username === "string" ? o.username : "",
    tags: (tags as string[]).filter((t) => !isOwnTag(t)),
    roots,
    ...(agents ? { agents } : {}),
    paths: paths as string[],
  };
}

/**
 * pi-guard's snapshots in the repository, oldest first (restic's own order is by time too, but not
 * promised). restic leaves a snapshot object it cannot read out of its list and says so on stderr
 * only: `onUnreadable` hears of each one, as a native listing's `unreadableSnapshots`.
 */
export async function listResticSnapshots(s: ResticSession, opts: { signal?: AbortSignal; onUnreadable?: (message: string) => void } = {}): Promise<ResticSnapshotRecord[]> {
  let parsed: unknown;
  let lines = 0;
  const { stderr } = await runRestic(s, ["snapshots", "--json", "--tag", PI_GUARD_TAG], {
    signal: opts.signal,
    onJson: (v) => {
      lines++;
      parsed = v;
    },
  });
  if (lines !== 1 || !Array.isArray(parsed)) throw unexpectedOutput("snapshots", lines === 0 ? "(nothing)" : JSON.stringify(parsed)?.slice(0, 60) ?? "");
  for (const m of stderr.matchAll(/^could not load snapshot ([0-9a-f]{8,64}): (.+)$/gm)) opts.onUnreadable?.(`restic snapshot ${m[1].slice(0, 8)}: it cannot be read (${clean(m[2])})`);
  const out: ResticSnapshotRecord[] = [];
  for (const raw of parsed) {
    const r = readSnapshot(raw);
    if (r) out.push(r);
  }
  return out.sort((a, b) => Date.parse(a.time) - Date.parse(b.time) || (a.id < b.id ? -1 : 1));
}

export interface ResticNode {
  /** Absolute path in the snapshot, as restic stores it. */
  path: string;
  type: "file" | "dir" | "symlink" | "other";
  size: number;
  /** Permission bits (0o777 and the sticky/setuid bits). */
  mode: number;
  mtime?: string;
}

/** The newest pi-guard snapshot of `host` whose paths include all of `paths`, as restic's `latest` chooses it. */
export interface ResticLatest {
  host: string;
  paths: string[];
}

/**
 * Each node of a snapshot, from `restic ls --json`, validated; the snapshot line is checked too.
 * `which` is a snapshot id, or ResticLatest. `onSnapshot` is told which snapshot is listed before
 * its first node, and may decline its nodes. Returns whether a snapshot was listed (a latest that
 * matches none is not listed).
 */
export async function listResticNodes(
  s: ResticSession,
  which: string | ResticLatest,
  onNode: (node: ResticNode) => void,
  /** `dirs` (absolute, with an id only): only the nodes directly inside these folders, not the whole tree. */
  opts: { signal?: AbortSignal; onSnapshot?: (snap: ResticSnapshotRecord | undefined) => boolean; dirs?: string[] } = {},
): Promise<boolean> {
  const id = typeof which === "string" ? which : undefined;
  if (id !== undefined && !/^[0-9a-f]{64}$/.test(id)) throw new RepoError(`not a restic snapshot id: ${id}`, "usage");
  const latest = typeof which === "string" ? [] : ["latest", "--host", which.host, "--tag", PI_GUARD_TAG, ...which.paths.flatMap((p) => ["--path", p])];
  let sawSnapshot = false;
  let wanted = true;
  let problem: string | undefined;
  await runRestic(s, ["ls", "--json", ...(id !== undefined ? [id, ...(opts.dirs ?? [])] : latest)], {
    signal: opts.signal,
    onJson: (v) => {
      if (problem) return;
      const o = v as Record<string, unknown>;
      if (!o || typeof o !== "object" || Array.isArray(o)) return void (problem = JSON.stringify(v));
      if (o.struct_type === "snapshot") {
        if (sawSnapshot || (id !== undefined && o.id !== id)) problem = `a listing of snapshot ${String(o.id).slice(0, 16)}`;
        sawSnapshot = true;
        if (!opts.onSnapshot) return;
        let snap: ResticSnapshotRecord | undefined;
        try {
          snap = readSnapshot(o);
        } catch {
          return void (problem = JSON.stringify(v).slice(0, 60));
        }
        wanted = opts.onSnapshot(snap);
        return;
      }
      if (o.struct_type !== "node" || !sawSnapshot) return void (problem = JSON.stringify(v).slice(0, 60));
      const node = readNode(o);
      if (!node) return void (problem = JSON.stringify(v).slice(0, 60));
      if (wanted) onNode(node);
    },
  });
  if (problem) throw unexpectedOutput("ls", problem);
  // restic says "no snapshot matched" on stderr only, and exits 0.
  if (!sawSnapshot && id !== undefined) throw unexpectedOutput("ls", "(no snapshot line)");
  return sawSnapshot;
}

/**
 * Files whose name matches `pattern` in every pi-guard snapshot, from one `restic find --json`
 * (one restic process, however many snapshots: `ls` would be one each). Keyed by snapshot id.
 */
export async function findInResticSnapshots(s: ResticSession, pattern: string): Promise<Map<string, ResticNode[]>> {
  let parsed: unknown;
  let lines = 0;
  await runRestic(s, ["find", "--json", "--tag", PI_GUARD_TAG, "--", pattern], {
    onJson: (v) => {
      lines++;
      parsed = v;
    },
  });
  if (lines === 0) return new Map();
  if (lines !== 1 || !Array.isArray(parsed)) throw unexpectedOutput("find", JSON.stringify(parsed)?.slice(0, 60) ?? "");
  const out = new Map<string, ResticNode[]>();
  for (const group of parsed as unknown[]) {
    const g = group as Record<string, unknown>;
    if (!g || typeof g !== "object" || typeof g.snapshot !== "string" || !/^[0-9a-f]{64}$/.test(g.snapshot) || !Array.isArray(g.matches)) {
      throw unexpectedOutput("find", JSON.stringify(group)?.slice(0, 60) ?? "");
    }
    const nodes: ResticNode[] = [];
    for (const m of g.matches as unknown[]) {
      const node = m && typeof m === "object" && !Array.isArray(m) ? readNode(m as Record<string, unknown>) : undefined;
      if (!node) throw unexpectedOutput("find", JSON.stringify(m)?.slice(0, 60) ?? "");
      nodes.push(node);
    }
    out.set(g.snapshot, nodes);
  }
  return out;
}

function readNode(o: Record<string, unknown>): ResticNode | undefined {
  if (typeof o.path !== "string" || !o.path.startsWith("/") || o.path.includes("\0")) return undefined;
  const size = o.size === undefined ? 0 : o.size;
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) return undefined;
  const mode = typeof o.mode === "number" && Number.isInteger(o.mode) ? o.mode & 0o7777 : 0o644;
  const type = o.type === "file" || o.type === "dir" || o.type === "symlink" ? o.type : "other";
  return { path: o.path, type, size, mode, mtime: typeof o.mtime === "string" ? o.mtime : undefined };
}

/** Which root a node of `snap` is under, and its path relative to that root; undefined when none. */
export function nodeRoot(snap: ResticSnapshotRecord, nodePath: string): { root: string; rel: string } | undefined {
  // The deepest root wins: a sessions dir may lie inside another root's folder.
  for (const r of [...snap.roots].sort((a, b) => b.path.length - a.path.length)) {
    if (nodePath.startsWith(`${r.path}/`)) return { root: r.name, rel: nodePath.slice(r.path.length + 1) };
  }
  return undefined;
}
