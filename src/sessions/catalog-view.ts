// The finished catalog as one cache file, <dataDir>/catalog/view-<repo id>.json, laid out so that
// a command can read one session's record without parsing the others:
//   line 1: {"version", "fingerprint", "ids": [...], "offsets": [...], "unreadable": [...]}
//   then one line per session, in the catalog's order: {"record": {...}, "source": {...} | null}
//   last line: {"snapshots": [...]}
// `offsets` are the byte offsets of those lines in the file (after line 1). A warm search
// decodes and parses line 1 and the records of the sessions it shows; `list` parses them all.
// The file is read as bytes: decoding all of it (2.5 MB for 1,000 sessions) to slice a few
// records out was most of a warm search's catalog read.

import { readFileSync } from "node:fs";
import { CATALOG_CACHE_VERSION, writeCacheText } from "./cache.js";
import type { SessionRecord } from "./catalog.js";
import type { SnapshotMeta } from "./snapshot-files.js";
import type { AgentSource } from "./agent-sessions.js";

/** A stored source that is another agent's (agent-sessions.ts); here so that a warm catalog does not load that module. */
export const isAgentSource = (s: unknown): s is AgentSource => typeof (s as AgentSource | null)?.agent === "string" && typeof (s as AgentSource).meta === "object";

/** Where a snapshot-only session's newest bytes are. */
export interface SnapshotSource {
  snapshotId: string;
  root: string;
  path: string;
  originalPath: string;
  contentKey: string;
}

export interface CatalogData {
  fingerprint: string;
  /** Most recently active first. */
  sessions: SessionRecord[];
  /** Sessions that are not live (live ones are read from `SessionRecord.live`). */
  sources: Record<string, SnapshotSource | AgentSource>;
  snapshots: SnapshotMeta[];
  /** Snapshot objects that could not be read: the sessions only they hold are missing. */
  unreadable: { id: string; error: string }[];
}

/** Marks a view whose offsets count bytes; one without it (string offsets) is rebuilt. */
const BYTE_OFFSETS = "bytes";

interface Header {
  version: number;
  offsetsIn: typeof BYTE_OFFSETS;
  fingerprint: string;
  ids: string[];
  offsets: number[];
  unreadable: { id: string; error: string }[];
}

interface Line {
  record: SessionRecord;
  source: SnapshotSource | AgentSource | null;
}

export class CatalogView {
  private readonly position: Map<string, number>;
  private readonly lines: (Line | undefined)[];
  private all?: SessionRecord[];
  private metas?: SnapshotMeta[];

  private constructor(
    readonly fingerprint: string,
    readonly ids: readonly string[],
    private readonly bytes: Buffer,
    private readonly offsets: readonly number[],
    readonly unreadable: readonly { id: string; error: string }[],
  ) {
    this.position = new Map(ids.map((id, i) => [id, i]));
    this.lines = new Array(ids.length);
  }

  static fromData(data: CatalogData): CatalogView {
    const view = new CatalogView(data.fingerprint, data.sessions.map((s) => s.id), Buffer.alloc(0), [], data.unreadable);
    data.sessions.forEach((record, i) => (view.lines[i] = { record, source: data.sources[record.id] ?? null }));
    view.all = data.sessions;
    view.metas = data.snapshots;
    return view;
  }

  /** The cached view, or undefined when the file is missing, damaged or of another version. */
  static read(file: string): CatalogView | undefined {
    try {
      const bytes = readFileSync(file);
      const end = bytes.indexOf(0x0a);
      const header = JSON.parse(bytes.toString("utf8", 0, end)) as Header;
      // A view written before it recorded unreadable snapshots, or with string offsets, is rebuilt (from the other caches).
      if (header?.version !== CATALOG_CACHE_VERSION || header.offsetsIn !== BYTE_OFFSETS || header.offsets.length !== header.ids.length + 2 || !Array.isArray(header.unreadable)) return undefined;
      return new CatalogView(header.fingerprint, header.ids, bytes.subarray(end + 1), header.offsets, header.unreadable);
    } catch {
      return undefined;
    }
  }

  write(file: string): Promise<void> {
    const lines = this.ids.map((_, i) => JSON.stringify(this.line(i)));
    lines.push(JSON.stringify({ snapshots: this.snapshots }));
    const offsets = [0];
    for (const l of lines) offsets.push(offsets[offsets.length - 1] + Buffer.byteLength(l) + 1);
    const header: Header = { version: CATALOG_CACHE_VERSION, offsetsIn: BYTE_OFFSETS, fingerprint: this.fingerprint, ids: [...this.ids], offsets, unreadable: [...this.unreadable] };
    return writeCacheText(file, `${JSON.stringify(header)}\n${lines.join("\n")}\n`);
  }

  private slice(i: number): string {
    return this.bytes.toString("utf8", this.offsets[i], this.offsets[i + 1] - 1);
  }

  private line(i: number): Line {
    return (this.lines[i] ??= JSON.parse(this.slice(i)) as Line);
  }

  has(id: string): boolean {
    return this.position.has(id);
  }

  record(id: string): SessionRecord | undefined {
    const i = this.position.get(id);
    return i === undefined ? undefined : this.line(i).record;
  }

  source(id: string): SnapshotSource | AgentSource | null | undefined {
    const i = this.position.get(id);
    return i === undefined ? undefined : this.line(i).source;
  }

  get sessions(): SessionRecord[] {
    return (this.all ??= this.ids.map((_, i) => this.line(i).record));
  }

  get snapshots(): SnapshotMeta[] {
    return (this.metas ??= (JSON.parse(this.slice(this.ids.length)) as { snapshots: SnapshotMeta[] }).snapshots);
  }
}
