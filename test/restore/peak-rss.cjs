// Preloaded into a CLI child (NODE_OPTIONS=--require) by tests that bound its memory: at exit it
// writes the process's peak resident set (KiB, every thread counted) to $PI_GUARD_TEST_PEAK_RSS.
const { writeFileSync } = require("node:fs");
const { isMainThread } = require("node:worker_threads");

if (isMainThread && process.env.PI_GUARD_TEST_PEAK_RSS) {
  process.on("exit", () => writeFileSync(process.env.PI_GUARD_TEST_PEAK_RSS, String(process.resourceUsage().maxRSS)));
}
