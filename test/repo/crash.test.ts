// Invariant 3: every write to a repository is crash-safe. A snapshot of a ~100 MiB agent dir is
// killed with SIGKILL at random moments, again and again. After every kill: `check` passes (orphan
// packs are only warnings), the next snapshot succeeds at once (the dead process's lock is stale),
// and earlier snapshots restore byte-identical. At the end every byte is read back.

import { rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateAgentDir } from "../../bench/generate.js";
import { Prng } from "../../bench/prng.js";
import { loadTextPool, type TextPool } from "../../bench/textPool.js";
import { cli, collect, initRepo, PROJECT_ROOT, restoreJson, snapshot, spawnCli } from "../helpers/cli.js";
import { type FileState, fingerprint, makeSandbox, type Sandbox, treeState } from "../helpers/tmp.js";

const MIB = 1024 * 1024;
/** Kills that must land while the snapshot runs; a kill after it finished does not count. */
const KILLS = 15;
const MAX_ROUNDS = 24;
const TREE_BYTES = 100 * MIB;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("kill -9 during snapshot", () => {
  let sb: Sandbox;
  let pool: TextPool;

  beforeAll(async () => {
    sb = makeSandbox("crash");
    pool = loadTextPool(path.join(PROJECT_ROOT, "node_modules"), 16 * MIB);
    await initRepo(sb);
  });

  afterAll(() => sb?.cleanup());

  it(`survives ${KILLS} kills at random points`, { timeout: 900_000 }, async () => {
    const prng = new Prng("crash-test");
    const snapshots: { id: string; state: Map<string, FileState> }[] = [];
    const log: string[] = [];
    let fullMs = 1_500; // the duration of a full snapshot, measured again every round
    let killedMidway = 0;

    for (let i = 0; killedMidway < KILLS && i < MAX_ROUNDS; i++) {
      // A new tree every round, so the snapshot we kill has ~100 MiB of new data to write.
      rmSync(sb.agentDir, { recursive: true, force: true });
      generateAgentDir({ out: sb.agentDir, sizeBytes: TREE_BYTES, seed: `crash-${i}`, pool });
      const state = treeState(sb.agentDir);

      const delay = 20 + Math.floor(prng.next() * Math.max(1, fullMs - 20));
      // Every round replaces the whole tree on purpose: the suspect-loss guard is told so.
      const child = spawnCli(sb, ["snapshot", "--quiet", "--accept-loss"]);
      const done = collect(child);
      await sleep(delay);
      child.kill("SIGKILL");
      const killed = await done;
      const wasKilled = killed.signal === "SIGKILL";
      if (wasKilled) killedMidway++;
      else expect(killed.code, killed.stderr).toBe(0);

      const check = await cli(sb, ["check", "--json"]);
      expect(check.code, `round ${i} (killed after ${delay} ms): check failed\n${check.stdout}\n${check.stderr}`).toBe(0);
      const report = check.json();
      expect(report.problems.filter((p: { severity: string }) => p.severity === "error")).toEqual([]);

      // The dead process's lock must not make us wait: --lock-wait 0.
      const started = Date.now();
      const next = await snapshot(sb, ["--lock-wait", "0", "--accept-loss"]);
      const wall = Date.now() - started;
      // After a mid-run kill nothing of this tree is indexed yet, so this run did the full work.
      if (wasKilled) fullMs = wall;
      snapshots.push({ id: next.snapshotId, state });
      log.push(`${i}: kill at ${delay} ms ${wasKilled ? "(mid-run)" : "(had finished)"}, warnings ${report.problems.length}, next snapshot ${wall} ms`);

      // The snapshot before this round was taken before the kill; it must still restore exactly.
      if (snapshots.length >= 2) {
        const earlier = snapshots[snapshots.length - 2];
        const target = path.join(sb.root, "restore-check");
        rmSync(target, { recursive: true, force: true });
        const r = await restoreJson(sb, [earlier.id, "--target", target]);
        expect(r.failed).toEqual([]);
        expect(fingerprint(treeState(target)), `round ${i}: snapshot ${earlier.id.slice(0, 8)} changed`).toEqual(fingerprint(earlier.state));
        rmSync(target, { recursive: true, force: true });
      }
    }
    console.log(`crash test: ${snapshots.length} rounds, ${killedMidway} killed mid-run, full snapshot ~${fullMs} ms\n${log.join("\n")}`);
    expect(killedMidway).toBeGreaterThanOrEqual(KILLS);

    // Every blob of every snapshot reads back and matches its id.
    const full = await cli(sb, ["check", "--read-data", "--json"]);
    expect(full.code, full.stdout + full.stderr).toBe(0);
    // A run killed after its snapshot object was written (or that finished first) adds one more.
    expect(full.json().snapshots).toBeGreaterThanOrEqual(snapshots.length);
    const listed = (await cli(sb, ["snapshots", "--json"])).json<{ id: string }[]>().map((s) => s.id);
    for (const s of snapshots) expect(listed).toContain(s.id);
    for (const s of [snapshots[0], snapshots[snapshots.length - 1]]) {
      const target = path.join(sb.root, `final-${s.id.slice(0, 8)}`);
      await restoreJson(sb, [s.id, "--target", target]);
      expect(fingerprint(treeState(target))).toEqual(fingerprint(s.state));
      rmSync(target, { recursive: true, force: true });
    }
  });
});
