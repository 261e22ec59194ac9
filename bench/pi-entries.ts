// Real-looking pi entries to append: the entries of a real session (the shared fixtures), re-dated
// and re-linked as version-3 entries (8-hex ids, each hanging off the previous leaf), so a session
// grown with them is one valid conversation with the sizes pi really writes (median ~600 bytes).

import { readFileSync } from "node:fs";
import { Prng } from "./prng.js";

/** The entries of a JSONL session file, header and malformed lines left out. */
export function loadFixtureEntries(file: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line) continue;
    try {
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry && typeof entry === "object" && entry.type !== "session") out.push(entry);
    } catch {
      // a torn or garbage line is no sample
    }
  }
  if (out.length === 0) throw new Error(`${file}: no entries`);
  return out;
}

/** Hands out entry lines ("...}\n") that continue a session from `leafId`, in a seeded order. */
export class EntryStream {
  private readonly prng: Prng;
  private leaf: string | null;
  private clockMs: number;

  constructor(
    private readonly samples: Record<string, unknown>[],
    opts: { seed: string; leafId?: string | null; clockMs?: number },
  ) {
    this.prng = new Prng(opts.seed);
    this.leaf = opts.leafId ?? null;
    this.clockMs = opts.clockMs ?? Date.UTC(2026, 10, 30, 12);
  }

  next(): string {
    const sample = this.samples[this.prng.int(0, this.samples.length - 1)];
    const id = this.prng.nextU32().toString(16).padStart(8, "0");
    this.clockMs += this.prng.int(200, 20_000);
    const line = JSON.stringify({ ...sample, id, parentId: this.leaf, timestamp: new Date(this.clockMs).toISOString() }) + "\n";
    this.leaf = id;
    return line;
  }
}
