// The session catalog's snapshots side (sessions/catalog-snapshots.ts) over a restic repository:
// the same catalog as over a native one, every agent's sessions read by its own adapter. One
// `restic find --json '*'` lists every file of every pi-guard snapshot (one restic process however
// many snapshots); a file's bytes come from `restic dump`, streamed and checked against the size
// the listing gives. restic lists no content ids, so a file's version is its size and mtime.
import { createHash } from "node:crypto";
import { listedFiles } from "../agents/files.js";
import type { FileInfo, FileReader } from "../agents/types.js";
import { RepoError } from "../repo/errors.js";
import type { CatalogSnapshots } from "../sessions/catalog-snapshots.js";
import { newestRun, originalPath, sessionFileAgent, type FileHistory, type SnapshotHistory, type SnapshotMeta } from "../sessions/snapshot-files.js";
import { findRestic } from "./binary.js";
import { resticError, spawnRestic, type ResticSession } from "./run.js";
import { findInResticSnapshots, listResticNodes, listResticSnapshots, nodeRoot, type ResticNode, type ResticSnapshotRecord } from "./snapshots.js";
import { compareStrings } from "../compare.js";
import { META_ROOT_NAME } from "../sessions/meta.js";

/**
 * The bytes of `file` in restic snapshot `snapshotId`, streamed by `restic dump`: exactly `size`
 * bytes, or an error (restic's own first: it names what is damaged).
 */
export async function* dumpResticFile(s: ResticSession, snapshotId: string, file: string, size: number): AsyncGenerator<Buffer> {
  const child = spawnRestic(await findRestic(s.env ?? process.env), s, ["dump", snapshotId, file], { binary: true });
  let got = 0;
  let finished = false;
  try {
    for await (const chunk of child.iterable({ binary: true }) as AsyncIterable<Uint8Array>) {
      got += chunk.length;
      // Longer than the listed size is not this file: stop rather than fill memory.
      if (got > size) break;
      yield Buffer.from(chunk);
    }
    finished = got <= size;
  } finally {
    if (!finished) child.kill();
  }
  const r = await child;
  const mismatch = () => new RepoError(`restic dump of ${file} in snapshot ${snapshotId.slice(0, 8)} gave ${got > size ? "more than" : got} bytes, the snapshot lists ${size}`, "corrupt");
  if (got > size) throw mismatch();
  if (r.exitCode !== 0) throw resticError("dump", r.exitCode ?? -1, r.stderr ? Buffer.from(r.stderr as Uint8Array).toString("utf8") : "", r.signal);
  if (got !== size) throw mismatch();
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}

/** A snapshot's regular files under its roots (pi-guard's own metadata root left out), root-relative and in path order, with the absolute path restic knows each by. */
function filesOf(meta: SnapshotMeta, nodes: readonly ResticNode[]): (FileInfo & { abs: string })[] {
  const record = { ...meta, paths: [], user: "" } as ResticSnapshotRecord;
  const listed: (FileInfo & { abs: string })[] = [];
  for (const node of nodes) {
    const where = node.type === "file" ? nodeRoot(record, node.path) : undefined;
    if (!where || where.root === META_ROOT_NAME) continue;
    const mtimeMs = node.mtime ? Date.parse(node.mtime) : NaN;
    listed.push({ root: where.root, path: where.rel, size: node.size, mtimeMs: Number.isFinite(mtimeMs) ? mtimeMs : 0, abs: node.path });
  }
  return listed.sort((a, b) => compareStrings(a.root, b.root) || compareStrings(a.path, b.path));
}

/** A FileReader over one restic snapshot's files (`restic dump` reads each), for the agents' session readers. */
function readerOf(s: ResticSession, snap: SnapshotMeta, listed: readonly (FileInfo & { abs: string })[]): FileReader {
  const abs = new Map(listed.map((f) => [`${f.root}\0${f.path}`, f]));
  const infos = listed.map(({ abs: _a, ...f }) => f);
  return listedFiles(`restic snapshot ${snap.id.slice(0, 8)}`, snap.roots.map((r) => r.name), infos, (ref) => {
    const f = abs.get(`${ref.root}\0${ref.path}`)!;
    return dumpResticFile(s, snap.id, f.abs, f.size);
  });
}

/** The files of a restic snapshot whose nodes the caller listed already (restore --session). */
export const resticSnapshotFiles = (s: ResticSession, snap: ResticSnapshotRecord, nodes: readonly ResticNode[]): FileReader => readerOf(s, metaOf(snap), filesOf(metaOf(snap), nodes));

const metaOf = (r: ResticSnapshotRecord): SnapshotMeta => ({ id: r.id, time: r.time, host: r.host, tags: r.tags, roots: r.roots.map((x) => ({ name: x.name, path: x.path })), ...(r.agents ? { agents: { ...r.agents } } : {}), tree: [] });

/** A restic repository's snapshots for the session catalog; `onUnreadable` hears of each snapshot restic cannot read. */
export function resticCatalogSnapshots(s: ResticSession, opts: { onUnreadable?: (message: string) => void } = {}): CatalogSnapshots {
  let records: Promise<ResticSnapshotRecord[]> | undefined;
  const unreadable: { id: string; error: string }[] = [];
  const list = () =>
    (records ??= listResticSnapshots(s, {
      onUnreadable: (message) => {
        unreadable.push({ id: /snapshot ([0-9a-f]+)/.exec(message)?.[1] ?? "?", error: message });
        opts.onUnreadable?.(message);
      },
    }));
  /** Each snapshot's files, by snapshot id: root-relative, with the absolute path restic knows them by. */
  const filesBySnapshot = new Map<string, (FileInfo & { abs: string })[]>();
  return {
    // restic repository strings name the repository; the catalog's caches are keyed by it.
    id: `restic-${createHash("sha256").update(s.repository).digest("hex").slice(0, 16)}`,
    label: "restic snapshot",
    // No repository yet: live sessions only, as on a native location. The snapshots restic could
    // not read count too (as a native listing's object names do), so that one damaged snapshot of
    // several is a warning, and only all of them damage.
    snapshotIds: async () => {
      const records = await list().catch((err: unknown) => {
        if (err instanceof RepoError && err.kind === "not-found") return [];
        throw err;
      });
      return [...records.map((r) => r.id), ...unreadable.map((u) => u.id)];
    },
    async history(ids) {
      if (!ids.length) return { snapshots: [], unreadable: [...unreadable], files: [] };
      const wanted = new Set(ids);
      const snapshots = (await list()).filter((r) => wanted.has(r.id)).map(metaOf);
      const found = await findInResticSnapshots(s, "*");
      const [{ snapshotRootAgents }, { findAgent }] = await Promise.all([import("../agents/roots.js"), import("../agents/registry.js")]);
      const claims = (agent: string, f: { root: string; path: string }) => findAgent(agent)?.sessions.isSessionFile(f) ?? false;
      const byKey = new Map<string, FileHistory>();
      const files: FileHistory[] = [];
      snapshots.forEach((meta, i) => {
        const rootAgent = snapshotRootAgents(meta);
        const listed = filesOf(meta, found.get(meta.id) ?? []);
        filesBySnapshot.set(meta.id, listed);
        for (const f of listed) {
          const agent = sessionFileAgent({ type: "file", root: f.root, path: f.path }, rootAgent, claims);
          if (!agent) continue;
          const fileKey = `${f.root}\0${f.path}`;
          const key = createHash("sha256").update(`${fileKey}\0${f.size}\0${f.mtimeMs}`).digest("hex");
          const h = byKey.get(fileKey);
          if (!h) {
            const created: FileHistory = { root: f.root, path: f.path, runs: [[i, i, f.size, key]], ...(agent !== "pi" ? { agent } : {}) };
            byKey.set(fileKey, created);
            files.push(created);
            continue;
          }
          const last = newestRun(h);
          if (last[3] === key && last[1] === i - 1) last[1] = i;
          else h.runs.push([i, i, f.size, key]);
        }
      });
      return { snapshots, unreadable: [...unreadable], files };
    },
    // Nothing is kept: each run asks restic again (the catalog's own view cache still applies).
    save: async () => {},
    async stream(history: SnapshotHistory, h: FileHistory) {
      const [, last, size] = newestRun(h);
      const snap = history.snapshots[last];
      return dumpResticFile(s, snap.id, originalPath(snap, h), size);
    },
    async read(history, h) {
      return collect(await this.stream(history, h));
    },
    async files(snap) {
      let listed = filesBySnapshot.get(snap.id);
      if (!listed) {
        // A catalog reused from its cache read no history: this one snapshot is listed now.
        const nodes: ResticNode[] = [];
        await listResticNodes(s, snap.id, (n) => nodes.push(n));
        listed = filesOf(snap, nodes);
        filesBySnapshot.set(snap.id, listed);
      }
      return readerOf(s, snap, listed);
    },
    close: async () => {},
  };
}

