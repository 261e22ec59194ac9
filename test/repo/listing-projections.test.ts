// Issue 20, memory: a cold first command at 100,000 snapshots no longer keeps a record per
// snapshot to choose a parent (the heads are folded in as each snapshot is parsed), and writes the
// briefs it lists a bounded batch at a time. Both are checked here against the slow path: the
// full records of listSnapshots(), read from the repository itself. The snapshots mix hosts,
// roots, equal times, imports and suspect losses, and are read partly from a listing object
// (docs/FORMAT.md §7a) and partly one by one, as a cold start reads them.

import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readKeyFile } from "../../src/config/credentials.js";
import { SNAPSHOT_VERSION, SUSPECT_LOSS_TAG, type Snapshot } from "../../src/repo/format.js";
import { agentRootPath, canBeParent } from "../../src/repo/parent-heads.js";
import { Repository } from "../../src/repo/repository.js";
import { LocalTarget } from "../../src/targets/local.js";
import { initRepo } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
let dataDirs = 0;
beforeEach(async () => {
  sb = makeSandbox("projections");
  await initRepo(sb);
  // A listing object holds snapshots from the second on, so that the cold reads below go through one.
  process.env.PI_GUARD_TEST_LISTING_BATCH = "2";
});
afterEach(() => {
  delete process.env.PI_GUARD_TEST_LISTING_BATCH;
  sb.cleanup();
});

/** The repository with a metadata cache of its own (a new machine: nothing cached), or none. */
async function open(opts: { cache: boolean }): Promise<Repository> {
  const key = (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!;
  return Repository.open(new LocalTarget(sb.repo), key, opts.cache ? { dataDir: sb.dir(`data-${dataDirs++}`) } : {});
}

const ROOTS = {
  a: [{ name: "agent", path: "/a" }],
  aLinked: [
    { name: "agent", path: "/a" },
    { name: "sessions", path: "/big/sessions" },
  ],
  b: [{ name: "agent", path: "/b" }],
  none: [{ name: "other", path: "/o" }],
};
type RootsName = keyof typeof ROOTS;

/** `count` snapshots of every kind a parent is chosen among, some at the same second (ties go by id). */
function mixedSnapshots(count: number): Snapshot[] {
  const out: Snapshot[] = [];
  const rootNames = Object.keys(ROOTS) as RootsName[];
  for (let i = 0; i < count; i++) {
    const tags = i % 7 === 3 ? [SUSPECT_LOSS_TAG] : i % 5 === 2 ? ["pre-restore"] : [];
    const s: Snapshot = {
      version: SNAPSHOT_VERSION,
      time: new Date(Date.UTC(2026, 10, 1, 10, 0, Math.floor(i / 3))).toISOString(),
      host: i % 3 === 1 ? "h2" : "h1",
      user: "u",
      tags,
      roots: ROOTS[rootNames[(i * 7) % rootNames.length]],
      treeList: [(i % 256).toString(16).padStart(2, "0").repeat(32)],
      program: "test",
      summary: { files: i, dirs: 1, bytesTotal: i * 10, bytesNew: 0, bytesStored: i * 3, filesNew: 0, filesChanged: 0, filesUnchanged: 0, durationMs: 1 },
    };
    if (i % 11 === 6) s.imported = "2026-01-01T00:00:00.000Z";
    out.push(s);
  }
  return out;
}

/** Saved, then (unless `listing` is false) all put in one listing object. */
async function writeSnapshots(snapshots: Snapshot[], listing = true): Promise<void> {
  const repo = await open({ cache: false });
  for (const s of snapshots) await repo.saveSnapshot(s);
  if (listing) await repo.consolidateListing({ after: "repair" });
}

/** What findBases chose from the full records before: the newest whole snapshot of host and roots, and of host and agent root. */
async function slowBases(host: string, roots: unknown, agent: string | undefined): Promise<{ parent?: string; baseline?: string }> {
  const all = await (await open({ cache: false })).listSnapshots({ fromTarget: true });
  const whole = all.filter((r) => r.snapshot.host === host && canBeParent(r.snapshot));
  const parent = whole.filter((r) => JSON.stringify(r.snapshot.roots) === JSON.stringify(roots)).at(-1)?.id;
  return { parent, baseline: agent === undefined ? parent : whole.filter((r) => agentRootPath(r.snapshot.roots) === agent).at(-1)?.id };
}

const QUERIES: [string, RootsName][] = [
  ["h1", "a"],
  ["h1", "aLinked"],
  ["h1", "b"],
  ["h1", "none"],
  ["h2", "a"],
  ["h2", "aLinked"],
  ["h3", "a"],
];

describe("a cold listing keeps nothing per snapshot for a parent", () => {
  it("listParentHeads gives the parent and baseline the full records give, with a cache and without; the heads it records give that parent again", async () => {
    await writeSnapshots(mixedSnapshots(60));
    // Written after the listing object: read one by one.
    await writeSnapshots(mixedSnapshots(66).slice(60).map((s) => ({ ...s, time: "2026-11-01T10:00:19.000Z" })), false);
    let parents = 0;
    let otherBaselines = 0;
    for (const [host, rootsName] of QUERIES) {
      const roots = ROOTS[rootsName];
      const agent = agentRootPath(roots);
      const expected = await slowBases(host, roots, agent);
      const cold = await open({ cache: true });
      expect(await cold.listParentHeads(host, roots, agent), `${host} ${rootsName}`).toEqual(expected);
      expect(await (await open({ cache: false })).listParentHeads(host, roots, agent), `${host} ${rootsName}, no cache`).toEqual(expected);
      // The next snapshot of this machine finds the parent from heads.log, without listing.
      const again = await Repository.open(cold.target, (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!, { dataDir: path.dirname(path.dirname(path.dirname(cold.cache!.dir))) });
      expect((await again.latestSnapshotFor(host, roots))?.id, `${host} ${rootsName}, from heads.log`).toBe(expected.parent);
      if (expected.parent) parents++;
      if (expected.baseline !== undefined && expected.baseline !== expected.parent) otherBaselines++;
    }
    // The data above must exercise every answer: a parent, none, and a baseline other than the parent.
    expect([parents, otherBaselines]).toEqual([6, 2]);
  }, 120_000);
});

describe("a cold listing of briefs", () => {
  it("records every brief once, oldest first, equal to the full records' and listed the same warm", async () => {
    const snapshots = mixedSnapshots(40);
    await writeSnapshots(snapshots);
    const full = await (await open({ cache: false })).listSnapshotBriefs();
    const cold = await open({ cache: true });
    const listed = await cold.listSnapshotBriefs();
    expect(listed).toEqual(full);
    const recorded: [string, unknown][] = [];
    await cold.cache!.scan("briefs", (name, body) => void recorded.push([name, JSON.parse(body.toString("utf8"))]));
    expect(recorded).toEqual(full.map((r) => [r.id, JSON.parse(JSON.stringify(r.snapshot))]));
    const warm = await Repository.open(cold.target, (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!, { dataDir: path.dirname(path.dirname(path.dirname(cold.cache!.dir))) });
    expect(await warm.listSnapshotBriefs()).toEqual(full);
  }, 120_000);
});
