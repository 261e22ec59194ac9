// The scheduled jobs call the engine the config selects (src/engine/open.ts), as the CLI's
// snapshot command does: on a restic repository (the real restic binary) `run-scheduled --job
// snapshot` takes a pi-guard snapshot there and `--job check` runs restic check. The jobs only
// pi-guard's own format has (prune, retention) still fail in one line, naming why.
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

let sb: Sandbox;
let env: Record<string, string>;

beforeAll(async () => {
  sb = makeSandbox("sched-restic");
  env = { ...sb.env, PI_GUARD_REPO: `restic:${path.join(sb.root, "restic-repo")}`, PI_GUARD_PASSWORD: "sched restic password" };
  writePiConfigFiles(sb.agentDir);
  await ok(env, ["init"]);
}, 60_000);

afterAll(() => sb?.cleanup());

type Ran = { ran: { job: string; ok: boolean; summary: string }[] };

describe("scheduled jobs on a restic repository", () => {
  it("run-scheduled --job snapshot takes a restic snapshot; check runs restic check; prune says it cannot", { timeout: 90_000 }, async () => {
    const snap = (await ok(env, ["run-scheduled", "--job", "snapshot", "--json"])).json<Ran>();
    expect(snap.ran).toEqual([expect.objectContaining({ job: "snapshot", ok: true })]);
    const listed = (await ok(env, ["snapshots", "--json"])).json<{ id: string }[]>();
    expect(listed).toHaveLength(1);
    expect(snap.ran[0].summary).toMatch(new RegExp(`^snapshot ${listed[0].id.slice(0, 8)}: 3 files, 3 new, 0 changed$`));
    const check = (await ok(env, ["run-scheduled", "--job", "check", "--json"])).json<Ran>();
    expect(check.ran).toEqual([{ ...check.ran[0], job: "check", ok: true, summary: "restic check: no errors" }]);
    const prune = await cli(env, ["run-scheduled", "--job", "prune", "--json"]);
    expect(prune.code).toBe(1);
    expect(prune.json<Ran>().ran[0]).toMatchObject({ job: "prune", ok: false, summary: "this job works only on pi-guard's own repositories, not on a restic one (docs/RESTIC.md)" });
  });
});
