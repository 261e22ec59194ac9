// Tolerant, strictly read-only parser for pi session JSONL (versions 1, 2 and 3).
// pi's own loader (SessionManager.open) rewrites old files and replaces headerless ones, so
// pi-guard reads sessions only through this module. Nothing here opens a file for writing.

import { isUtf8 } from "node:buffer";
import { randomUUID } from "node:crypto";
import { closeSync, createReadStream, openSync, readSync } from "node:fs";
import { SessionLineDecoder, type ParseIssue, type SessionItem } from "./lines.js";
import type { RawSessionEntry, SessionEntry, SessionHeader } from "../../model/session.js";
import { CURRENT_SESSION_VERSION } from "../../model/session.js";

export type { ParseIssue, ParseIssueKind, SessionItem } from "./lines.js";
export { nestingWarnings, splitGlued } from "./lines.js";

export interface ParseResult {
  header: SessionHeader | null;
  /** Fields read from a first line that looked like a header but was unusable. */
  headerFragment?: Record<string, unknown>;
  /** Format version: the header's, or guessed from the entries when there is no header. */
  version: number;
  entries: RawSessionEntry[];
  /** 1-based line number each entry came from (parallel to `entries`). */
  entryLines: number[];
  issues: ParseIssue[];
  lineCount: number;
}

/** One physical line: the bytes between two "\n" (without them). */
export interface RawLine {
  line: number;
  bytes: Buffer;
  terminated: boolean;
}

const NEWLINE = 0x0a;

/** Split an in-memory buffer into lines without copying the line bytes. */
export function* splitBufferLines(buf: Uint8Array): Generator<RawLine> {
  const data = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  let start = 0;
  let line = 0;
  while (start < data.length) {
    const nl = data.indexOf(NEWLINE, start);
    line += 1;
    if (nl === -1) {
      yield { line, bytes: data.subarray(start), terminated: false };
      return;
    }
    yield { line, bytes: data.subarray(start, nl), terminated: true };
    start = nl + 1;
  }
}

/**
 * Stream the lines of a file or byte stream. Holds at most one line plus one read chunk,
 * so multi-GB sessions do not grow memory beyond their longest line.
 */
export async function* readLines(source: string | AsyncIterable<Uint8Array | string>): AsyncGenerator<RawLine> {
  const stream = typeof source === "string" ? createReadStream(source, { flags: "r", highWaterMark: 1 << 16 }) : source;
  let pending: Buffer[] = [];
  let line = 0;
  for await (const chunk of stream) {
    let data = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let nl = data.indexOf(NEWLINE);
    while (nl !== -1) {
      line += 1;
      const tail = data.subarray(0, nl);
      const bytes = pending.length === 0 ? Buffer.from(tail) : Buffer.concat([...pending, tail]);
      pending = [];
      yield { line, bytes, terminated: true };
      data = data.subarray(nl + 1);
      nl = data.indexOf(NEWLINE);
    }
    // Copy the remainder: the stream may reuse its chunk buffer.
    if (data.length > 0) pending.push(Buffer.from(data));
  }
  if (pending.length > 0) yield { line: line + 1, bytes: Buffer.concat(pending), terminated: false };
}

/** Bytes a synchronous file read asks for at once: large, so a big session costs few system calls. */
const FILE_CHUNK = 1 << 20;
/**
 * The read buffer of the last file read on this thread, for the next one: a fresh 1 MiB per file
 * left glibc holding tens of MB of freed buffers (peak RSS 115 -> 168 MB on a 250 MiB cold list).
 */
let spareChunk: Buffer | undefined;

/**
 * The lines of a file, read synchronously into one buffer that grows only to the longest line
 * (memory stays bounded as in readLines). A line's bytes are valid until the next line is asked
 * for: callers decode them at once. For a thread that does nothing else meanwhile (a parse
 * worker): a stream's chunk copies, async iteration and per-line promises cost more than the
 * JSON.parse of a session of many small lines.
 */
export function* readFileLinesSync(file: string): Generator<RawLine> {
  const fd = openSync(file, "r");
  let buf = spareChunk ?? Buffer.allocUnsafe(FILE_CHUNK);
  spareChunk = undefined;
  try {
    let held = 0; // bytes of a line not finished yet, at the start of buf
    let line = 0;
    for (;;) {
      if (held === buf.length) {
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, held);
        buf = bigger;
      }
      const got = readSync(fd, buf, held, buf.length - held, null);
      if (got === 0) break;
      const data = buf.subarray(0, held + got);
      let start = 0;
      for (let nl = data.indexOf(NEWLINE, held); nl !== -1; nl = data.indexOf(NEWLINE, start)) {
        line += 1;
        yield { line, bytes: data.subarray(start, nl), terminated: true };
        start = nl + 1;
      }
      held = data.length - start;
      if (held > 0 && start > 0) data.copy(buf, 0, start);
    }
    if (held > 0) yield { line: line + 1, bytes: buf.subarray(0, held), terminated: false };
  } finally {
    closeSync(fd);
    // A buffer grown for a long line is dropped: the next file starts small again.
    if (buf.length === FILE_CHUNK) spareChunk = buf;
  }
}

function decodeLine(decoder: SessionLineDecoder, raw: RawLine): SessionItem[] {
  const utf8Valid = isUtf8(raw.bytes);
  return decoder.decode({ line: raw.line, text: raw.bytes.toString("utf8"), terminated: raw.terminated, utf8Valid });
}

function* stringLines(text: string): Generator<{ line: number; text: string; terminated: boolean }> {
  let start = 0;
  let line = 0;
  while (start < text.length) {
    const nl = text.indexOf("\n", start);
    line += 1;
    if (nl === -1) {
      yield { line, text: text.slice(start), terminated: false };
      return;
    }
    yield { line, text: text.slice(start, nl), terminated: true };
    start = nl + 1;
  }
}

/** Items of an in-memory session, in file order. Never throws. */
export function* sessionItems(input: string | Uint8Array): Generator<SessionItem> {
  const decoder = new SessionLineDecoder();
  let lines = 0;
  if (typeof input === "string") {
    for (const l of stringLines(input)) {
      lines = l.line;
      yield* decoder.decode({ ...l, utf8Valid: true });
    }
  } else {
    for (const raw of splitBufferLines(input)) {
      lines = raw.line;
      yield* decodeLine(decoder, raw);
    }
  }
  yield* decoder.finish(lines);
}

/** Items of a session file or byte stream, streamed. Read errors (missing file...) do throw. */
export async function* streamSessionItems(source: string | AsyncIterable<Uint8Array | string>): AsyncGenerator<SessionItem> {
  const decoder = new SessionLineDecoder();
  let lines = 0;
  for await (const raw of readLines(source)) {
    lines = raw.line;
    yield* decodeLine(decoder, raw);
  }
  yield* decoder.finish(lines);
}

/** Items of a session file, read synchronously (readFileLinesSync). Read errors do throw. */
export function* fileSessionItemsSync(file: string): Generator<SessionItem> {
  const decoder = new SessionLineDecoder();
  let lines = 0;
  for (const raw of readFileLinesSync(file)) {
    lines = raw.line;
    yield* decodeLine(decoder, raw);
  }
  yield* decoder.finish(lines);
}

/** Collects items into a ParseResult; shared by the sync and async entry points. */
class ResultBuilder {
  readonly result: ParseResult = { header: null, version: 1, entries: [], entryLines: [], issues: [], lineCount: 0 };

  add(item: SessionItem): void {
    switch (item.kind) {
      case "header":
        this.result.header = item.header;
        break;
      case "header-fragment":
        this.result.headerFragment = item.fields;
        break;
      case "entry":
        this.result.entries.push(item.entry);
        this.result.entryLines.push(item.line);
        break;
      case "issue":
        this.result.issues.push(item.issue);
        break;
      case "end":
        this.result.lineCount = item.lineCount;
        break;
    }
  }

  finish(): ParseResult {
    this.result.version = sessionVersion(this.result.header, this.result.entries);
    return this.result;
  }
}

/** Parse a whole session held in memory. Never throws. */
export function parseSessionText(input: string | Uint8Array): ParseResult {
  const builder = new ResultBuilder();
  for (const item of sessionItems(input)) builder.add(item);
  return builder.finish();
}

/** Parse a session file by streaming it. Only I/O errors (e.g. ENOENT) reject. */
export async function parseSessionFile(source: string | AsyncIterable<Uint8Array | string>): Promise<ParseResult> {
  const builder = new ResultBuilder();
  for await (const item of streamSessionItems(source)) builder.add(item);
  return builder.finish();
}

/**
 * The format version. pi reads a missing `version` as 1. Without a header pi would also assume 1
 * (and give every entry a new id); we only do that when the entries really lack ids.
 */
export function sessionVersion(header: SessionHeader | null, entries: readonly RawSessionEntry[]): number {
  if (header) {
    const v = header.version;
    if (typeof v !== "number" || v < 1) return 1;
    return Math.min(Math.floor(v), CURRENT_SESSION_VERSION);
  }
  if (entries.length === 0) return CURRENT_SESSION_VERSION;
  const withIds = entries.every((e) => typeof e.id === "string");
  if (!withIds) return 1;
  const hasHookMessage = entries.some((e) => e.type === "message" && (e.message as { role?: unknown } | undefined)?.role === "hookMessage");
  return hasHookMessage ? 2 : CURRENT_SESSION_VERSION;
}

export interface MigrateOptions {
  /**
   * Makes the id of one version 1 entry. Default: like pi, the first 8 hex digits of a random
   * UUID, retried on collision. Pass a deterministic one to get stable ids across runs.
   */
  generateId?: (taken: ReadonlySet<string>, index: number) => string;
}

export interface MigrateResult {
  header: SessionHeader | null;
  entries: SessionEntry[];
  /** The version the input was read as; 3 means nothing needed migrating. */
  fromVersion: number;
}

function randomShortId(taken: ReadonlySet<string>): string {
  for (let i = 0; i < 100; i++) {
    const id = randomUUID().slice(0, 8);
    if (!taken.has(id)) return id;
  }
  return randomUUID();
}

/**
 * Bring entries to version 3 the way pi's migrateSessionEntries does, on copies: inputs are never
 * mutated and nothing is written. Rules (pi 0.73.1, session-manager.js):
 * - v1 -> v2: every entry gets a fresh id and parentId = the previous entry's id (a straight
 *   chain). A compaction's `firstKeptEntryIndex` indexes the parsed lines *including the header*;
 *   it becomes `firstKeptEntryId` when it points at a non-header entry and is always removed.
 * - v2 -> v3: message role `hookMessage` becomes `custom`.
 * - the header's version becomes 3; its other fields (provider, modelId, branchedFrom...) stay.
 */
export function migrateToV3InMemory(
  header: SessionHeader | null,
  entries: readonly RawSessionEntry[],
  options: MigrateOptions = {},
): MigrateResult {
  const fromVersion = sessionVersion(header, entries);
  if (fromVersion >= CURRENT_SESSION_VERSION) {
    return { header, entries: entries.slice() as unknown as SessionEntry[], fromVersion };
  }
  const out: RawSessionEntry[] = entries.map((e) => ({ ...e }));
  if (fromVersion < 2) assignChainIds(header, out, options.generateId ?? randomShortId);
  for (let i = 0; i < out.length; i++) {
    const e = out[i];
    const message = e.message as { role?: unknown } | undefined;
    if (e.type === "message" && message && typeof message === "object" && message.role === "hookMessage") {
      out[i] = { ...e, message: { ...message, role: "custom" } };
    }
  }
  const migratedHeader = header ? { ...header, version: CURRENT_SESSION_VERSION } : null;
  return { header: migratedHeader, entries: out as unknown as SessionEntry[], fromVersion };
}

function assignChainIds(
  header: SessionHeader | null,
  out: RawSessionEntry[],
  generateId: (taken: ReadonlySet<string>, index: number) => string,
): void {
  const taken = new Set<string>();
  // pi indexes firstKeptEntryIndex into the array of parsed lines, where the header is item 0.
  const indexed: { type: string; id?: unknown }[] = header ? [header, ...out] : out;
  let prevId: string | null = null;
  out.forEach((e, index) => {
    const id = generateId(taken, index);
    taken.add(id);
    e.id = id;
    e.parentId = prevId;
    prevId = id;
    if (e.type === "compaction" && typeof e.firstKeptEntryIndex === "number") {
      const target = indexed[e.firstKeptEntryIndex];
      if (target && target.type !== "session") e.firstKeptEntryId = target.id;
      delete e.firstKeptEntryIndex;
    }
  });
}

export interface ReadSessionResult extends MigrateResult {
  issues: ParseIssue[];
  /** 1-based line number each entry came from (parallel to `entries`). */
  entryLines: number[];
  headerFragment?: Record<string, unknown>;
  lineCount: number;
}

/** Parse and migrate in one step: what most readers of a session want. Never throws. */
export function readSessionText(input: string | Uint8Array, options?: MigrateOptions): ReadSessionResult {
  const parsed = parseSessionText(input);
  const migrated = migrateToV3InMemory(parsed.header, parsed.entries, options);
  const { issues, entryLines, headerFragment, lineCount } = parsed;
  return { ...migrated, issues, entryLines, lineCount, ...(headerFragment ? { headerFragment } : {}) };
}
