// Copies of the shared real-pi fixtures in a temp dir: the originals are read-only and shared
// by every engineer's tests, so nothing may ever open them for writing.

import { createHash } from "node:crypto";
import { copyFileSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";

export { FIXTURES_DIR } from "../helpers/tmp.js";
import { FIXTURES_DIR, tempRoot } from "../helpers/tmp.js";

export function fixturePaths(): string[] {
  return ["pi-mono-v1", "pi-v3"].flatMap((dir) =>
    readdirSync(join(FIXTURES_DIR, dir))
      .filter((f) => f.endsWith(".jsonl"))
      .map((f) => join(FIXTURES_DIR, dir, f)),
  );
}

/** Copy every fixture into a fresh temp dir; returns the copies' paths by fixture name. */
export function copyFixtures(): Map<string, string> {
  const dir = tempRoot("fixtures");
  const out = new Map<string, string>();
  for (const src of fixturePaths()) {
    const dest = join(dir, basename(src));
    copyFileSync(src, dest);
    out.set(basename(src), dest);
  }
  return out;
}

export function sha256File(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}
