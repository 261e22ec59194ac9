#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=262144 UV_THREADPOOL_SIZE=2 node
// The fixed mmap threshold stops glibc from raising it after pi-guard frees its first big buffers;
// otherwise every thread keeps tens of MB of freed 1 MiB buffers in its heap (peak RSS +60 MB).
// Two threads in libuv's pool do the file writes of a restore as fast as four, with less contention
// for the cores that decode (bench/README.md). The young generation's size is set by the CLI once
// it knows the command (smallYoungGeneration in src/runtime.ts), not here: a flag on this line
// would cost the short snapshot hand-off too.
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
