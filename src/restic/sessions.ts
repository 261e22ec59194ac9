// `pi-guard sessions list` over a restic repository: the live session files, plus every session
// file in pi-guard's restic snapshots (one `restic find --json` over all of them), a deleted one summarised from its
// newest copy (`restic dump`, streamed). No catalog cache: each run asks restic again.
import { hostName } from "../host.js";
import { promises as fs } from "node:fs";
import path from "node:path";
import { RepoError } from "../repo/errors.js";
import type { Config } from "../config/config.js";
import { compareStrings } from "../compare.js";
import { parseSessionFileName } from "../agents/pi/writer.js";
import type { SessionRecord, SnapshotRef, SnapshotVersion } from "../sessions/catalog.js";
import { listLiveFiles, liveSessionDirs } from "../sessions/live.js";
import { summarizeSession, type SessionSummary } from "../sessions/summary.js";
import { PI_AGENT } from "../sessions/agent-name.js";
import { readTags } from "../sessions/tags.js";
import { findRestic } from "./binary.js";
import { resticError, spawnRestic, type ResticSession } from "./run.js";
import { findInResticSnapshots, listResticSnapshots, nodeRoot, type ResticNode, type ResticSnapshotRecord } from "./snapshots.js";

interface Copy {
  snap: ResticSnapshotRecord;
  node: ResticNode;
}

/** Is `rel` (under root `root`) a session file pi wrote? Then its id. */
function sessionIdOf(root: string, rel: string): string | undefined {
  const inSessions = root === "sessions" || (root === "agent" && rel.startsWith("sessions/"));
  return inSessions ? parseSessionFileName(path.basename(rel))?.id : undefined;
}

export async function resticSessions(config: Config, s: ResticSession): Promise<SessionRecord[]> {
  const copies = new Map<string, Copy[]>();
  const found = await findInResticSnapshots(s, "*.jsonl");
  // Oldest first, and only snapshots the listing knows as pi-guard's (with their roots).
  for (const snap of await listResticSnapshots(s)) {
    for (const node of found.get(snap.id) ?? []) {
      if (node.type !== "file") continue;
      const where = nodeRoot(snap, node.path);
      const id = where && sessionIdOf(where.root, where.rel);
      if (!id) continue;
      const list = copies.get(id) ?? [];
      // One copy per snapshot: a session is in a snapshot once.
      if (list[list.length - 1]?.snap.id !== snap.id) list.push({ snap, node });
      copies.set(id, list);
    }
  }
  const live = new Map<string, { path: string; size: number }>();
  for (const f of listLiveFiles(liveSessionDirs(config))) {
    const id = parseSessionFileName(path.basename(f.path))?.id ?? (await summarizeSession(f.path, path.basename(f.path))).id;
    live.set(id, f);
  }
  const tags = await readTags(config.dataDir).catch(() => ({}) as Record<string, string[]>);
  const host = hostName();
  const out: SessionRecord[] = [];
  for (const id of new Set([...live.keys(), ...copies.keys()])) {
    const l = live.get(id);
    const c = copies.get(id) ?? [];
    const newest = c[c.length - 1];
    const summary: SessionSummary = l ? await summarizeSession(l.path, id) : await summarizeDumped(s, newest, id);
    const ref = (x: Copy): SnapshotRef => ({ snapshotId: x.snap.id, time: x.snap.time });
    const versions: SnapshotVersion[] = [];
    for (const x of c) {
      const v = versions[versions.length - 1];
      const prev = v && c[c.indexOf(x) - 1];
      if (v && prev && prev.node.size === x.node.size && prev.node.mtime === x.node.mtime) {
        v.last = ref(x);
        v.snapshots++;
      } else versions.push({ first: ref(x), last: ref(x), snapshots: 1, path: x.node.path, size: x.node.size });
    }
    const hosts = new Set(c.map((x) => x.snap.host));
    if (l) hosts.add(host);
    out.push({
      ...summary,
      id,
      agent: PI_AGENT,
      size: l ? l.size : newest.node.size,
      live: l?.path ?? null,
      versions,
      snapshotCount: c.length,
      lastSnapshot: newest ? ref(newest) : null,
      deleted: !l,
      hosts: [...hosts].sort(),
      tags: (tags as Record<string, string[]>)[id] ?? [],
    });
  }
  return out.sort((a, b) => compareStrings(b.lastActivity ?? "", a.lastActivity ?? "") || compareStrings(a.id, b.id));
}

/** Summarise a session straight from restic's `dump` stream, never holding the whole file. */
async function summarizeDumped(s: ResticSession, copy: Copy, id: string): Promise<SessionSummary> {
  const child = spawnRestic(await findRestic(s.env ?? process.env), s, ["dump", copy.snap.id, copy.node.path], { binary: true });
  let summary: SessionSummary;
  try {
    summary = await summarizeSession(child.iterable({ binary: true }) as AsyncIterable<Uint8Array>, id);
  } catch (err) {
    child.kill();
    await child;
    throw err;
  }
  // A summary of a cut-short stream is no summary: restic must have finished without error.
  const r = await child;
  if (r.exitCode !== 0) throw resticError("dump", r.exitCode ?? -1, r.stderr ? Buffer.from(r.stderr as Uint8Array).toString("utf8") : "", r.signal);
  return summary;
}

/**
 * A session's bytes: the live file, else its newest copy in a restic snapshot (`restic dump`),
 * checked against the size the snapshot lists. Also says where they came from.
 */
export async function readResticSession(s: ResticSession, record: SessionRecord): Promise<{ bytes: Buffer; source: string }> {
  if (record.live) return { bytes: await fs.readFile(record.live), source: `live ${record.live}` };
  const version = record.versions[record.versions.length - 1];
  if (!version) throw new RepoError(`session ${record.id} is neither live nor in a snapshot`, "not-found");
  const snapshotId = version.last.snapshotId;
  const child = spawnRestic(await findRestic(s.env ?? process.env), s, ["dump", snapshotId, version.path], { binary: true });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of child.iterable({ binary: true }) as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    // A dump longer than the listed size is not this file: stop reading rather than fill memory.
    if (size > version.size) break;
    chunks.push(Buffer.from(chunk));
  }
  if (size > version.size) child.kill();
  const r = await child;
  const mismatch = () => new RepoError(`restic dump of session ${record.id} gave ${size > version.size ? "more than" : size} bytes, the snapshot lists ${version.size}`, "corrupt");
  if (size > version.size) throw mismatch();
  // restic's own failure first: it names what is damaged, the short read only shows that something is.
  if (r.exitCode !== 0) throw resticError("dump", r.exitCode ?? -1, r.stderr ? Buffer.from(r.stderr as Uint8Array).toString("utf8") : "", r.signal);
  if (size !== version.size) throw mismatch();
  return { bytes: Buffer.concat(chunks), source: `restic snapshot ${snapshotId.slice(0, 8)} ${version.path}` };
}
