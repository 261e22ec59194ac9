// Reading a session for export without holding it in memory. A session file can be hundreds of
// MB, most of it tool output, and its shape is a tree whose leaf is the last line: nothing about
// the branch to export is known until the whole file has been read. So it is read twice.
//
// Pass 1 (openSessionStream) decodes every line once and keeps, per entry, only a small record:
// id, parent, type, the tool-call ids that pair calls with results, and the numbers behind
// sessionStats. From those it resolves the branch, labels, name and stats.
// Pass 2 (entries, branchEntries, entriesAt) reads the bytes again and yields full entries,
// migrated to version 3 exactly as loadSessionBytes would, one at a time.
//
// Memory is O(entries) small records plus one line, never O(bytes). The bytes come from a
// ByteSource that must return the same bytes on every read; if the second read disagrees with the
// first (a file rewritten meanwhile), the export fails rather than mixing two versions.

import { isUtf8 } from "node:buffer";
import { promises as fs } from "node:fs";
import { nestingWarnings, SessionLineDecoder } from "../agents/pi/lines.js";
import { readLines, sessionVersion, type RawLine } from "../agents/pi/parse.js";
import type { AssistantMessage, RawSessionEntry, SessionEntry, SessionHeader } from "../model/session.js";
import { CURRENT_SESSION_VERSION } from "../model/session.js";
import { statFacts, statsFromFacts, type SessionStats, type StatFacts } from "../model/stats.js";
import { RepoError } from "../repo/errors.js";
import { resolveEntryId } from "../sessions/view.js";
import { headerSeed, placeholderHeader, stableIdGenerator } from "../sessions/read.js";

/** Bytes of one session. Every call to read() must yield the same bytes from the start. */
export interface ByteSource {
  read(): AsyncIterable<Uint8Array>;
}

/** What pass 1 keeps of one entry (file order). Strings that can be shown are already redacted. */
export interface EntryRecord extends StatFacts {
  /** The v3 id (v1 files get the same stable ids as loadSessionBytes gives them). */
  id: string | undefined;
  type: string;
  /** Physical line the entry came from (glued lines hold several entries). */
  line: number;
  /** Characters of the entry's JSON text: what holding it in memory roughly costs. */
  size: number;
  /** toolCall block ids of an assistant message, as written (redacted when redacting). */
  toolCallIds?: unknown[];
  /** toolCallId of a toolResult message, as a string (redacted when redacting). */
  toolCallId?: string;
  /** "provider/model" of an assistant message (redacted when redacting). */
  model?: string;
}

export interface OpenOptions {
  /** The id used when the header lost its own (seeds v1 ids, names the placeholder header). */
  fallbackId: string;
  /** Export the path to this entry (an id or unique prefix) instead of pi's leaf. */
  branch?: string;
  /** Applied to every string kept from pass 1 and to every entry pass 2 yields. */
  redact?: (text: string) => string;
  /** Map applied to each entry pass 2 yields (e.g. redactDeep); defaults to none. */
  mapEntry?: (entry: SessionEntry) => SessionEntry;
  /** Characters of entry text entriesAt may hold while reading ahead (default READ_AHEAD_BUDGET). */
  readAheadBudget?: number;
}

export interface SessionStream {
  header: SessionHeader;
  fromVersion: number;
  /** Lines the tolerant parser skipped or repaired. */
  issues: number;
  /** What the export must tell the user (LoadedSession.warnings). */
  warnings: string[];
  /** Every entry's record, in file order; indices below refer to this array. */
  records: readonly EntryRecord[];
  /** The entry the exported path ends at: pi's leaf (the last entry) unless `branch` chose one. */
  leafId: string | null;
  /** Indices of the entries from the root to leafId, root first. */
  branch: readonly number[];
  /** Entries without children (the tip of every branch). */
  leafCount: number;
  /** Current label per (redacted) target id. */
  labels: Map<string, string>;
  /** The latest session_info name (redacted), if any. */
  name: string | undefined;
  /** sessionStats over the given entries (default: all), computed from the records alone. */
  stats(indices?: readonly number[]): SessionStats;
  /** Every entry in file order. */
  entries(): AsyncIterable<SessionEntry>;
  /** The entries of `branch`, root first. */
  branchEntries(): AsyncIterable<SessionEntry>;
  /**
   * The entries at these indices, in exactly this order (an index may repeat). Indices in file
   * order cost one streaming read; entries needed before their place in the file are read ahead
   * within a fixed memory budget, and beyond it by another read.
   */
  entriesAt(order: readonly number[]): AsyncIterable<SessionEntry>;
}

/** How much entry text (in characters) entriesAt may hold while it reads ahead. */
export const READ_AHEAD_BUDGET = 32 * 1024 * 1024;

/** Decodes lines into raw entries, numbering them in file order; header items are collected. */
class EntryDecoder {
  private readonly decoder = new SessionLineDecoder();
  header: SessionHeader | null = null;
  headerFragment: Record<string, unknown> | undefined;
  issues = 0;
  readonly warnings: string[] = [];

  decode(raw: RawLine): { entry: RawSessionEntry; text: string }[] {
    const out: { entry: RawSessionEntry; text: string }[] = [];
    for (const item of this.decoder.decode({ line: raw.line, text: raw.bytes.toString("utf8"), terminated: raw.terminated, utf8Valid: isUtf8(raw.bytes) })) {
      if (item.kind === "entry") out.push({ entry: item.entry, text: item.text });
      else if (item.kind === "header") this.header = item.header;
      else if (item.kind === "header-fragment") this.headerFragment = item.fields;
      else if (item.kind === "issue") {
        this.issues++;
        this.warnings.push(...nestingWarnings([item.issue]));
      }
    }
    return out;
  }

  finish(lineCount: number): void {
    for (const item of this.decoder.finish(lineCount)) if (item.kind === "issue") this.issues++;
  }
}

const changed = () => new RepoError("the session changed while it was being exported; run the export again", "io");

/**
 * Pass 1: read the whole session once and keep only small records. Throws RepoError when
 * `branch` names no entry; read errors of the source propagate.
 */
export async function openSessionStream(source: ByteSource, opts: OpenOptions): Promise<SessionStream> {
  const redact = opts.redact ?? ((s: string) => s);
  const dec = new EntryDecoder();
  const records: EntryRecord[] = [];
  const rawIds: (string | undefined)[] = [];
  const rawIndex = new Map<string, number>();
  const labelEntries: { target: string; label: unknown }[] = [];
  let firstLine: Uint8Array = new Uint8Array(0);
  let firstTimestamp: unknown;
  let lineCount = 0;
  let name: string | undefined;

  for await (const raw of readLines(source.read())) {
    lineCount = raw.line;
    if (raw.line === 1) firstLine = Buffer.from(raw.bytes.subarray(0, 64 * 1024));
    for (const { entry: e, text } of dec.decode(raw)) {
      if (records.length === 0) firstTimestamp = e.timestamp;
      const rec = recordOf(e, text, raw.line, redact);
      // A session can hold a million small entries: share the parent's id string rather than
      // keep a second copy of it in every record.
      const parentAt = rec.parentId === null ? undefined : rawIndex.get(rec.parentId);
      if (parentAt !== undefined) rec.parentId = records[parentAt].id!;
      if (rec.id !== undefined) rawIndex.set(rec.id, records.length);
      // Raw ids matter only when the file turns out to be version 1 (see the migration below).
      if (!dec.header || sessionVersion(dec.header, []) < 2) rawIds[records.length] = rec.id;
      records.push(rec);
      if (e.type === "label" && typeof e.targetId === "string") labelEntries.push({ target: e.targetId, label: e.label });
      if (e.type === "session_info") name = typeof e.name === "string" ? e.name.trim() || undefined : undefined;
    }
  }
  dec.finish(lineCount);

  // The version, decided as sessionVersion decides it, from the records.
  const fromVersion = dec.header
    ? sessionVersion(dec.header, [])
    : records.length === 0
      ? CURRENT_SESSION_VERSION
      : !records.every((r) => r.id !== undefined)
        ? 1
        : records.some((r) => r.role === "hookMessage")
          ? 2
          : CURRENT_SESSION_VERSION;
  if (fromVersion < 2) {
    // A straight chain with stable ids, as migrateToV3InMemory + stableIdGenerator make it.
    const generate = stableIdGenerator(headerSeed(firstLine, opts.fallbackId));
    const taken = new Set<string>();
    let prev: string | null = null;
    records.forEach((r, index) => {
      const id = generate(taken, index);
      taken.add(id);
      r.id = id;
      r.parentId = prev;
      prev = id;
    });
  }
  if (fromVersion < CURRENT_SESSION_VERSION) for (const r of records) if (r.role === "hookMessage") r.role = "custom";
  const header: SessionHeader = dec.header
    ? fromVersion < CURRENT_SESSION_VERSION
      ? { ...dec.header, version: CURRENT_SESSION_VERSION }
      : dec.header
    : placeholderHeader(opts.fallbackId, { headerFragment: dec.headerFragment, entries: records.length ? [{ timestamp: firstTimestamp } as unknown as SessionEntry] : [] });

  // The tree from ids alone: the last duplicate id wins, as in buildTree; walks are cycle-safe.
  let byId = rawIndex;
  if (fromVersion < 2) {
    byId = new Map<string, number>();
    records.forEach((r, i) => {
      if (r.id !== undefined) byId.set(r.id, i);
    });
  }
  const last = records[records.length - 1];
  const leafId = opts.branch ? resolveEntryId(byId, opts.branch) : last?.id !== undefined ? last.id : null;
  const branch: number[] = [];
  const seen = new Set<string>();
  let current = leafId === null ? undefined : byId.get(leafId);
  while (current !== undefined && !seen.has(records[current].id!)) {
    seen.add(records[current].id!);
    branch.push(current);
    const parent = records[current].parentId;
    current = parent ? byId.get(parent) : undefined;
  }
  branch.reverse();

  const withChildren = new Set<string>();
  for (const r of records) if (r.parentId !== null && r.parentId !== r.id && byId.has(r.parentId)) withChildren.add(r.parentId);
  let leafCount = 0;
  for (const id of byId.keys()) if (!withChildren.has(id)) leafCount++;

  const labels = new Map<string, string>();
  for (const { target, label } of labelEntries) {
    if (typeof label === "string" && label) labels.set(redact(target), redact(label));
    else labels.delete(redact(target));
  }

  const reader = new EntryReader(source, records, {
    fromVersion,
    hasHeader: dec.header !== null,
    rawIds: fromVersion < 2 ? rawIds : undefined,
    mapEntry: opts.mapEntry,
    budget: opts.readAheadBudget ?? READ_AHEAD_BUDGET,
  });
  return {
    header,
    fromVersion,
    issues: dec.issues,
    warnings: dec.warnings,
    records,
    leafId,
    branch,
    leafCount,
    labels,
    name: name === undefined ? undefined : redact(name),
    stats: (indices) => statsOf(records, indices),
    entries: () => reader.entriesAt(records.map((_, i) => i)),
    branchEntries: () => reader.entriesAt(branch),
    entriesAt: (order) => reader.entriesAt(order),
  };
}

function recordOf(e: RawSessionEntry, text: string, line: number, redact: (s: string) => string): EntryRecord {
  const { model: _unredacted, ...facts } = statFacts(e as SessionEntry);
  const rec: EntryRecord = { ...facts, type: String(e.type), line, size: text.length };
  if (rec.role === "assistant") {
    const msg = e.message as AssistantMessage;
    const content = msg.content as unknown;
    if (Array.isArray(content)) {
      // The Markdown renderer pairs calls with results by these ids (blocksOf, then "toolCall").
      const ids = content.filter((b) => b && typeof b === "object" && b.type === "toolCall").map((b) => (typeof b.id === "string" ? redact(b.id) : b.id) as unknown);
      if (ids.length) rec.toolCallIds = ids;
    }
    if (msg.provider || msg.model) rec.model = `${msg.provider ? redact(String(msg.provider)) : "?"}/${msg.model ? redact(String(msg.model)) : "?"}`;
  } else if (rec.role === "toolResult") {
    rec.toolCallId = redact(String((e.message as { toolCallId?: unknown }).toolCallId));
  }
  return rec;
}

/** sessionStats over records instead of entries (the records carry the same StatFacts). */
export function statsOf(records: readonly EntryRecord[], indices?: readonly number[]): SessionStats {
  return statsFromFacts(indices ? indices.map((i) => records[i]) : records);
}

interface MigrationInfo {
  fromVersion: number;
  hasHeader: boolean;
  /** Raw ids of a v1 file (compaction targets after the compaction keep them, as in pi). */
  rawIds?: (string | undefined)[];
  mapEntry?: (entry: SessionEntry) => SessionEntry;
  budget: number;
}

/** Pass 2: full entries, read again from the source and migrated one at a time. */
class EntryReader {
  constructor(
    private readonly source: ByteSource,
    private readonly records: readonly EntryRecord[],
    private readonly migration: MigrationInfo,
  ) {}

  /** migrateToV3InMemory for one entry, using the ids pass 1 assigned. */
  private migrate(raw: RawSessionEntry, index: number): SessionEntry {
    const { fromVersion, hasHeader, rawIds } = this.migration;
    if (fromVersion >= CURRENT_SESSION_VERSION) return raw as unknown as SessionEntry;
    let e: RawSessionEntry = { ...raw };
    if (fromVersion < 2) {
      const rec = this.records[index];
      e.id = rec.id;
      e.parentId = rec.parentId;
      if (e.type === "compaction" && typeof e.firstKeptEntryIndex === "number") {
        // pi indexes the parsed lines with the header as item 0.
        const target = hasHeader ? e.firstKeptEntryIndex - 1 : e.firstKeptEntryIndex;
        if (target >= 0 && target < this.records.length) {
          const targetRec = this.records[target];
          // Entries before this one already carry their new id; later ones still their raw one.
          if (targetRec.type !== "session") e.firstKeptEntryId = target <= index ? targetRec.id : rawIds?.[target];
        }
        delete e.firstKeptEntryIndex;
      }
    }
    const message = e.message as { role?: unknown } | undefined;
    if (e.type === "message" && message && typeof message === "object" && message.role === "hookMessage") e = { ...e, message: { ...message, role: "custom" } };
    return e as unknown as SessionEntry;
  }

  async *entriesAt(order: readonly number[]): AsyncGenerator<SessionEntry> {
    const mapEntry = this.migration.mapEntry ?? ((e: SessionEntry) => e);
    // How many more times each index is wanted: one small counter per entry, not a map.
    const wanted = new Int32Array(this.records.length);
    for (const i of order) {
      if (!Number.isInteger(i) || i < 0 || i >= this.records.length) throw new RangeError(`no entry at index ${i}`);
      wanted[i]++;
    }
    let next = 0;
    const held = new Map<number, SessionEntry>();
    let heldSize = 0;
    const take = (i: number, e: SessionEntry): SessionEntry => {
      const left = --wanted[i];
      if (left === 0 && held.delete(i)) heldSize -= this.records[i].size;
      return e;
    };
    while (next < order.length) {
      const before = next;
      const dec = new EntryDecoder();
      // Records are in file order, so the record of each line's first entry is found by counting.
      let recIndex = 0;
      pass: for await (const raw of readLines(this.source.read())) {
        // Which entries a line yields does not depend on the lines before it, so lines holding
        // nothing wanted are skipped without decoding.
        while (recIndex < this.records.length && this.records[recIndex].line < raw.line) recIndex++;
        let due = false;
        for (let j = recIndex; j < this.records.length && this.records[j].line === raw.line && !due; j++) due = wanted[j] > 0;
        if (!due) continue;
        let index = recIndex;
        for (const { entry } of dec.decode(raw)) {
          const rec = this.records[index];
          if (!rec || rec.line !== raw.line) throw changed();
          if (rawIdOf(entry) !== (this.migration.rawIds ? this.migration.rawIds[index] : rec.id)) throw changed();
          if (wanted[index] > 0) {
            const e = mapEntry(this.migrate(entry, index));
            if (!held.has(index) && heldSize + rec.size <= this.migration.budget) {
              held.set(index, e);
              heldSize += rec.size;
            }
            if (order[next] === index && !held.has(index)) {
              yield take(index, e);
              next++;
            }
            // Entries read ahead earlier may be due now.
            while (next < order.length && held.has(order[next])) {
              const i = order[next++];
              yield take(i, held.get(i)!);
            }
            if (next >= order.length) break pass;
          }
          index++;
        }
      }
      if (next === before) throw changed(); // a whole read that found nothing due: the bytes moved
    }
  }
}

function rawIdOf(e: RawSessionEntry): string | undefined {
  return typeof e.id === "string" ? e.id : undefined;
}

/** Bytes held in memory (tests, small inputs). */
export function bufferSource(bytes: Uint8Array): ByteSource {
  return {
    async *read() {
      for (let i = 0; i < bytes.length; i += CHUNK) yield bytes.subarray(i, i + CHUNK);
    },
  };
}

const CHUNK = 1 << 20;

/**
 * A file read through one open handle, up to the size it had when opened. pi appends while we
 * export and may even replace the file; the handle and the size pin the bytes pass 1 saw.
 */
export async function fileSource(file: string): Promise<ByteSource & { size: number; close(): Promise<void> }> {
  const handle = await fs.open(file, "r");
  try {
    const { size } = await handle.stat();
    return {
      size,
      async *read() {
        let pos = 0;
        while (pos < size) {
          const buf = Buffer.allocUnsafe(Math.min(CHUNK, size - pos));
          const { bytesRead } = await handle.read(buf, 0, buf.length, pos);
          if (bytesRead === 0) throw changed(); // the file shrank under us
          pos += bytesRead;
          yield buf.subarray(0, bytesRead);
        }
      },
      close: () => handle.close(),
    };
  } catch (err) {
    await handle.close();
    throw err;
  }
}
