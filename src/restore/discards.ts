// What an in-place restore throws away of the current state, per session: `restore "6 minutes
// ago"` replaces a live session with an older copy of it, and the entries pi appended since are
// gone from the agent dir (the pre-restore snapshot still holds them). pi's session files are
// append-mostly, so the live file usually extends the restored one: what it loses is what follows
// the bytes the two share. Those entries are counted with pi-guard's own read-only parser
// (src/agents/pi/, src/model/), never pi's loader. Deleted sessions (--delete) lose all of their entries, and a restore
// of pi-guard's own metadata root rolls back its session tags.
import { constants, promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { META_ROOT_NAME } from "../config/config.js";
import { streamSessionItems } from "../agents/pi/parse.js";
import { parseSessionFileName } from "../agents/pi/writer.js";
import { BlobReader } from "../repo/blob-reader.js";
import type { TreeNode } from "../repo/format.js";
import type { Repository } from "../repo/repository.js";
import { SealPool } from "../repo/seal-pool.js";
import { readAt } from "../snapshot/snapshotter.js";
import type { FileAction, PlanItem, RestorePlan } from "./restorer.js";
import { walkToFile } from "./safe-path.js";

export interface SessionDiscard {
  root: string;
  path: string;
  action: "replace" | "delete";
  /** From pi's file name; null for a .jsonl not named like pi's sessions. */
  sessionId: string | null;
  /** Lines of the live file past the bytes it shares with the restored version (all of them for a deletion). */
  entries: number;
  /** Of those, `message` entries (user, assistant, tool results...). */
  messages: number;
  bytes: number;
}

export interface DiscardReport {
  /** Totals over `sessions`. */
  entries: number;
  messages: number;
  bytes: number;
  /** Only sessions that lose something. */
  sessions: SessionDiscard[];
  /** Files of pi-guard's own metadata root (session tags) the restore sets back to the snapshot's. */
  meta: { path: string; action: FileAction }[];
}

/** Measure, for each session file the plan replaces or deletes, what of the live file it discards. */
export async function measureDiscards(repo: Repository, plan: RestorePlan): Promise<DiscardReport> {
  const report: DiscardReport = { entries: 0, messages: 0, bytes: 0, sessions: [], meta: [] };
  const pool = new SealPool(0);
  const reader = new BlobReader(repo, pool);
  try {
    for (const item of plan.items) {
      if (item.type === "dir" || item.action === "unchanged") continue;
      if (item.root === META_ROOT_NAME) {
        report.meta.push({ path: item.rel, action: item.action });
        continue;
      }
      if (item.action === "create" || item.type === "symlink" || !item.rel.endsWith(".jsonl")) continue;
      const lost = await measure(repo, reader, item).catch(() => undefined);
      if (!lost || lost.bytes === 0) continue;
      report.sessions.push({ root: item.root, path: item.rel, action: item.action, sessionId: parseSessionFileName(item.rel)?.id ?? null, ...lost });
      report.entries += lost.entries;
      report.messages += lost.messages;
      report.bytes += lost.bytes;
    }
  } finally {
    await pool.close();
  }
  return report;
}

/** The live file's part the restore discards; undefined when it is not a regular file there now. */
async function measure(repo: Repository, reader: BlobReader, item: PlanItem): Promise<{ entries: number; messages: number; bytes: number } | undefined> {
  const file = await walkToFile(item.rootDir, item.comps);
  if (file === undefined) return undefined;
  const handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const { size } = await handle.stat();
    const shared = item.action === "delete" ? 0 : await sharedPrefix(repo, reader, item.node!, handle, size);
    const start = await lineStart(handle, shared);
    if (start >= size) return { entries: 0, messages: 0, bytes: 0 };
    let entries = 0;
    let messages = 0;
    for await (const it of streamSessionItems(handle.createReadStream({ start, end: size - 1, autoClose: false }))) {
      if (it.kind !== "entry") continue;
      entries++;
      if (it.entry.type === "message") messages++;
    }
    return { entries, messages, bytes: size - start };
  } finally {
    await handle.close();
  }
}

/**
 * How many leading bytes the live file shares with the snapshot's version: compared blob by blob
 * at the node's own boundaries (no download for the blobs that match), and within the first blob
 * that differs by its bytes (one blob read, checked against its id). Only the live file is read
 * in full, so the cost grows with the session's size, not with the repository's.
 */
async function sharedPrefix(repo: Repository, reader: BlobReader, node: TreeNode, handle: FileHandle, size: number): Promise<number> {
  let pos = 0;
  // One buffer for every blob's bytes: memory stays at the largest blob, whatever the file's size.
  let scratch = Buffer.alloc(0);
  for (const id of node.content ?? []) {
    const len = repo.index.get(id)?.rawLength;
    if (len === undefined) return pos;
    if (scratch.length < len) scratch = Buffer.allocUnsafe(len);
    const live = await readBytes(handle, pos, Math.min(len, size - pos), scratch);
    if (live.length === len && repo.blobId(live) === id) {
      pos += len;
      continue;
    }
    const [restored] = await reader.read([id]).catch(() => [undefined]);
    if (!restored) return pos;
    let same = 0;
    while (same < live.length && same < restored.length && live[same] === restored[same]) same++;
    return pos + same;
  }
  return pos;
}

/** Where the line holding byte `pos` starts: a line cut by the shared prefix counts as discarded. */
async function lineStart(handle: FileHandle, pos: number): Promise<number> {
  const step = 64 * 1024;
  for (let end = pos; end > 0; end -= step) {
    const from = Math.max(0, end - step);
    const buf = await readBytes(handle, from, end - from);
    const nl = buf.lastIndexOf(0x0a);
    if (nl >= 0) return from + nl + 1;
  }
  return 0;
}

/** Up to `length` bytes at `pos` (fewer at the end of the file), into `into` when given. */
async function readBytes(handle: FileHandle, pos: number, length: number, into?: Buffer): Promise<Buffer> {
  const buf = (into ?? Buffer.allocUnsafe(Math.max(0, length))).subarray(0, Math.max(0, length));
  return buf.subarray(0, await readAt(handle, buf, pos));
}
