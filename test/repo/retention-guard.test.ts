// A retention policy never empties a host+roots group (issue 17, item 1): whatever the policy
// says (a typo in --keep-tag keeps nothing), `forget` refuses to remove the last snapshot of a
// group, forgets nothing at all, names each such group, and exits 1; a dry run shows the same.
// --unsafe-allow-remove-all (with --host) lets it. Forgetting by id every snapshot of a group needs
// the flag too. `forget --prune` prunes and says what the prune freed. Real CLI, real repository.

import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Snapshot } from "../../src/repo/format.js";
import type { SnapshotRecord } from "../../src/repo/repository.js";
import { applyPolicy, emptiedGroups } from "../../src/repo/retention.js";
import { cli, expectOneLineError, initRepo, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writeFileExact, writePiConfigFiles } from "../helpers/tmp.js";
import { repoListing } from "./prune-fixture.js";

const sandboxes: Sandbox[] = [];
afterEach(() => {
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

interface Group {
  host: string;
  roots: { name: string; path: string }[];
  snapshots: number;
  newest: string;
}

/** 3 snapshots of host laptop, then 2 of host desktop (the second one tagged "keep"). */
async function world(): Promise<{ sb: Sandbox; laptop: string[]; desktop: string[] }> {
  const sb = makeSandbox("retention-guard");
  sandboxes.push(sb);
  writePiConfigFiles(sb.agentDir);
  await initRepo(sb);
  const snap = async (host: string, i: number, tags: string[] = []) => {
    writeFileExact(path.join(sb.sessionsDir, "--proj--", `s${i}.jsonl`), `{"n":${i}}\n`, 0o644);
    const args = ["snapshot", "--json", ...tags.flatMap((t) => ["--tag", t])];
    return (await ok(sb, args, { env: { PI_GUARD_HOST: host } })).json<{ snapshotId: string }>().snapshotId;
  };
  const laptop = [await snap("laptop", 0), await snap("laptop", 1), await snap("laptop", 2)];
  const desktop = [await snap("desktop", 3), await snap("desktop", 4, ["keep"])];
  return { sb, laptop, desktop };
}

const snapshotIds = async (sb: Sandbox) => (await ok(sb, ["snapshots", "--json"])).json<{ id: string }[]>().map((s) => s.id).sort();

describe("forget never empties a group", () => {
  it("a --keep-tag typo: refused for every group, nothing forgotten, exit 1; the dry run says the same", async () => {
    const { sb, laptop, desktop } = await world();
    const before = repoListing(sb.repo);

    const dry = await cli(sb, ["forget", "--keep-tag", "typo-tag", "--dry-run"]);
    expect(dry.code, dry.stdout + dry.stderr).toBe(1);
    expect(dry.stdout).toMatch(new RegExp(`refused: the policy keeps no snapshot of host laptop .*3 snapshot\\(s\\), newest ${laptop[2].slice(0, 8)}`));
    expect(dry.stdout).toMatch(new RegExp(`refused: the policy keeps no snapshot of host desktop .*2 snapshot\\(s\\), newest ${desktop[1].slice(0, 8)}`));
    expect(expectOneLineError(dry, 1)).toMatch(/would remove every snapshot of 2 group\(s\).*nothing would be forgotten.*--unsafe-allow-remove-all/);

    const real = await cli(sb, ["forget", "--keep-tag", "typo-tag"]);
    expect(expectOneLineError(real, 1)).toMatch(/would remove every snapshot of 2 group\(s\).*nothing was forgotten/);
    expect(real.stdout).not.toMatch(/forgot \d/);
    expect(repoListing(sb.repo)).toEqual(before);

    const json = await cli(sb, ["forget", "--keep-tag", "typo-tag", "--json"]);
    expect(json.code).toBe(1);
    const r = json.json<{ refused: boolean; removed: number; emptiedGroups: Group[] }>();
    expect(r.refused).toBe(true);
    expect(r.removed).toBe(0);
    expect(r.emptiedGroups.map((g) => [g.host, g.snapshots, g.newest]).sort()).toEqual(
      [
        ["desktop", 2, desktop[1]],
        ["laptop", 3, laptop[2]],
      ].sort(),
    );
    expect(r.emptiedGroups[0].roots.length).toBeGreaterThan(0);
    expect(await snapshotIds(sb)).toEqual([...laptop, ...desktop].sort());
  });

  it("a tag that only one group has: the other group is refused, and nothing at all is forgotten", async () => {
    const { sb, laptop, desktop } = await world();
    const r = await cli(sb, ["forget", "--keep-tag", "keep", "--json"]);
    expect(r.code).toBe(1);
    const j = r.json<{ refused: boolean; emptiedGroups: Group[]; remove: { id: string }[] }>();
    expect(j.emptiedGroups.map((g) => g.host)).toEqual(["laptop"]);
    // The policy's plan is reported (desktop's untagged one and all of laptop's), not carried out.
    expect(j.remove.map((e) => e.id).sort()).toEqual([...laptop, desktop[0]].sort());
    expect(await snapshotIds(sb)).toEqual([...laptop, ...desktop].sort());
  });

  it("--unsafe-allow-remove-all needs --host; with it, that host's group goes and the others stay", async () => {
    const { sb, laptop, desktop } = await world();
    expect(expectOneLineError(await cli(sb, ["forget", "--keep-tag", "keep", "--unsafe-allow-remove-all"]), 2)).toMatch(/--unsafe-allow-remove-all needs --host/);
    const r = await ok(sb, ["forget", "--keep-tag", "keep", "--host", "laptop", "--unsafe-allow-remove-all"]);
    expect(r.stdout).toMatch(/removed every snapshot of host laptop .*--unsafe-allow-remove-all/);
    expect(await snapshotIds(sb)).toEqual([...desktop].sort());
    expect(laptop.length).toBe(3);
  });

  it("forgetting by id every snapshot of a group needs the flag; fewer need nothing", async () => {
    const { sb, laptop, desktop } = await world();
    const all = await cli(sb, ["forget", ...laptop.map((id) => id.slice(0, 8)), "--json"]);
    expect(all.code).toBe(1);
    expect(all.json<{ refused: boolean; emptiedGroups: Group[] }>().emptiedGroups.map((g) => g.host)).toEqual(["laptop"]);
    expect(all.stderr).toMatch(/every snapshot of 1 group\(s\).*nothing was forgotten/);
    expect(await snapshotIds(sb)).toEqual([...laptop, ...desktop].sort());

    await ok(sb, ["forget", laptop[0].slice(0, 8), laptop[1].slice(0, 8)]);
    expect(await snapshotIds(sb)).toEqual([laptop[2], ...desktop].sort());
    await ok(sb, ["forget", laptop[2].slice(0, 8), "--unsafe-allow-remove-all"]);
    expect(await snapshotIds(sb)).toEqual([...desktop].sort());
  });

  it("forget --prune prunes, and says what the prune freed instead of asking for a prune", async () => {
    const { sb } = await world();
    const r = await ok(sb, ["forget", "--keep-last", "1", "--prune"]);
    expect(r.stdout).toMatch(/forgot 3 snapshot\(s\), kept 2; pruned: /);
    expect(r.stdout).not.toMatch(/`pi-guard prune` frees their data/);
    const plain = await ok(sb, ["forget", "--keep-last", "1"]);
    expect(plain.stdout).toMatch(/nothing to forget/);
  });
});

describe("which groups a decision empties (pure)", () => {
  const NOW = new Date(2026, 0, 1);
  const rec = (id: string, host: string, day: number, tags: string[] = []): SnapshotRecord => ({
    id,
    snapshot: { version: 1, time: new Date(2025, 5, day).toISOString(), host, user: "u", tags, roots: [{ name: "agent", path: "/a" }], tree: [], program: "t", summary: {} as Snapshot["summary"] },
  });
  const removed = (snapshots: SnapshotRecord[], keepTags: string[]) => new Set(applyPolicy(snapshots, { keepTags }, NOW).remove.map((r) => r.record.id));

  it("a special snapshot or one from the future, kept anyway, does not save a group the policy empties", () => {
    const snapshots = [rec("a1", "a", 1), rec("a2", "a", 2, ["pre-restore"]), rec("b1", "b", 1), { ...rec("b2", "b", 3), snapshot: { ...rec("b2", "b", 3).snapshot, time: "2099-01-01T00:00:00.000Z" } }];
    const groups = emptiedGroups(snapshots, removed(snapshots, ["typo"]), NOW);
    expect(groups.map((g) => [g.host, g.snapshots, g.newest])).toEqual([
      ["a", 1, "a1"],
      ["b", 1, "b1"],
    ]);
  });

  it("a tag kept in a group saves it; by id, every snapshot of the group counts, special ones too", () => {
    const snapshots = [rec("a1", "a", 1), rec("a2", "a", 2, ["keep"]), rec("b1", "b", 1), rec("b2", "b", 2, ["pre-restore"])];
    expect(emptiedGroups(snapshots, removed(snapshots, ["keep"]), NOW).map((g) => g.host)).toEqual(["b"]);
    expect(emptiedGroups(snapshots, new Set(["b1"]), NOW, { everySnapshot: true })).toEqual([]);
    expect(emptiedGroups(snapshots, new Set(["b1", "b2"]), NOW, { everySnapshot: true }).map((g) => [g.host, g.snapshots, g.newest])).toEqual([["b", 2, "b2"]]);
    // With includeSpecial the pre-restore snapshot counts for the policy too, and saves nothing it removes.
    expect(emptiedGroups(snapshots, new Set(["b1", "b2"]), NOW, { includeSpecial: true }).map((g) => g.host)).toEqual(["b"]);
  });
});
