// The records `snapshots --json` prints, rendered once per snapshot and kept in the metadata cache
// (rows.log, docs/FORMAT.md §13): at 100,000 snapshots, parsing 43 MB of snapshot JSON and
// pretty-printing 65 MB again on every listing cost about a second. A cached row is the exact
// text of the record inside the printed array, split around the one value that depends on the
// reader (the local time, set by TZ), so printing is concatenation.

import type { Snapshot } from "./format.js";

/** Bumped whenever the printed record changes: an older row is then rendered again, not printed. */
export const ROW_VERSION = 1;
const LOCAL_TIME = '"localTime": "';

/** One `snapshots --json` record (its shape is the command's stable output). */
export function snapshotJson(id: string, s: Snapshot, localTime: string): Record<string, unknown> {
  return {
    id,
    shortId: id.slice(0, 8),
    time: s.time,
    localTime,
    host: s.host,
    user: s.user,
    tags: s.tags,
    roots: s.roots,
    parent: s.parent ?? null,
    imported: s.imported ?? null,
    skipped: s.skipped ?? [],
    changedWhileRead: s.changedWhileRead ?? [],
    special: s.special ?? [],
    summary: s.summary,
  };
}

export interface SnapshotRow {
  id: string;
  time: string;
  /** The record's text, with an empty local time whose value goes at byte `cut`. */
  text: Buffer;
  cut: number;
}

/**
 * version u8 | timeLength u8 | time | cut u32 | text, where text is the record as it appears in
 * a 2-space-indented array with an empty local time, and cut is where the local time goes.
 */
export function encodeRow(id: string, s: Snapshot): Buffer {
  // Exactly what JSON.stringify(array, null, 2) puts between "[\n" and "\n]" for this element.
  const text = JSON.stringify([snapshotJson(id, s, "")], null, 2).slice(2, -2);
  const time = String(s.time);
  const timeBytes = Math.min(Buffer.byteLength(time), 255);
  const cutChar = text.indexOf(LOCAL_TIME) + LOCAL_TIME.length;
  // One buffer per row, written in place: a cold listing renders 100,000 of them.
  const row = Buffer.allocUnsafe(2 + timeBytes + 4 + Buffer.byteLength(text));
  row[0] = ROW_VERSION;
  row[1] = timeBytes;
  row.write(time, 2, timeBytes, "utf8");
  row.writeUInt32LE(Buffer.byteLength(text.slice(0, cutChar)), 2 + timeBytes);
  row.write(text, 2 + timeBytes + 4, "utf8");
  return row;
}

/** Where a row's text starts in its encoded form (encodeRow), and its local time's place in the text. */
export function rowLayout(body: Buffer): { textAt: number; cut: number } {
  const textAt = 2 + body[1] + 4;
  return { textAt, cut: body.readUInt32LE(textAt - 4) };
}

/** A cached row, checked for structure; undefined when it is not one this version prints. */
export function decodeRow(id: string, body: Buffer): SnapshotRow | undefined {
  if (body.length < 6 || body[0] !== ROW_VERSION) return undefined;
  const timeEnd = 2 + body[1];
  if (body.length < timeEnd + 4) return undefined;
  const cut = body.readUInt32LE(timeEnd);
  const text = body.subarray(timeEnd + 4);
  if (cut < LOCAL_TIME.length || cut > text.length || text.toString("latin1", cut - LOCAL_TIME.length, cut) !== LOCAL_TIME) return undefined;
  return { id, time: body.toString("utf8", 2, timeEnd), text, cut };
}
