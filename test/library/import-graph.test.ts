// The import graph as evidence (test/library/import-graph.ts reads it from the sources): no CLI
// file loads the code that takes a snapshot, judges a loss, restores, ships to mirrors or picks
// an engine's implementation; those go through the library (src/engine/, src/library/,
// src/engine.ts). What the CLI still loads of other internals is listed here, file by file, so
// that the list only shrinks: a new import of an internal fails this test until it is named.
import { describe, expect, it } from "vitest";
import { cliImports, exceptions } from "./import-graph.js";

/** Policy: the snapshot, the loss guard, restoring, mirror shipping, and each engine's own code. */
const POLICY = [/^src\/snapshot\//, /^src\/restore\/restorer\.ts$/, /^src\/repo\/ship\.ts$/, /^src\/restic\/(backup|restore|snapshots|status)\.ts$/, /^src\/engine\/(native|restic)\.ts$/, /^src\/repo\/lock\.ts$/];

describe("the CLI's imports", () => {
  it("no CLI file loads snapshot, loss-guard, restore, mirror-shipping, locking or engine-implementation code", () => {
    const policy = cliImports().filter((i) => !i.typeOnly && POLICY.some((r) => r.test(i.to)) && !(i.from === "src/cli/copy-commands.ts" && i.to === "src/repo/ship.ts"));
    expect(policy.map((i) => `${i.from} → ${i.to}`)).toEqual([
      // verify compares the agent dir with a snapshot: the verify module is its library call.
      "src/cli/verify-command.ts → src/snapshot/verify.ts",
    ]);
  });

  it("the remaining run-time imports of internals are these, and no more", () => {
    expect(exceptions()).toEqual({
      "src/cli/agents-commands.ts": ["src/agents/detect.ts"],
      "src/cli/copy-commands.ts": ["src/repo/ship.ts", "src/targets/location.ts"],
      "src/cli/main.ts": ["src/targets/retry-report.ts"],
      "src/cli/pi-commands.ts": ["src/pi-extension/install.ts"],
      "src/cli/prune-commands.ts": ["src/repo/prune.ts", "src/repo/retention.ts"],
      "src/cli/repair-from-command.ts": ["src/repo/repair-from.ts", "src/repo/replicate.ts", "src/targets/location.ts"],
      "src/cli/repair-index-command.ts": ["src/repo/repair-index.ts"],
      "src/cli/repo-commands.ts": ["src/agents/pi/paths.ts", "src/doctor.ts", "src/repo/check-run.ts", "src/repo/check.ts", "src/repo/keys.ts", "src/repo/replicate.ts", "src/repo/snapshot-damage.ts", "src/repo/snapshot-rows.ts", "src/restore/select.ts", "src/targets/open.ts"],
      "src/cli/restore-commands.ts": ["src/demo.ts", "src/restore/layout.ts", "src/restore/select.ts"],
      "src/cli/salvage-commands.ts": ["src/restore/select.ts", "src/salvage/journal.ts", "src/salvage/open-files.ts", "src/salvage/repair-file.ts", "src/salvage/report.ts", "src/salvage/salvage.ts"],
      "src/cli/service-commands.ts": ["src/restore/select.ts", "src/watch/alert.ts", "src/watch/health.ts", "src/watch/jobs.ts", "src/watch/schedule.ts", "src/watch/service.ts"],
      "src/cli/sessions-commands.ts": [
        "src/export/dashboard.ts",
        "src/export/index.ts",
        "src/sessions/describe.ts",
        "src/sessions/index.ts",
        "src/sessions/list-layout.ts",
        "src/sessions/merge-write.ts",
        "src/sessions/merge.ts",
        "src/sessions/query.ts",
        "src/sessions/short-id.ts",
        "src/sessions/stats-text.ts",
        "src/sessions/stats.ts",
        "src/sessions/tags.ts",
        "src/sessions/time-filter.ts",
        "src/sessions/time-zone.ts",
        "src/sessions/trash.ts",
      ],
      "src/cli/snapshot-rows-output.ts": ["src/restore/select.ts"],
      "src/cli/verify-command.ts": ["src/snapshot/verify.ts"],
      "src/cli/watch-commands.ts": ["src/targets/counting.ts", "src/watch/jobs.ts", "src/watch/log.ts", "src/watch/schedule.ts", "src/watch/state.ts", "src/watch/watcher-lock.ts", "src/watch/watcher.ts"],
    });
  });
});
