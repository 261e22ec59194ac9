#!/usr/bin/env node
import { main } from "../dist/src/cli/main.js";

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
