// `snapshots --json` prints 100,000 records a slice at a time; the bytes must be exactly those of
// printing the whole array at once.

import { describe, expect, it } from "vitest";
import { printJsonArray } from "../../src/cli/output.js";

async function captured(fn: () => Promise<void>): Promise<string> {
  const parts: string[] = [];
  const original = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    parts.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"));
    return true;
  }) as typeof process.stdout.write;
  try {
    await fn();
  } finally {
    process.stdout.write = original;
  }
  return parts.join("");
}

function slices<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

describe("printJsonArray", () => {
  const record = (i: number) => ({ id: `x${i}`, nested: { list: [i, "a\nb", { deep: null }], empty: [], obj: {} }, text: "ü \u2028 \"q\"" });
  for (const [count, size] of [[0, 3], [1, 3], [3, 3], [4, 3], [7, 2], [10, 1]] as const) {
    it(`${count} records in slices of ${size}: the same bytes as JSON.stringify of the whole array`, async () => {
      const items = Array.from({ length: count }, (_, i) => i);
      const want = JSON.stringify(items.map(record), null, 2) + "\n";
      expect(await captured(() => printJsonArray(slices(items, size), record))).toBe(want);
      // Empty slices in between change nothing.
      const withEmpty = slices(items, size).flatMap((s) => [[], s, []]);
      expect(await captured(() => printJsonArray(withEmpty, record))).toBe(want);
    });
  }
});
