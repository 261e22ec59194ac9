// Finding the restic binary and checking that it is new enough for what pi-guard asks of it.
import { execa } from "execa";
import { RepoError } from "../repo/errors.js";

/**
 * The oldest restic pi-guard drives: 0.14.0, the version Debian bookworm ships and the one the
 * tests run. The JSON shapes parsed here (`backup --json` summary with a short snapshot id,
 * `ls --json` nodes with full paths, `find --json` groups) are checked against it; older
 * versions are refused rather than guessed at.
 */
export const MIN_RESTIC_VERSION = "0.14.0";

export interface ResticBinary {
  path: string;
  version: string;
}

const INSTALL_HINT = "install it (Debian/Ubuntu: sudo apt-get install restic; elsewhere: https://restic.net) or set PI_GUARD_RESTIC to its path";

/** "restic 0.14.0 compiled with go1.19.8 on linux/amd64" → "0.14.0"; undefined when it is not that. */
export function parseResticVersion(text: string): string | undefined {
  return /^restic (\d{1,4}\.\d{1,4}\.\d{1,4})(?:[-+ ]|$)/m.exec(text)?.[1];
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pa[i] - pb[i];
  return 0;
}

const found = new Map<string, Promise<ResticBinary>>();

/** The restic to run: PI_GUARD_RESTIC, else `restic` on PATH; checked once per process. */
export function findRestic(env: NodeJS.ProcessEnv = process.env): Promise<ResticBinary> {
  const bin = env.PI_GUARD_RESTIC || "restic";
  const key = `${bin}\0${env.PATH ?? ""}`;
  let p = found.get(key);
  if (!p) {
    p = probe(bin, env);
    found.set(key, p);
  }
  return p;
}

async function probe(bin: string, env: NodeJS.ProcessEnv): Promise<ResticBinary> {
  let stdout: string;
  try {
    // Only what finding and starting it needs: none of restic's repository or password variables.
    const r = await execa(bin, ["version"], { env: { PATH: env.PATH, HOME: env.HOME }, extendEnv: false, reject: false, timeout: 30_000, stdin: "ignore", maxBuffer: 64 * 1024 });
    if (r.failed && (r.code === "ENOENT" || (r as { errno?: number }).errno === -2)) throw notInstalled(bin);
    if (r.failed && r.code === "EACCES") throw new RepoError(`restic at ${bin} cannot be run (permission denied); ${INSTALL_HINT}`, "usage");
    if (r.exitCode !== 0) throw new RepoError(`\`${bin} version\` failed (exit ${r.exitCode ?? r.signal}): is ${bin} really restic? ${INSTALL_HINT}`, "usage");
    stdout = String(r.stdout);
  } catch (err) {
    if (err instanceof RepoError) throw err;
    throw notInstalled(bin);
  }
  const version = parseResticVersion(stdout);
  if (!version) throw new RepoError(`\`${bin} version\` printed ${JSON.stringify(stdout.slice(0, 80))}, not a restic version; ${INSTALL_HINT}`, "usage");
  if (compareVersions(version, MIN_RESTIC_VERSION) < 0) {
    throw new RepoError(`restic ${version} is too old: the restic engine needs restic ${MIN_RESTIC_VERSION} or newer (restic self-update, or ${INSTALL_HINT})`, "usage");
  }
  return { path: bin, version };
}

function notInstalled(bin: string): RepoError {
  return new RepoError(bin === "restic" ? `restic is not installed (not found on PATH); ${INSTALL_HINT}` : `restic not found at ${bin} (PI_GUARD_RESTIC); ${INSTALL_HINT}`, "usage");
}
