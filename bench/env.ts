/**
 * The environment the benchmarks give the tools they run: the caller's, without any variable that
 * could point a tool at a user's real repository or agent dir, and without NODE_EXTRA_CA_CERTS.
 * Node reads the certificate file that variable names at every start-up; this VM sets it to the
 * whole system bundle for all shells, which costs each node process about 38 ms of CPU (a bare
 * `node -e 0`: 59.7 ms with it, 21.3 ms without, bench/README.md stop 31) and a Go restic nothing.
 * No benchmark talks TLS (the S3 server is plain HTTP on 127.0.0.1), so the variable only skewed
 * every pi-guard step against restic's.
 */
const ALWAYS = /^(RESTIC_|PI_GUARD_|PI_CODING_AGENT|XDG_)|^NODE_EXTRA_CA_CERTS$/;

/** `alsoDrop`: more variables to leave out (e.g. AWS_ when the bench sets its own). */
export function cleanEnv(extra: Record<string, string> = {}, alsoDrop?: RegExp): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !ALWAYS.test(k) && !alsoDrop?.test(k)) env[k] = v;
  return { ...env, NO_COLOR: "1", ...extra };
}
