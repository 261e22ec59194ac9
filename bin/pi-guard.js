#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=262144 UV_THREADPOOL_SIZE=2 node --max-semi-space-size=1
// The fixed mmap threshold stops glibc from raising it after pi-guard frees its first big buffers;
// otherwise every thread keeps tens of MB of freed 1 MiB buffers in its heap (peak RSS +60 MB).
// pi-guard's garbage is mostly off-heap buffers: a 1 MiB young generation collects their small
// handles as often as it needs to, where V8's default (up to 16 MiB per semi-space) kept 40 MB more
// resident during a restore, for no speed. Two threads in libuv's pool do the file writes of a
// restore as fast as four, with less contention for the cores that decode (bench/README.md).
// dist/cli is the bundled CLI (scripts/bundle.mjs); dist/src is what tsc compiled it from. start.js
// runs a plain `pi-guard snapshot` itself and hands everything else to main.js (src/cli/start.ts).
import { main } from "../dist/cli/start.js";

// `pi-guard snapshots | head` closes the pipe early; that is not an error worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw err;
  });
}

main(process.argv).then((code) => {
  process.exitCode = code;
});
