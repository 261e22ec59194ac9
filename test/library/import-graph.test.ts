// The import graph as evidence (test/library/import-graph.ts reads it from the sources): the CLI
// only parses and prints. What a command does, refuses or decides is a library call (src/index.ts,
// src/library/, src/engine.ts, src/engine/); besides those a CLI file loads only presentation
// modules (formats, layouts, text renderings). Both lists below may only shrink: a new import of
// an internal fails this test until it is named, and a policy module is never named here.
import { describe, expect, it } from "vitest";
import { cliImports, exceptions, isPresentation } from "./import-graph.js";

/** Policy: the snapshot, the loss guard, restoring, mirror shipping, and each engine's own code. */
const POLICY = [/^src\/snapshot\//, /^src\/restore\/restorer\.ts$/, /^src\/repo\/ship\.ts$/, /^src\/restic\/(backup|restore|snapshots|status)\.ts$/, /^src\/engine\/(native|restic)\.ts$/, /^src\/repo\/lock\.ts$/];

/** Per CLI file, the internals outside the library that are presentation modules (or not). */
function split(presentation: boolean): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [file, list] of Object.entries(exceptions())) {
    const kept = list.filter((to) => isPresentation(to) === presentation);
    if (kept.length) out[file] = kept;
  }
  return out;
}

describe("the CLI's imports", () => {
  it("no CLI file loads snapshot, loss-guard, restore, mirror-shipping, locking or engine-implementation code", () => {
    const policy = cliImports().filter((i) => !i.typeOnly && POLICY.some((r) => r.test(i.to)));
    expect(policy.map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });

  it("a CLI file loads no internal module but the library API and presentation modules", () => {
    expect(split(false)).toEqual({});
  });

  it("the presentation modules the CLI loads are these, and no more", () => {
    expect(split(true)).toEqual({
      "src/cli/prune-commands.ts": ["src/present/retention.ts"],
      "src/cli/repo-commands.ts": ["src/present/time.ts"],
      "src/cli/restore-commands.ts": ["src/present/layout.ts", "src/present/time.ts"],
      "src/cli/salvage-commands.ts": ["src/present/salvage.ts"],
      "src/cli/service-commands.ts": ["src/present/time.ts"],
      "src/cli/sessions-commands.ts": ["src/sessions/describe.ts", "src/sessions/list-layout.ts", "src/sessions/render-terminal.ts", "src/sessions/stats-text.ts"],
      "src/cli/snapshot-rows-output.ts": ["src/present/time.ts"],
      "src/cli/warnings.ts": ["src/targets/retry-report.ts"],
    });
  });
});
