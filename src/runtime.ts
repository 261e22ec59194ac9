/**
 * How pi-guard's node runs. The shebang of bin/pi-guard.js sets the environment below (a test keeps
 * the two equal); a service that starts node itself (systemd, launchd) passes it too. Why each: see
 * the comment in bin/pi-guard.js and bench/README.md.
 */
import { setFlagsFromString } from "node:v8";

export const RUNTIME_ENV: Readonly<Record<string, string>> = { MALLOC_MMAP_THRESHOLD_: "262144", UV_THREADPOOL_SIZE: "2" };

/**
 * Keep V8's young generation at its initial 1 MiB semi-space for the rest of this process.
 * pi-guard's garbage is mostly off-heap buffers: a small young generation collects their handles
 * as often as it needs to, where V8's default (growing up to 16 MiB per semi-space) kept 40 MB more
 * resident during a restore and 15-19 MB more in an append-only snapshot, for no speed. It costs a
 * short command 10-15 ms of CPU (more scavenges while its code compiles), so the CLI calls this
 * only on paths that do the work: every command but a plain snapshot handed to a running watcher.
 * `--max-semi-space-size` is read only when the heap is set up; the growth factor is read at each
 * growth, so setting it now holds from here on (bench/README.md, stop 31).
 */
export function smallYoungGeneration(): void {
  setFlagsFromString("--semi-space-growth-factor=1");
}
