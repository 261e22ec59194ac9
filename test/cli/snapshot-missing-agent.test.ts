// A snapshot of an agent dir that does not exist did nothing and exited 0, so a cron job never
// noticed. It is an error now, unless --allow-empty says that nothing to back up is fine.

import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

describe("snapshot without an agent dir", () => {
  let sb: Sandbox;

  beforeAll(() => {
    sb = makeSandbox("noagent");
  });
  afterAll(() => sb?.cleanup());

  it("is an error naming the dir and how to set it; --init creates nothing then", async () => {
    expect(existsSync(sb.agentDir)).toBe(false);
    const line = expectOneLineError(await cli(sb, ["snapshot", "--init"]), 1);
    expect(line).toBe(`pi-guard: nothing to back up: ${sb.agentDir} does not exist; set PI_CODING_AGENT_DIR or --agent-dir (or pass --allow-empty)`);
    expect(existsSync(sb.repo)).toBe(false);
    expectOneLineError(await cli(sb, ["snapshot", "--json"]), 1);
  });

  it("--allow-empty says so and exits 0 without a snapshot; with --init it still creates the repository", async () => {
    const r = await ok(sb, ["snapshot", "--init", "--allow-empty", "--json"]);
    expect(r.json()).toEqual({ snapshotId: null, reason: "agent dir missing", agentDir: sb.agentDir, via: "direct" });
    expect(r.stderr).toContain("nothing to back up");
    expect(existsSync(sb.repo)).toBe(true);
    expect((await ok(sb, ["snapshots", "--json"])).json()).toEqual([]);
  });

  it("tags pi-guard sets itself cannot be given by hand", async () => {
    writePiConfigFiles(sb.agentDir);
    for (const tag of ["import", "incomplete", "pre-restore"]) {
      expect(expectOneLineError(await cli(sb, ["snapshot", "--tag", tag]), 2)).toContain(`--tag ${tag} is reserved`);
    }
    expect((await ok(sb, ["snapshots", "--json"])).json()).toEqual([]);
    await ok(sb, ["snapshot", "--tag", "mine"]);
  });
});
