// Parsing a segment of a session for the search index: the entries it holds, their text, and
// where each one's line lies in the file. Runs on the main thread or in a parse worker.

import { loadSessionBytes } from "./read.js";
import { ENTRY_SLOTS } from "./search-index.js";
import { indexedEntry, type IndexedEntry } from "./search-text.js";

/** An entry as indexed: what is shown of it, its text, and where its line is in the file. */
export interface StoredEntry extends IndexedEntry {
  lineAt: number;
  lineLen: number;
}

/** The text a segment is parsed from: the whole file, or its first line and the lines from `from`. */
function segmentText(bytes: Uint8Array, from: number): Uint8Array {
  return from ? Buffer.concat([bytes.subarray(0, bytes.indexOf(0x0a) + 1), bytes.subarray(from)]) : bytes;
}

/**
 * Parse a segment and keep the entries the index holds, in rowid order. With `lines`, each entry
 * also gets the byte range of its line in the file, when lines and entries correspond one to one
 * (a version 3 file: nothing migrated); otherwise -1.
 */
export function segmentEntries(bytes: Uint8Array, from: number, id: string): { entries: StoredEntry[]; warnings: string[] } {
  const text = segmentText(bytes, from);
  const loaded = loadSessionBytes(text, id);
  const direct = loaded.fromVersion === 3 && loaded.entryLines.length === loaded.entries.length;
  // Line starts in `text`, found once; a line in `text` past the first lies at shift + its start in the file.
  const starts: number[] = [0];
  if (direct) for (let i = text.indexOf(0x0a); i !== -1 && i + 1 < text.length; i = text.indexOf(0x0a, i + 1)) starts.push(i + 1);
  const shift = from ? from - (bytes.indexOf(0x0a) + 1) : 0;
  const entries: StoredEntry[] = [];
  loaded.entries.forEach((e, i) => {
    const ix = indexedEntry(e);
    if (!ix) return;
    let lineAt = -1;
    let lineLen = -1;
    const line = loaded.entryLines[i];
    if (direct && line >= 2 && line <= starts.length) {
      const start = starts[line - 1];
      const end = text.indexOf(0x0a, start);
      lineAt = start + shift;
      lineLen = (end === -1 ? text.length : end) - start;
    }
    entries.push({ ...ix, lineAt, lineLen });
  });
  return { entries: entries.slice(0, ENTRY_SLOTS), warnings: loaded.warnings };
}

