/**
 * How pi-guard's node runs. The shebang of bin/pi-guard.js sets the same (a test keeps the two
 * equal); a service that starts node itself (systemd, launchd) passes them too. Why each: see the
 * comment in bin/pi-guard.js and bench/README.md.
 */
export const RUNTIME_ENV: Readonly<Record<string, string>> = { MALLOC_MMAP_THRESHOLD_: "262144", UV_THREADPOOL_SIZE: "2" };
export const NODE_FLAGS: readonly string[] = ["--max-semi-space-size=1"];
