// The restic engine's forget never empties a group either (issue 17, item 1). restic 0.14 itself
// does not refuse (it forgets the ids pi-guard names), so pi-guard decides before it calls restic:
// a --keep-tag typo forgets nothing, names the group, exits 1, and plain restic still lists every
// snapshot. Real restic (Debian package), real repository.

import { execFileSync } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writeFileExact, writePiConfigFiles } from "../helpers/tmp.js";

const PASSWORD = "restic guard password";
let sb: Sandbox;
let resticRepo: string;
let env: Record<string, string>;
let made: string[];

const restic = (args: string[]) =>
  execFileSync("restic", args, { env: { PATH: process.env.PATH!, HOME: sb.home, RESTIC_REPOSITORY: resticRepo, RESTIC_PASSWORD: PASSWORD }, encoding: "utf8" });
const resticIds = () => (JSON.parse(restic(["snapshots", "--json"])) as { id: string }[]).map((s) => s.id).sort();

beforeAll(async () => {
  sb = makeSandbox("retention-restic");
  resticRepo = path.join(sb.root, "restic-repo");
  env = { ...sb.env, PI_GUARD_REPO: `restic:${resticRepo}`, PI_GUARD_PASSWORD: PASSWORD };
  writePiConfigFiles(sb.agentDir);
  await ok(env, ["init"]);
  made = [];
  for (let i = 0; i < 2; i++) {
    writeFileExact(path.join(sb.sessionsDir, "--proj--", `s${i}.jsonl`), `{"n":${i}}\n`, 0o644);
    made.push((await ok(env, ["snapshot", "--json"])).json<{ snapshotId: string }>().snapshotId);
  }
}, 120_000);

afterAll(() => sb?.cleanup());

describe("restic engine: forget never empties a group", () => {
  it("a --keep-tag typo: restic is not asked to forget anything; exit 1 naming the group; the dry run the same", async () => {
    const before = resticIds();
    expect(before).toHaveLength(2);
    const dry = await cli(env, ["forget", "--keep-tag", "typo-tag", "--dry-run", "--json"]);
    expect(dry.code, dry.stderr).toBe(1);
    expect(dry.json()).toMatchObject({ refused: true, removed: 0, emptiedGroups: [{ snapshots: 2 }] });

    const real = await cli(env, ["forget", "--keep-tag", "typo-tag", "--prune"]);
    expect(expectOneLineError(real, 1)).toMatch(/would remove every snapshot of 1 group\(s\).*nothing was forgotten/);
    expect(real.stdout).toMatch(/refused: the policy keeps no snapshot of host \S+ .*2 snapshot\(s\)/);
    expect(resticIds()).toEqual(before);

    // A policy that keeps something still works, and restic forgets what it does not keep.
    const kept = (await ok(env, ["forget", "--keep-last", "1", "--json"])).json<{ removed: number; refused: boolean }>();
    expect(kept).toMatchObject({ removed: 1, refused: false });
    expect(resticIds()).toHaveLength(1);
    expect(made).toHaveLength(2);
  });
});
