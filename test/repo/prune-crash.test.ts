// Prune is crash-safe: it is stopped with a real kill -9 at each phase of its write/delete order
// (PI_GUARD_TEST_PRUNE_PAUSE makes it say where it is and wait there). After each kill:
// `check --read-data` passes, every kept snapshot restores byte-identical, and the next prune
// finishes the job, leaving no pack, index file or temp file behind (a third has nothing to do).

import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { PrunePhase } from "../../src/repo/prune.js";
import { cli, initRepo, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { expectRestores, makeHistory, pausedPrune } from "./prune-fixture.js";

const PHASES: PrunePhase[] = ["packs-written", "index-written", "indexes-deleted", "packs-deleting"];

describe("kill -9 during prune", () => {
  let sb: Sandbox | undefined;
  afterEach(() => sb?.cleanup());

  for (const phase of PHASES) {
    it(`at ${phase}`, async () => {
      sb = makeSandbox(`prune-crash-${phase}`);
      await initRepo(sb);
      const rounds = await makeHistory(sb, 5);
      await ok(sb, ["forget", "--keep-last", "2"]);
      const kept = rounds.slice(-2);

      const { child, done } = await pausedPrune(sb, phase);
      child.kill("SIGKILL");
      expect((await done).signal).toBe("SIGKILL");

      const check = await cli(sb, ["check", "--read-data", "--json"]);
      expect(check.code, `${check.stdout}\n${check.stderr}`).toBe(0);
      const problems: { severity: string; message: string }[] = check.json().problems;
      expect(problems.filter((p) => p.severity === "error")).toEqual([]);
      // The kill landed mid-work: packs no index names (new ones, or old ones not yet deleted).
      expect(problems.map((p) => p.message).join("\n")).toMatch(/not in any index/);
      if (phase === "index-written") expect(readdirSync(path.join(sb.repo, "index")).length).toBeGreaterThan(1);
      await expectRestores(sb, kept);

      // The next prune finishes the job (the dead prune's lock is stale at once).
      const second = (await ok(sb, ["prune", "--lock-wait", "0", "--json"])).json();
      const clean = await cli(sb, ["check", "--read-data", "--json"]);
      expect(clean.code, clean.stdout).toBe(0);
      expect(clean.json().problems).toEqual([]);
      expect(readdirSync(path.join(sb.repo, "index"))).toHaveLength(1);
      const tmp = path.join(sb.repo, "tmp");
      expect(existsSync(tmp) ? readdirSync(tmp) : []).toEqual([]);
      const temp = readdirSync(sb.repo, { recursive: true }).filter((n) => String(n).includes(".tmp-"));
      expect(temp).toEqual([]);
      await expectRestores(sb, kept);
      const third = (await ok(sb, ["prune", "--json"])).json();
      expect(third.nothingToDo, JSON.stringify({ second, third })).toBe(true);
    });
  }
});
