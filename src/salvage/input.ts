// Reading a user's input file: one place that turns "missing", "a directory" and friends into
// one-line errors, and never opens anything for writing.

import { promises as fs, type Stats } from "node:fs";
import { MAX_NESTING } from "../model/nesting.js";
import { RepoError } from "../repo/errors.js";

export async function statInput(file: string): Promise<Stats> {
  let stat: Stats;
  try {
    stat = await fs.stat(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new RepoError(`${file}: no such file`, "not-found");
    if (code === "EACCES") throw new RepoError(`${file}: permission denied`, "io");
    throw new RepoError(`${file}: ${(err as Error).message}`, "io");
  }
  if (!stat.isFile()) throw new RepoError(`${file} is not a regular file`, "usage");
  return stat;
}

/** The whole file; for inputs that must be held in memory anyway (a session being repaired). */
export async function readInput(file: string): Promise<{ bytes: Buffer; stat: Stats }> {
  const stat = await statInput(file);
  if (stat.size === 0) throw new RepoError(`${file} is empty`, "input");
  const bytes = await fs.readFile(file);
  return { bytes, stat };
}

/** The gap a source reports for JSON it had to bound (pi/nesting.ts): nothing is lost, but some structure is text. */
export function deepGap(where: string): string {
  return `${where}: JSON nested deeper than ${MAX_NESTING} levels; the deeper parts were kept as raw JSON text`;
}
