// The session catalog: every session pi-guard can see, live on disk or in any snapshot, with the
// numbers `sessions list` shows. A session's bytes are read only when its summary is not cached
// yet, and only for its newest version (the live file, else the newest snapshot holding it).

import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Config } from "../config/config.js";
import { parseSessionFileName } from "../pi/writer.js";
import type { Repository, SnapshotRecord } from "../repo/repository.js";
import type { SnapshotReader } from "../restore/snapshot-reader.js";
import { JsonMapCache } from "./cache.js";
import { listLiveFiles, liveSessionDirs, type LiveFile } from "./live.js";
import { originalPath, snapshotSessionFiles, treeNodeOf, type SnapshotSessionFile } from "./snapshot-files.js";
import { summarizeSession, type SessionSummary } from "./summary.js";
import { readTags } from "./tags.js";

export interface SnapshotPresence {
  snapshotId: string;
  time: string;
  host: string;
  /** The file's path on the machine the snapshot was taken on. */
  path: string;
  size: number;
}

export interface SessionRecord extends SessionSummary {
  /** Bytes of the newest version. */
  size: number;
  /** Path of the live file on this machine, or null. */
  live: string | null;
  /** Every snapshot holding the session, oldest first. */
  snapshots: SnapshotPresence[];
  /** In at least one snapshot but no longer on disk. */
  deleted: boolean;
  hosts: string[];
  tags: string[];
}

type Source = { kind: "live"; file: LiveFile } | { kind: "snapshot"; record: SnapshotRecord; file: SnapshotSessionFile };

export interface CatalogOptions {
  config: Config;
  /** null: live files only (no repository yet). */
  repo: Repository | null;
  env?: Record<string, string | undefined>;
  host?: string;
}

const contentKey = (f: SnapshotSessionFile): string => createHash("sha256").update(`${f.size}:${f.content.join(",")}`).digest("hex");
const fileNameId = (p: string): string | undefined => parseSessionFileName(path.basename(p))?.id;

export class SessionCatalog {
  readonly sessions: SessionRecord[] = [];
  private readonly sources = new Map<string, Source>();
  private reader?: Promise<SnapshotReader>;

  private constructor(private readonly repo: Repository | null) {}

  static async build(opts: CatalogOptions): Promise<SessionCatalog> {
    const catalog = new SessionCatalog(opts.repo);
    await catalog.scan(opts);
    return catalog;
  }

  private snapshotReader(): Promise<SnapshotReader> {
    if (!this.repo) throw new Error("no repository");
    const repo = this.repo;
    this.reader ??= import("../restore/snapshot-reader.js").then((m) => m.SnapshotReader.open(repo));
    return this.reader;
  }

  private async scan(opts: CatalogOptions): Promise<void> {
    const catalogDir = path.join(opts.config.dataDir, "catalog");
    const host = opts.host ?? os.hostname();

    // Live files: summaries cached by path and stat, so only changed files are parsed again.
    const liveCache = await JsonMapCache.load<SessionSummary>(path.join(catalogDir, "live.json"));
    const live = new Map<string, { file: LiveFile; summary: SessionSummary }>();
    for (const file of await listLiveFiles(liveSessionDirs(opts.config, opts.env))) {
      const key = `${file.path}\0${file.size}\0${file.mtimeMs}\0${file.ino}`;
      let summary = liveCache.get(key);
      if (!summary) {
        summary = await summarizeSession(file.path, fileNameId(file.path) ?? path.basename(file.path, ".jsonl")).catch(() => undefined);
        if (!summary) continue; // vanished or unreadable since listing
        liveCache.set(key, summary);
      }
      const seen = live.get(summary.id);
      if (!seen || seen.file.mtimeMs < file.mtimeMs) live.set(summary.id, { file, summary });
    }
    await liveCache.save(true);

    // Snapshots: where each session file appears, grouped by session id.
    const inSnapshots = new Map<string, { presences: SnapshotPresence[]; newest: { record: SnapshotRecord; file: SnapshotSessionFile } }>();
    let summaries: JsonMapCache<SessionSummary> | undefined;
    if (this.repo) {
      const repoDir = path.join(catalogDir, this.repo.config.id);
      summaries = await JsonMapCache.load<SessionSummary>(path.join(repoDir, "summaries.json"));
      const byLocation = new Map<string, { presences: SnapshotPresence[]; newest: { record: SnapshotRecord; file: SnapshotSessionFile } }>();
      for (const record of await this.repo.listSnapshots()) {
        for (const f of await snapshotSessionFiles(repoDir, record, () => this.snapshotReader())) {
          const key = `${f.root}\0${f.path}`;
          const presence = { snapshotId: record.id, time: record.snapshot.time, host: record.snapshot.host, path: originalPath(record, f), size: f.size };
          const loc = byLocation.get(key);
          if (loc) {
            loc.presences.push(presence);
            loc.newest = { record, file: f }; // snapshots come oldest first
          } else byLocation.set(key, { presences: [presence], newest: { record, file: f } });
        }
      }
      for (const loc of byLocation.values()) {
        // pi names files <time>_<session id>.jsonl; other names need the header, so read it.
        const id = fileNameId(loc.newest.file.path) ?? (await this.snapshotSummary(summaries, loc.newest.record, loc.newest.file)).id;
        const group = inSnapshots.get(id);
        if (!group) inSnapshots.set(id, { presences: [...loc.presences], newest: loc.newest });
        else {
          group.presences.push(...loc.presences);
          if (loc.newest.record.snapshot.time > group.newest.record.snapshot.time) group.newest = loc.newest;
        }
      }
    }

    const tags = await readTags(opts.config.dataDir).catch(() => ({}) as Record<string, string[]>);
    for (const id of new Set([...live.keys(), ...inSnapshots.keys()])) {
      const l = live.get(id);
      const s = inSnapshots.get(id);
      const presences = (s?.presences ?? []).sort((a, b) => a.time.localeCompare(b.time));
      let summary: SessionSummary;
      let size: number;
      if (l) {
        summary = l.summary;
        size = l.file.size;
        this.sources.set(id, { kind: "live", file: l.file });
      } else {
        const newest = s!.newest;
        summary = await this.snapshotSummary(summaries!, newest.record, newest.file);
        size = newest.file.size;
        this.sources.set(id, { kind: "snapshot", ...newest });
      }
      const hosts = new Set(presences.map((p) => p.host));
      if (l) hosts.add(host);
      this.sessions.push({ ...summary, id, size, live: l?.file.path ?? null, snapshots: presences, deleted: !l, hosts: [...hosts].sort(), tags: tags[id] ?? [] });
    }
    await summaries?.save();
    this.sessions.sort((a, b) => (b.lastActivity ?? "").localeCompare(a.lastActivity ?? "") || a.id.localeCompare(b.id));
  }

  private async snapshotSummary(cache: JsonMapCache<SessionSummary>, record: SnapshotRecord, f: SnapshotSessionFile): Promise<SessionSummary> {
    const key = contentKey(f);
    const hit = cache.get(key);
    if (hit) return hit;
    const reader = await this.snapshotReader();
    const summary = await summarizeSession(reader.stream(treeNodeOf(f)), fileNameId(f.path) ?? `${record.id.slice(0, 8)}:${f.path}`);
    cache.set(key, summary);
    return summary;
  }

  /** Where the bytes of a session come from: "live <path>" or "snapshot <id> <path>". */
  describeSource(id: string): string {
    const src = this.sources.get(id);
    if (!src) return "unknown";
    return src.kind === "live" ? `live ${src.file.path}` : `snapshot ${src.record.id.slice(0, 8)} ${originalPath(src.record, src.file)}`;
  }

  /**
   * Names the exact bytes readBytes returns: a live file's path and stat, or a snapshot file's
   * blob ids. Derived indexes (search) re-read a session only when this changes.
   */
  versionKey(id: string): string {
    const src = this.sources.get(id);
    if (!src) throw new Error(`session ${id} is not in the catalog`);
    const f = src.file;
    return src.kind === "live" ? `live:${f.path}:${f.size}:${(f as LiveFile).mtimeMs}:${(f as LiveFile).ino}` : `snapshot:${contentKey(src.file)}`;
  }

  /** The newest bytes of a session: the live file, else its copy in the newest snapshot. */
  async readBytes(id: string): Promise<Buffer> {
    const src = this.sources.get(id);
    if (!src) throw new Error(`session ${id} is not in the catalog`);
    if (src.kind === "live") return fs.readFile(src.file.path);
    return (await this.snapshotReader()).read(treeNodeOf(src.file));
  }

  async close(): Promise<void> {
    if (this.reader) await (await this.reader).close();
  }
}
