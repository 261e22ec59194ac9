// Sessions read from logs, HTML and terminal captures wait here until every hermes session was
// streamed past them (a hermes session merges with the pool sessions of its id). They wait on
// disk, one JSON line per session in a private temp file, so a multi-GB log with hundreds of
// sessions costs memory for one session at a time, not for the log. Memory keeps only ids and,
// for sessions whose id was invented, their message keys (to find their group).

import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { entryKey } from "./message-key.js";
import type { SalvagedSession } from "./types.js";

export interface Spilled {
  id: string;
  idKnown: boolean;
  /** Message keys, only for sessions with an invented id. */
  keys?: Set<string>;
  offset: number;
  length: number;
}

export function messageKeys(s: SalvagedSession): Set<string> {
  return new Set(s.entries.filter((e) => e.type === "message").map(entryKey));
}

export class SessionSpill {
  readonly items: Spilled[] = [];
  private dir: string | undefined;
  private fd: number | undefined;
  private size = 0;

  add(s: SalvagedSession): void {
    if (this.fd === undefined) {
      this.dir = mkdtempSync(join(tmpdir(), "pi-guard-salvage-"));
      this.fd = openSync(join(this.dir, "sessions.jsonl"), "w+", 0o600);
    }
    const bytes = Buffer.from(JSON.stringify(s), "utf8");
    writeSync(this.fd, bytes, 0, bytes.length, this.size);
    this.items.push({ id: s.header.id, idKnown: s.idKnown, ...(s.idKnown ? {} : { keys: messageKeys(s) }), offset: this.size, length: bytes.length });
    this.size += bytes.length;
  }

  load(item: Spilled): SalvagedSession {
    const buf = Buffer.alloc(item.length);
    let got = 0;
    while (got < item.length) got += readSync(this.fd!, buf, got, item.length - got, item.offset + got);
    return JSON.parse(buf.toString("utf8")) as SalvagedSession;
  }

  /** Take items out of the pool (each session is emitted once). */
  take(items: Spilled[]): SalvagedSession[] {
    const out = items.map((i) => this.load(i));
    for (const i of items) this.items.splice(this.items.indexOf(i), 1);
    return out;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.fd = undefined;
    this.dir = undefined;
  }
}
