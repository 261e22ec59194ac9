import { afterEach, expect, it } from "vitest";
import { hideSdkNodeVersionWarning } from "../../src/cli/warnings.js";

const original = process.emitWarning;
afterEach(() => {
  process.emitWarning = original;
});

it("drops the AWS SDK's NodeVersionSupportWarning and lets every other warning through", async () => {
  const seen: string[] = [];
  const listener = (w: Error) => seen.push(w.message);
  process.on("warning", listener);
  try {
    hideSdkNodeVersionWarning();
    process.emitWarning("NodeVersionSupportWarning: The AWS SDK for JavaScript (v3)\nversions published after ...");
    process.emitWarning("something else is deprecated", "DeprecationWarning");
    process.emitWarning(new Error("a plain warning"));
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off("warning", listener);
  }
  expect(seen).toEqual(["something else is deprecated", "a plain warning"]);
});
