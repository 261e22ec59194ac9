import type { Target } from "../targets/target.js";
import type { CheckProblem } from "./check.js";
import { readKeyEntries } from "./keys.js";

/**
 * `check` reads every key object, not only the one that opened the repository. A key the current
 * credential cannot open is fine (another password); one that is not a key object at all (bad
 * JSON, bad shape, scrypt parameters out of bounds) is damage, named by its id.
 */
export async function checkKeyObjects(target: Target): Promise<CheckProblem[]> {
  const problems: CheckProblem[] = [];
  const entries = await readKeyEntries(target);
  for (const e of entries) {
    if (e.problem) problems.push({ severity: "error", message: `key ${e.id.slice(0, 12)} is damaged (${e.problem}); it opens nothing and can be removed` });
  }
  if (!entries.some((e) => e.obj)) problems.push({ severity: "error", message: "no usable key object is left in keys/" });
  return problems;
}
