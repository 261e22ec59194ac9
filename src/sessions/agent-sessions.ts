// The sessions of every agent but pi in the catalog, through the agent registry: each adapter's
// session reader lists and reads them, live (over the agent's located roots) and in snapshots
// (over a snapshot's tree), into the common model (src/agents/types.ts). A session in the common
// model is pi's entry model, so it is written out as pi JSONL in memory and everything downstream
// (summary, show, search, export) reads it as it reads a pi file. pi's own sessions keep the
// catalog's faster path (catalog.ts), which reads files without a reader in between.

import { createHash } from "node:crypto";
import path from "node:path";
import type { AgentChoice } from "../agents/roots.js";
import type { AgentAdapter, AgentSession, FileReader, SessionMeta } from "../agents/types.js";
import { compareStrings } from "../compare.js";
import { PI_AGENT } from "./agent-name.js";
import type { SessionRecord, SnapshotRef, SnapshotVersion } from "./catalog.js";
import type { JsonMapCache } from "./cache.js";
import { newestRun, originalPath, type FileHistory, type SnapshotHistory, type SnapshotMeta } from "./snapshot-files.js";
import type { SessionSummary } from "./summary.js";

/** Where a non-pi session's bytes come from: its reader's meta, live (snapshotId null) or in one snapshot. */
export interface AgentSource {
  agent: string;
  meta: SessionMeta;
  snapshotId: string | null;
  /** The main file's path on the machine it was written on. */
  originalPath: string;
  /** Names the exact bytes of the session's files. */
  contentKey: string;
}

/**
 * A session of the common model as pi JSONL: the header, then the entries, the leaf last (pi's
 * leaf is the last line; a leaf has no children, so moving it keeps every parent first).
 */
export function commonModelJsonl(session: AgentSession): Buffer {
  const leaf = session.leafId === null ? undefined : session.entries.find((e) => e.id === session.leafId);
  const entries = leaf ? [...session.entries.filter((e) => e !== leaf), leaf] : session.entries;
  // The header names the agent, whichever adapter read it: exports title the session by it.
  const header = { ...session.header, agent: session.meta.agent };
  return Buffer.from(`${[header, ...entries].map((e) => JSON.stringify(e)).join("\n")}\n`);
}

async function adapters(): Promise<Map<string, AgentAdapter>> {
  const { allAgents } = await import("../agents/registry.js");
  return new Map(allAgents().filter((a) => a.name !== PI_AGENT).map((a) => [a.name, a]));
}

/** The located roots of the detected agents but pi, as live FileReaders. */
export async function liveAgentReaders(choices: readonly AgentChoice[]): Promise<{ agent: AgentAdapter; files: FileReader; choice: AgentChoice }[]> {
  const byName = await adapters();
  const { liveFiles } = await import("../agents/files.js");
  return choices.filter((c) => c.detected && byName.has(c.location.agent)).map((c) => ({ agent: byName.get(c.location.agent)!, files: liveFiles(c.location.roots), choice: c }));
}

/** What names a live session's bytes: its files' sizes and times as its reader saw them. */
async function liveKey(files: FileReader, meta: SessionMeta): Promise<string> {
  const hash = createHash("sha256").update(`${meta.agent}\0${meta.id}`);
  for (const ref of meta.files) {
    const st = await files.stat(ref);
    hash.update(`\0${ref.root}:${ref.path}:${st?.size ?? -1}:${st?.mtimeMs ?? -1}`);
  }
  return hash.digest("hex");
}

/** The live agents' session listings, for the catalog's fingerprint: changes when any of their files does. */
export async function liveAgentFingerprint(choices: readonly AgentChoice[]): Promise<string> {
  const hash = createHash("sha256");
  for (const { agent, files } of await liveAgentReaders(choices)) {
    for await (const meta of agent.sessions.list(files)) hash.update(`\0${agent.name}\0${await liveKey(files, meta)}`);
  }
  return hash.digest("hex");
}

async function summarize(agent: AgentAdapter, files: FileReader, meta: SessionMeta): Promise<{ summary: SessionSummary; warnings: string[] }> {
  const { summarizeSession } = await import("./summary.js");
  const session = await agent.sessions.read(files, meta);
  const bytes = commonModelJsonl(session);
  const summary = await summarizeSession((async function* () { yield bytes; })(), meta.id);
  return { summary: { ...summary, id: meta.id, name: summary.name ?? meta.title ?? null, project: summary.project || meta.cwd || "" }, warnings: session.warnings };
}

const fileKey = (f: { root: string; path: string }) => `${f.root}\0${f.path}`;

export interface AgentScan {
  records: SessionRecord[];
  sources: Record<string, AgentSource>;
}

/**
 * Every session of the other agents: live ones from their located roots, and the ones only in
 * snapshots from the newest snapshot that still held their files. A snapshot is opened only
 * where some session file of that agent was seen for the last time (the newest run of a file's
 * history), so a long series of snapshots costs a walk per vanished or changed file, not per snapshot.
 */
export async function scanAgentSessions(opts: {
  choices: readonly AgentChoice[];
  host: string;
  tags: Record<string, string[]>;
  cache: JsonMapCache<SessionSummary>;
  history?: SnapshotHistory;
  /** One snapshot's files, however the engine reads them (native: its tree; restic: ls and dump). */
  filesAt?: (snap: SnapshotMeta) => Promise<FileReader>;
}): Promise<AgentScan> {
  const records: SessionRecord[] = [];
  const sources: Record<string, AgentSource> = {};
  const seen = new Set<string>();
  const histories = new Map((opts.history?.files ?? []).filter((h) => h.agent).map((h) => [`${h.agent}\0${fileKey(h)}`, h]));
  const versionsOf = (agent: string, meta: SessionMeta): SnapshotVersion[] => {
    const h = histories.get(`${agent}\0${fileKey(meta.files[0])}`);
    if (!h || !opts.history) return [];
    const ref = (i: number): SnapshotRef => ({ snapshotId: opts.history!.snapshots[i].id, time: opts.history!.snapshots[i].time });
    return h.runs.map(([first, last, size]) => ({ first: ref(first), last: ref(last), snapshots: last - first + 1, path: originalPath(opts.history!.snapshots[first], h), size }));
  };
  const add = (agent: string, meta: SessionMeta, summary: SessionSummary, source: AgentSource, live: string | null, hosts: string[]) => {
    const versions = versionsOf(agent, meta);
    const lastSnapshot = versions.reduce<SnapshotRef | null>((a, v) => (!a || v.last.time > a.time ? v.last : a), null);
    records.push({ ...summary, id: meta.id, agent, size: meta.bytes, live, versions, snapshotCount: versions.reduce((n, v) => n + v.snapshots, 0), lastSnapshot, deleted: live === null, hosts, tags: opts.tags[meta.id] ?? [] });
    sources[meta.id] = source;
    seen.add(`${agent}\0${meta.id}`);
  };

  for (const { agent, files, choice } of await liveAgentReaders(opts.choices)) {
    for await (const meta of agent.sessions.list(files)) {
      const key = await liveKey(files, meta);
      let summary = opts.cache.get(key);
      if (!summary) {
        summary = (await summarize(agent, files, meta).catch(() => undefined))?.summary;
        if (!summary) continue; // vanished or unreadable since listing: as a pi file would be
        opts.cache.set(key, summary);
      }
      const root = choice.location.roots.find((r) => r.name === meta.files[0]?.root);
      const where = root ? path.join(root.path, meta.files[0].path) : choice.location.dir;
      add(agent.name, meta, summary, { agent: agent.name, meta, snapshotId: null, originalPath: where, contentKey: key }, where, [opts.host]);
    }
  }

  if (!opts.history || !opts.filesAt) return { records, sources };
  const history = opts.history;
  const byName = await adapters();
  // Newest first: a session is taken from the newest snapshot that held it.
  const ends = [...new Set([...histories.values()].map((h: FileHistory) => newestRun(h)[1]))].sort((a, b) => b - a);
  for (const i of ends) {
    const snap: SnapshotMeta = history.snapshots[i];
    const agentsHere = [...new Set([...histories.values()].filter((h) => newestRun(h)[1] === i).map((h) => h.agent!))].sort(compareStrings);
    const files = await opts.filesAt(snap);
    for (const name of agentsHere) {
      const agent = byName.get(name);
      if (!agent) continue;
      for await (const meta of agent.sessions.list(files)) {
        if (seen.has(`${name}\0${meta.id}`)) continue;
        const contents = meta.files.map((f) => histories.get(`${name}\0${fileKey(f)}`)?.runs.find(([a, b]) => a <= i && i <= b)?.[3] ?? "?");
        const key = createHash("sha256").update(`${name}\0${meta.id}\0${contents.join(",")}`).digest("hex");
        let summary = opts.cache.get(key);
        if (!summary) {
          summary = (await summarize(agent, files, meta).catch(() => undefined))?.summary;
          if (!summary) continue;
          opts.cache.set(key, summary);
        }
        add(name, meta, summary, { agent: name, meta, snapshotId: snap.id, originalPath: originalPath(snap, meta.files[0]), contentKey: key }, null, [snap.host]);
      }
    }
  }
  return { records, sources };
}
