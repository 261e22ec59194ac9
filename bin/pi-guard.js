#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=262144 node
// The fixed mmap threshold stops glibc from raising it after pi-guard frees its first big buffers;
// otherwise every thread keeps tens of MB of freed 1 MiB buffers in its heap (peak RSS +60 MB).
// dist/cli is the bundled CLI (scripts/bundle.mjs); dist/src is what tsc compiled it from.
import { main } from "../dist/cli/main.js";

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
