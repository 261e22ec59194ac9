// The session catalog: every session pi-guard can see, live on disk or in any snapshot, with the
// numbers `sessions list` shows. A session's bytes are read only when its summary is not cached
// yet, and only for its newest version (the live file, else the newest snapshot holding it).
// The finished catalog is cached too (catalog-view.ts) with a fingerprint of its inputs, so a
// warm run stats the live files, lists the snapshot names and reads only the records it shows.

import { createHash } from "node:crypto";
import { closeSync, openSync, promises as fs, readSync } from "node:fs";
import path from "node:path";
import type { Config } from "../config/config.js";
import { parseSessionFileName } from "../agents/pi/writer.js";
import { allSnapshotsDamaged } from "../repo/snapshot-damage.js";
import { JsonMapCache } from "./cache.js";
import { CatalogView, isAgentSource, type CatalogData, type SnapshotSource } from "./catalog-view.js";
import type { AgentSource } from "./agent-sessions.js";
import { listLiveFiles, liveSessionDirs, type LiveFile } from "./live.js";
import { newestRun, originalPath, type FileHistory, type SnapshotHistory, type SnapshotMeta } from "./snapshot-files.js";
import { nativeSnapshots, type CatalogSnapshots } from "./catalog-snapshots.js";
import type { RepositorySource } from "./source.js";
import type { SessionSummary } from "./summary.js";
import type { KnownSecret } from "../export/secrets.js";
import { PI_AGENT } from "./agent-name.js";
import { NotWarm } from "./not-warm.js";
import { readTags } from "./tags.js";
import { compareStrings } from "../compare.js";
import { hostName } from "../host.js";

export interface SnapshotRef {
  snapshotId: string;
  time: string;
}

/** A version of a session file in snapshots: a run of consecutive snapshots with the same bytes. */
export interface SnapshotVersion {
  first: SnapshotRef;
  last: SnapshotRef;
  /** How many snapshots the run spans (every one holds these bytes). */
  snapshots: number;
  /** The file's path on the machine the snapshots were taken on. */
  path: string;
  size: number;
}

export interface SessionRecord extends SessionSummary {
  /** The agent that wrote the session (its registry name: "pi", "claude", ...). */
  agent: string;
  /** Bytes of the newest version. */
  size: number;
  /** Path of the live file on this machine, or null. */
  live: string | null;
  /** The session's versions in snapshots, oldest first: as many as its bytes changed, not as many as there are snapshots. */
  versions: SnapshotVersion[];
  /** How many snapshots hold the session. */
  snapshotCount: number;
  /** The newest snapshot holding it, or null. */
  lastSnapshot: SnapshotRef | null;
  /** In at least one snapshot but no longer on disk. */
  deleted: boolean;
  hosts: string[];
  tags: string[];
}

export interface CatalogOptions {
  config: Config;
  /** null: live files only (no repository yet, or --live). */
  repo: RepositorySource | null;
  /** Instead of `repo`: the snapshots of another engine's repository (restic: src/restic/catalog.ts). */
  snapshots?: CatalogSnapshots;
  env?: Record<string, string | undefined>;
  host?: string;
  /** Only the cached view, when it is current; else NotWarm, before anything is parsed or written. */
  warmOnly?: boolean;
}

const fileNameId = (p: string): string | undefined => parseSessionFileName(path.basename(p))?.id;

/**
 * The summaries of these live files (an unreadable one is left out), parsed on every core when
 * there is much to parse (a cold `sessions list`), a few files at a time so big and small ones
 * spread over the workers.
 */
async function summarizeLive(files: LiveFile[]): Promise<Map<LiveFile, SessionSummary>> {
  const out = new Map<LiveFile, SessionSummary>();
  if (!files.length) return out;
  const { ParsePool, parseThreads } = await import("./parse-pool.js");
  const threads = parseThreads(files.reduce((n, f) => n + f.size, 0));
  const pool = new ParsePool(threads);
  // Largest first: the last files to finish are then small ones, and every worker ends at about
  // the same time (in path order one 80 MB session could come last and leave a core idle).
  const order = [...files].sort((a, b) => b.size - a.size);
  let next = 0;
  const lane = async () => {
    for (let f = order[next++]; f; f = order[next++]) {
      const summary = await pool.summary(f.path, fileNameId(f.path) ?? path.basename(f.path, ".jsonl")).catch(() => undefined);
      if (summary) out.set(f, summary);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, 2 * threads) }, lane));
  } finally {
    await pool.close();
  }
  return out;
}

export class SessionCatalog {
  private files?: CatalogSnapshots;
  private snapshotIds: string[] = [];
  private readonly liveFiles = new Map<string, LiveFile>();
  private history?: Promise<SnapshotHistory>;
  private view = CatalogView.fromData({ fingerprint: "", sessions: [], sources: {}, snapshots: [], unreadable: [] });

  private constructor(private readonly config: Config) {}

  /** Every session, most recently active first. */
  get sessions(): SessionRecord[] {
    return this.view.sessions;
  }

  /** How many sessions, without reading their records. */
  get size(): number {
    return this.view.ids.length;
  }

  /** Every session id, without reading their records (short ids are unique among these). */
  get ids(): readonly string[] {
    return this.view.ids;
  }

  has(id: string): boolean {
    return this.view.has(id);
  }

  /** One session's record, read from the cached view without parsing the others. */
  record(id: string): SessionRecord | undefined {
    return this.view.record(id);
  }

  /** Names every input of this catalog: equal fingerprints mean equal catalogs. */
  get fingerprint(): string {
    return this.view.fingerprint;
  }

  /** Every readable snapshot, oldest first (empty without a repository). */
  get snapshots(): SnapshotMeta[] {
    return this.view.snapshots;
  }

  /**
   * What the user must hear about snapshot objects that could not be read: the sessions only
   * they hold are missing from this catalog. `all`: none could be read (damage, exit 3).
   */
  snapshotDamage(where: { location?: string; mirror?: string }): { all: boolean; message: string } | undefined {
    const bad = this.view.unreadable;
    if (!bad.length) return undefined;
    if (bad.length >= this.snapshotIds.length) return { all: true, message: allSnapshotsDamaged(bad, where).message };
    return { all: false, message: `${bad.length} of ${this.snapshotIds.length} snapshots could not be read (${bad[0].error}); sessions only in them are not listed: \`pi-guard check\` names the damage` };
  }

  static async build(opts: CatalogOptions): Promise<SessionCatalog> {
    const catalog = new SessionCatalog(opts.config);
    await catalog.load(opts);
    return catalog;
  }

  /**
   * The inputs are the live files' stat, the snapshot names, the tags and the host. When none
   * changed, the cached view is the answer and nothing is parsed, decrypted or recomputed.
   */
  private async load(opts: CatalogOptions): Promise<void> {
    const catalogDir = path.join(opts.config.dataDir, "catalog");
    const host = opts.host ?? hostName();
    const liveFiles = listLiveFiles(liveSessionDirs(opts.config, opts.env));
    for (const f of liveFiles) this.liveFiles.set(f.path, f);
    if (opts.snapshots) this.files = opts.snapshots;
    else if (opts.repo) this.files = nativeSnapshots(path.join(catalogDir, opts.repo.id), opts.repo);
    this.snapshotIds = this.files ? (await this.files.snapshotIds()).sort(compareStrings) : [];
    const tags = await readTags(opts.config.dataDir).catch(() => ({}) as Record<string, string[]>);
    const hash = createHash("sha256").update(`${host}\0${this.files?.id ?? "-"}\0${JSON.stringify(tags)}\0${this.snapshotIds.join(",")}`);
    for (const f of liveFiles) hash.update(`\0${liveKey(f)}`);
    // The other agents' sessions, through their readers: a listing, no session is read here.
    if (opts.config.agents?.some((a) => a.detected && a.location.agent !== PI_AGENT)) hash.update(`\0${await (await import("./agent-sessions.js")).liveAgentFingerprint(opts.config.agents)}`);
    const fingerprint = hash.digest("hex");

    const viewFile = path.join(catalogDir, `view-${this.files?.id ?? "live"}.json`);
    const cached = CatalogView.read(viewFile);
    // A view that could not read some snapshots is not reused: they may have been healed since.
    if (cached?.fingerprint === fingerprint && !cached.unreadable.length) {
      this.view = cached;
      return;
    }
    if (opts.warmOnly) throw new NotWarm("the session catalog changed");
    this.view = CatalogView.fromData({ fingerprint, ...(await this.scan(catalogDir, liveFiles, tags, host)) });
    await this.view.write(viewFile);
  }

  private async scan(catalogDir: string, liveFiles: LiveFile[], tags: Record<string, string[]>, host: string): Promise<Omit<CatalogData, "fingerprint">> {
    // Live files: summaries cached by path and stat, so only changed files are parsed again.
    const liveCache = await JsonMapCache.load<SessionSummary>(path.join(catalogDir, "live.json"));
    const fresh = await summarizeLive(liveFiles.filter((f) => !liveCache.get(liveKey(f))));
    const live = new Map<string, { file: LiveFile; summary: SessionSummary }>();
    for (const file of liveFiles) {
      const key = liveKey(file);
      let summary = liveCache.get(key);
      if (!summary) {
        summary = fresh.get(file);
        if (!summary) continue; // vanished or unreadable since listing
        liveCache.set(key, summary);
      }
      const seen = live.get(summary.id);
      if (!seen || seen.file.mtimeMs < file.mtimeMs) live.set(summary.id, { file, summary });
    }
    await liveCache.save(true);

    // Snapshots: each session file's versions, grouped by session id.
    type Group = { versions: SnapshotVersion[]; hosts: Set<string>; newest: FileHistory; history: SnapshotHistory };
    const inSnapshots = new Map<string, Group>();
    let summaries: JsonMapCache<SessionSummary> | undefined;
    const summaryCache = async () => (summaries ??= await JsonMapCache.load<SessionSummary>(path.join(catalogDir, this.files!.id, "summaries.json")));
    let snapshots: SnapshotMeta[] = [];
    if (this.files) {
      const history = await this.snapshotHistory();
      snapshots = history.snapshots;
      const hostsIn = hostFinder(history.snapshots);
      const ref = (i: number): SnapshotRef => ({ snapshotId: history.snapshots[i].id, time: history.snapshots[i].time });
      const newestTime = (h: FileHistory) => history.snapshots[newestRun(h)[1]].time;
      let headersRead = false;
      for (const h of history.files) {
        if (h.agent) continue; // another agent's: scanAgentSessions reads it through its adapter
        // pi names files <time>_<session id>.jsonl; other names need the header, so read it once.
        let id = h.headerId ?? fileNameId(h.path);
        if (!id) {
          id = h.headerId = (await this.snapshotSummary(await summaryCache(), history, h)).id;
          headersRead = true;
        }
        const group: Group = inSnapshots.get(id) ?? { versions: [], hosts: new Set(), newest: h, history };
        inSnapshots.set(id, group);
        for (const [first, last, size] of h.runs) {
          group.versions.push({ first: ref(first), last: ref(last), snapshots: last - first + 1, path: originalPath(history.snapshots[first], h), size });
          for (const host of hostsIn(first, last)) group.hosts.add(host);
        }
        if (newestTime(h) > newestTime(group.newest)) group.newest = h;
      }
      if (headersRead) await this.files.save(history);
    }

    const unreadable = this.files ? (await this.snapshotHistory()).unreadable : [];
    const sessions: SessionRecord[] = [];
    const sources: Record<string, SnapshotSource | AgentSource> = {};
    for (const id of new Set([...live.keys(), ...inSnapshots.keys()])) {
      const l = live.get(id);
      const s = inSnapshots.get(id);
      const versions = (s?.versions ?? []).sort((a, b) => compareStrings(a.first.time, b.first.time));
      let summary: SessionSummary;
      let size: number;
      if (l) {
        summary = l.summary;
        size = l.file.size;
      } else {
        const { history, newest } = s!;
        summary = await this.snapshotSummary(await summaryCache(), history, newest);
        const [, last, newestSize, key] = newestRun(newest);
        size = newestSize;
        const meta = history.snapshots[last];
        sources[id] = { snapshotId: meta.id, root: newest.root, path: newest.path, originalPath: originalPath(meta, newest), contentKey: key };
      }
      const hosts = new Set(s?.hosts);
      if (l) hosts.add(host);
      const lastSnapshot = versions.reduce<SnapshotRef | null>((a, v) => (!a || v.last.time > a.time ? v.last : a), null);
      const snapshotCount = versions.reduce((n, v) => n + v.snapshots, 0);
      sessions.push({ ...summary, id, agent: PI_AGENT, size, live: l?.file.path ?? null, versions, snapshotCount, lastSnapshot, deleted: !l, hosts: [...hosts].sort(), tags: tags[id] ?? [] });
    }
    await summaries?.save(true);
    const { scanAgentSessions } = await import("./agent-sessions.js");
    const agentCache = await JsonMapCache.load<SessionSummary>(path.join(catalogDir, "agents.json"));
    const others = await scanAgentSessions({
      choices: this.config.agents ?? [],
      host,
      tags,
      cache: agentCache,
      ...(this.files ? { history: await this.snapshotHistory(), filesAt: (snap: SnapshotMeta) => this.files!.files(snap) } : {}),
    });
    await agentCache.save(true);
    for (const r of others.records) if (!live.has(r.id) && !inSnapshots.has(r.id)) sessions.push(r);
    Object.assign(sources, others.sources);
    sessions.sort((a, b) => compareStrings(b.lastActivity ?? "", a.lastActivity ?? "") || compareStrings(a.id, b.id));
    return { sessions, sources, snapshots, unreadable };
  }

  private async snapshotSummary(cache: JsonMapCache<SessionSummary>, history: SnapshotHistory, h: FileHistory): Promise<SessionSummary> {
    const [, last, , key] = newestRun(h);
    const hit = cache.get(key);
    if (hit) return hit;
    const { summarizeSession } = await import("./summary.js");
    const summary = await summarizeSession(await this.files!.stream(history, h), fileNameId(h.path) ?? `${history.snapshots[last].id.slice(0, 8)}:${h.path}`);
    cache.set(key, summary);
    return summary;
  }

  private snapshotHistory(): Promise<SnapshotHistory> {
    this.history ??= this.files!.history(this.snapshotIds);
    return this.history;
  }

  /** A live session's file as listed in this run, or a snapshot-only session's source. */
  private source(id: string): { live: LiveFile } | { snapshot: SnapshotSource } | { agent: AgentSource } {
    const stored = this.view.source(id);
    if (isAgentSource(stored)) return { agent: stored };
    const record = this.view.record(id);
    const live = record?.live ? this.liveFiles.get(record.live) : undefined;
    if (live) return { live };
    if (!stored) throw new Error(`session ${id} is not in the catalog`);
    return { snapshot: stored };
  }

  /** Another agent's session, read by its adapter (live, or from its snapshot) and written as pi JSONL (agent-sessions.ts). */
  private async agentBytes(src: AgentSource): Promise<Buffer> {
    const [{ findAgent }, files, { commonModelJsonl }] = await Promise.all([import("../agents/registry.js"), import("../agents/files.js"), import("./agent-sessions.js")]);
    const adapter = findAgent(src.agent);
    if (!adapter) throw new Error(`session ${src.meta.id} is ${src.agent}'s, and this pi-guard has no reader for ${src.agent}`);
    let reader;
    if (src.snapshotId === null) {
      const choice = this.config.agents?.find((a) => a.location.agent === src.agent);
      if (!choice) throw new Error(`${src.agent} is not located on this machine any more`);
      reader = files.liveFiles(choice.location.roots);
    } else {
      const snap = this.view.snapshots.find((m) => m.id === src.snapshotId);
      if (!snap) throw new Error(`snapshot ${src.snapshotId.slice(0, 8)} is no longer in the catalog`);
      reader = await this.files!.files(snap);
    }
    return commonModelJsonl(await adapter.sessions.read(reader, src.meta));
  }

  /**
   * The credentials `export --redact` masks in this session besides pi's (export/secrets.ts
   * agentSecrets): every detected agent's on this machine (a key of one agent pasted into another's
   * prompt), and, when the session is read from a snapshot, the credential files that snapshot
   * holds, whichever agent's (after an accident the live auth.json may be gone). Longest first.
   */
  async redactionSecrets(id: string): Promise<KnownSecret[]> {
    const [{ detectedAgentSecrets }, { allAgents }, { mergeSecrets }] = await Promise.all([import("../agents/secrets.js"), import("../agents/registry.js"), import("../export/secrets.js")]);
    const lists = [await detectedAgentSecrets({ agents: this.config.agents ?? [] })];
    const src = this.source(id);
    const snapshotId = "agent" in src ? src.agent.snapshotId : "snapshot" in src ? src.snapshot.snapshotId : null;
    const snap = snapshotId === null ? undefined : this.view.snapshots.find((m) => m.id === snapshotId);
    if (snap && this.files) {
      const reader = await this.files.files(snap);
      for (const adapter of allAgents()) {
        const loc = this.config.agents?.find((a) => a.location.agent === adapter.name)?.location;
        if (loc) lists.push(await adapter.secretValues(reader, loc));
      }
    }
    return mergeSecrets(...lists);
  }

  /** Where the bytes of a session come from: "live <path>" or "snapshot <id> <path>" ("restic snapshot" on restic). */
  describeSource(id: string): string {
    const src = this.source(id);
    const label = this.files?.label ?? "snapshot";
    if ("agent" in src) return src.agent.snapshotId === null ? `live ${src.agent.agent} ${src.agent.originalPath}` : `${label} ${src.agent.snapshotId.slice(0, 8)} ${src.agent.agent} ${src.agent.originalPath}`;
    return "live" in src ? `live ${src.live.path}` : `${label} ${src.snapshot.snapshotId.slice(0, 8)} ${src.snapshot.originalPath}`;
  }

  /**
   * Names the exact bytes readBytes returns: a live file's path and stat, or a snapshot file's
   * blob ids. Derived indexes (search) re-read a session only when this changes.
   */
  versionKey(id: string): string {
    const src = this.source(id);
    if ("agent" in src) return `agent:${src.agent.agent}:${src.agent.contentKey}`;
    if ("live" in src) return `live:${src.live.path}:${src.live.size}:${src.live.mtimeMs}:${src.live.ino}`;
    return `snapshot:${src.snapshot.contentKey}`;
  }

  /** The newest bytes of a session: the live file, else its copy in the newest snapshot. */
  async readBytes(id: string): Promise<Buffer> {
    const src = this.source(id);
    if ("agent" in src) return this.agentBytes(src.agent);
    if ("live" in src) return fs.readFile(src.live.path);
    const { root, path: file } = src.snapshot;
    const history = await this.snapshotHistory();
    const h = history.files.find((f) => f.root === root && f.path === file);
    if (!h) throw new Error(`the catalog's history no longer lists ${root}:${file}`);
    return this.files!.read(history, h);
  }

  /**
   * Ranges [start, length) of the bytes readBytes would return, from a live file only (read
   * there and nowhere else; shorter at its end); undefined for other sessions.
   */
  async readRanges(id: string, ranges: [number, number][]): Promise<Buffer[] | undefined> {
    const src = this.source(id);
    if (!("live" in src)) return undefined;
    // Synchronous reads: a search reads a few small, usually cached ranges per session, and each
    // asynchronous read waited its turn in libuv's pool (8-70 ms per query on a loaded machine).
    const fd = openSync(src.live.path, "r");
    try {
      const out: Buffer[] = [];
      for (const [start, length] of ranges) {
        const buf = Buffer.allocUnsafe(length);
        const bytesRead = readSync(fd, buf, 0, length, start);
        out.push(buf.subarray(0, bytesRead));
      }
      return out;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * The bytes readBytes would return, read on demand and as often as asked (a streaming export
   * reads twice): a live file through one handle up to its size now, or a snapshot copy's blobs.
   */
  async byteSource(id: string): Promise<{ read(): AsyncIterable<Uint8Array>; close(): Promise<void>; size?: number }> {
    const src = this.source(id);
    if ("agent" in src) {
      const bytes = await this.agentBytes(src.agent);
      return { read: async function* () { yield bytes; }, close: async () => {}, size: bytes.length };
    }
    if ("live" in src) return (await import("../export/entry-stream.js")).fileSource(src.live.path);
    const { root, path: file } = src.snapshot;
    const history = await this.snapshotHistory();
    const h = history.files.find((f) => f.root === root && f.path === file);
    if (!h) throw new Error(`the catalog's history no longer lists ${root}:${file}`);
    const files = this.files!;
    return {
      read: async function* () {
        yield* await files.stream(history, h);
      },
      close: async () => {},
    };
  }

  async close(): Promise<void> {
    await this.files?.close();
  }
}

/** The hosts whose snapshots fall in [first, last], by binary search over each host's indices. */
function hostFinder(snapshots: readonly SnapshotMeta[]): (first: number, last: number) => string[] {
  const byHost = new Map<string, number[]>();
  snapshots.forEach((m, i) => {
    const list = byHost.get(m.host);
    if (list) list.push(i);
    else byHost.set(m.host, [i]);
  });
  return (first, last) =>
    [...byHost].filter(([, idx]) => {
      let lo = 0;
      let hi = idx.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (idx[mid] < first) lo = mid + 1;
        else hi = mid;
      }
      return lo < idx.length && idx[lo] <= last;
    }).map(([host]) => host);
}

const liveKey = (f: LiveFile): string => `${f.path}\0${f.size}\0${f.mtimeMs}\0${f.ino}`;
