// Issue 17, item 5, in the watcher: a watcher (re)started after the accident has the config the
// accident left, without the sessions symlink, so fewer roots than any snapshot. Its snapshots go
// through the same guard (createSnapshot's tagsAtCommit): judged against the last whole snapshot
// of this agent dir, tagged suspect-loss, the state file says so and `status` fails.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accident, piAgentDirLinked } from "../helpers/accident.js";
import { cli, initRepo, ok, type RestoreJson, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, sessionFiles } from "../helpers/tmp.js";
import { readLog, readState, startWatch, waitFor, watchEnv } from "../watch/watch-helpers.js";

describe("a watcher started after the accident removed the sessions link", () => {
  let sb: Sandbox;
  let whole: SnapshotJson;

  beforeAll(async () => {
    sb = makeSandbox("roots-watch");
    const big = await piAgentDirLinked(sb);
    expect(sessionFiles(big)).toHaveLength(4);
    await initRepo(sb);
    whole = await snapshot(sb);
    accident(sb);
  }, 60_000);
  afterAll(() => sb?.cleanup());

  it("tags its first snapshot suspect-loss, marks the state, warns, and status fails", async () => {
    const w = startWatch(sb, ["--quiet"]);
    try {
      const made = await waitFor("the watcher's first snapshot", () => readLog(sb).find((e) => e.event === "snapshot"), 60_000);
      expect(made.tags).toContain("suspect-loss");
      const logged = await waitFor("the suspect-loss event", () => readLog(sb).find((e) => e.event === "suspect-loss"));
      expect(logged).toMatchObject({ reason: "sessions", filesBefore: 7, lost: 5 });
      const state = await waitFor("suspectLoss in the state file", () => readState(sb)?.suspectLoss);
      expect(state.snapshot).toBe(made.id);
      await waitFor("the WARNING on stderr", () => /WARNING: suspected loss/.test(w.stderr()));
      expect((await cli(watchEnv(sb), ["status"])).code).toBe(1);
      const latest = (await ok(watchEnv(sb), ["restore", "latest", "--dry-run", "--target", sb.dir("pick"), "--json"])).json<RestoreJson>();
      expect(latest.snapshotId).toBe(whole.snapshotId);
    } finally {
      w.child.kill("SIGTERM");
    }
    expect(await w.exited).toBe(0);
  });
});
