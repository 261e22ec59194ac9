// The real pi sessions the benchmarks append from: test/fixtures/ of this checkout (a fresh clone
// has them; nothing outside the repository is read). Missing ones are an error, not a skip.
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** This file runs as dist/bench/fixtures.js. */
const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export const FIXTURES_DIR = join(PROJECT_ROOT, "test", "fixtures");

export function fixturesDir(): string {
  if (!existsSync(join(FIXTURES_DIR, "pi-mono-v1", "large-session.jsonl"))) throw new Error(`the fixtures are missing from ${FIXTURES_DIR}: restore test/fixtures/ from git`);
  return FIXTURES_DIR;
}
