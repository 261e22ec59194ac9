// Where each of a listing's names is in it. A Map or Set of 100,000 snapshot names costs 11 MB of
// heap on top of the names themselves; a cold listing at 100,000 held two or three at its peak.
// This is an open-addressing table of positions (1-2 MB), its hash seeded per process so that
// names chosen by whoever wrote the repository cannot all land in one chain.

import { randomBytes } from "node:crypto";

const SEED = randomBytes(4).readUInt32LE(0);

function hash(s: string): number {
  let h = SEED ^ 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export class NameSlots {
  private readonly table: Int32Array;
  private readonly mask: number;
  /** How many distinct names. */
  readonly size: number;

  constructor(private readonly names: readonly string[]) {
    let capacity = 1024;
    while (capacity < names.length * 2) capacity *= 2;
    this.table = new Int32Array(capacity);
    this.mask = capacity - 1;
    let distinct = 0;
    names.forEach((name, i) => {
      for (let h = hash(name) & this.mask; ; h = (h + 1) & this.mask) {
        const at = this.table[h];
        if (at === 0) distinct++;
        // A name listed twice: the later position counts, as in a Map built from the list.
        if (at === 0 || names[at - 1] === name) {
          this.table[h] = i + 1;
          return;
        }
      }
    });
    this.size = distinct;
  }

  /** The position of `name` in the names, or undefined. */
  get(name: string): number | undefined {
    for (let h = hash(name) & this.mask; ; h = (h + 1) & this.mask) {
      const at = this.table[h];
      if (at === 0) return undefined;
      if (this.names[at - 1] === name) return at - 1;
    }
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }
}
