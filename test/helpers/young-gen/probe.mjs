// Preloaded (`node --import`) into a CLI process by test/cli/young-generation.test.ts: at exit it
// makes garbage of which a third survives a while (what makes V8 grow its young generation), then
// writes the young generation's size to $YOUNG_GEN_PROBE_OUT.
import { writeFileSync } from "node:fs";
import { getHeapSpaceStatistics } from "node:v8";

process.on("exit", () => {
  const keep = [];
  for (let i = 0; i < 1e6; i++) {
    const o = { a: i, b: `x${i}` };
    if (i % 3 === 0) keep.push(o);
    if (keep.length > 1e5) keep.length = 0;
  }
  const space = getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
  writeFileSync(process.env.YOUNG_GEN_PROBE_OUT, String(space?.space_size ?? -1));
});
