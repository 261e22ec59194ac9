import os from "node:os";
import { RepoError } from "./repo/errors.js";

/**
 * The host name a snapshot is filed under: PI_GUARD_HOST when set (a machine renamed, a
 * container with a random name, or tests that play several hosts), else the OS's. Locks and temp
 * files keep the OS's name: their same-host pid checks must only ever look at this very machine.
 */
export function hostName(env: NodeJS.ProcessEnv = process.env): string {
  const set = env.PI_GUARD_HOST;
  if (set === undefined || set === "") return os.hostname();
  // eslint-disable-next-line no-control-regex
  if (set.length > 255 || /[\u0000-\u001f\u007f]/.test(set) || set.trim() !== set) {
    throw new RepoError(`PI_GUARD_HOST must be one line of at most 255 characters without surrounding spaces`, "usage");
  }
  return set;
}
