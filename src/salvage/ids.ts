// Entry ids for rebuilt entries. pi uses the first 8 hex digits of a UUID; we derive them from
// content instead, so salvaging the same input twice gives the same file (and merges line up).

import { createHash } from "node:crypto";

export class EntryIds {
  private readonly taken = new Set<string>();

  constructor(existing: Iterable<string> = []) {
    for (const id of existing) this.taken.add(id);
  }

  reserve(id: string): void {
    this.taken.add(id);
  }

  /** A fresh 8-hex id derived from `seed`, re-hashed on collision. */
  make(seed: string): string {
    let input = seed;
    for (;;) {
      const id = createHash("sha256").update(input).digest("hex").slice(0, 8);
      if (!this.taken.has(id)) {
        this.taken.add(id);
        return id;
      }
      input += "'";
    }
  }
}
