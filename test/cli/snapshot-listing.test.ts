// The snapshot listing objects (docs/FORMAT.md §7a): a machine with no metadata cache reads a few
// of them instead of every snapshot object, and still lists exactly what snapshots/ holds after
// snapshots, forgets, prunes, a kill -9 between writing a listing and deleting what it replaces,
// damaged or forged listings, and two writers at once. Real CLI processes on real files; the
// batch is lowered (PI_GUARD_TEST_LISTING_BATCH) so that a listing is written every 2 snapshots.

import { appendFileSync, copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli, collect, ok, snapshot, spawnCli, type CliResult } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox | undefined;
afterEach(() => sb?.cleanup());

function sandbox(label: string): Sandbox {
  const s = makeSandbox(label);
  s.env.PI_GUARD_TEST_LISTING_BATCH = "2";
  mkdirSync(s.agentDir, { recursive: true });
  writeFileSync(path.join(s.agentDir, "settings.json"), "{}\n");
  return s;
}

const listings = (s: Sandbox) => readdirSync(path.join(s.repo, "listing")).filter((n) => !n.includes(".tmp-"));
const snapshotObjects = (s: Sandbox) => readdirSync(path.join(s.repo, "snapshots")).sort();
const dropCache = (s: Sandbox) => rmSync(path.join(s.dataHome, "pi-guard", "cache"), { recursive: true, force: true });

async function snap(s: Sandbox, n: number, tag = "t"): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    appendFileSync(path.join(s.agentDir, "settings.json"), " ");
    ids.push((await snapshot(s, ["--tag", tag])).snapshotId);
  }
  return ids;
}

/** `snapshots --json` as a new machine sees it (no cache), with its stderr. */
async function coldListing(s: Sandbox): Promise<{ ids: string[]; rows: unknown[]; r: CliResult }> {
  dropCache(s);
  const r = await ok(s, ["snapshots", "--json"]);
  const rows = r.json<{ id: string }[]>();
  return { ids: rows.map((x) => x.id).sort(), rows, r };
}

async function warmRows(s: Sandbox): Promise<unknown[]> {
  return (await ok(s, ["snapshots", "--json"])).json();
}

describe("snapshot listing objects", () => {
  it("are written every batch of snapshots, and a cold listing matches the warm one", async () => {
    sb = sandbox("listing-basic");
    await ok(sb, ["init"]);
    const ids = await snap(sb, 4);
    expect(listings(sb)).toHaveLength(2);
    const warm = await warmRows(sb);
    const cold = await coldListing(sb);
    expect(cold.ids).toEqual([...ids].sort());
    expect(cold.rows).toEqual(warm);
    expect(cold.r.stderr).toBe("");
    // The cold run filled the cache: the same rows again, warm.
    expect(await warmRows(sb)).toEqual(warm);
  });

  it("a snapshot added after the last listing and one forgotten since are listed as snapshots/ says", async () => {
    sb = sandbox("listing-forget");
    await ok(sb, ["init"]);
    const ids = await snap(sb, 5);
    expect(listings(sb)).toHaveLength(2); // the 5th is in none
    await ok(sb, ["forget", ids[1]]);
    expect(listings(sb)).toHaveLength(2); // one dead entry among 3 live: kept as it is
    const cold = await coldListing(sb);
    expect(cold.ids).toEqual(ids.filter((_, i) => i !== 1).sort());
    expect(cold.ids).toEqual(snapshotObjects(sb));

    // Forgetting most of what the listings hold merges them into one, without the dead.
    await ok(sb, ["forget", ids[0], ids[2]]);
    expect(listings(sb)).toHaveLength(1);
    const after = await coldListing(sb);
    expect(after.ids).toEqual([ids[3], ids[4]].sort());

    // prune deletes data, never a listing, and the listing stays right.
    await ok(sb, ["prune"]);
    expect(listings(sb)).toHaveLength(1);
    expect((await coldListing(sb)).ids).toEqual([ids[3], ids[4]].sort());
    const check = await cli(sb, ["check", "--json"]);
    expect(check.code, check.stdout).toBe(0);
    expect(check.json().problems).toEqual([]);
  });

  it("kill -9 between writing a merged listing and deleting the ones it replaces: still right, check passes, the next writer tidies", async () => {
    sb = sandbox("listing-kill");
    await ok(sb, ["init"]);
    const ids = await snap(sb, 4);
    expect(listings(sb)).toHaveLength(2);
    const child = spawnCli(sb, ["forget", ids[0], ids[1], ids[2]], { env: { PI_GUARD_TEST_LISTING_PAUSE: "listing-written" } });
    const done = collect(child);
    let stderr = "";
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on("data", (d: Buffer) => {
        stderr += d.toString();
        if (stderr.includes("paused at listing-written")) resolve();
      });
      void done.then((r) => reject(new Error(`forget ended before pausing: ${r.code}\n${r.stderr}`)));
    });
    child.kill("SIGKILL");
    expect((await done).signal).toBe("SIGKILL");
    expect(listings(sb)).toHaveLength(3); // the merged one beside the two it replaces

    const cold = await coldListing(sb);
    expect(cold.ids).toEqual([ids[3]]);
    expect(cold.r.stderr).toBe("");
    const check = await cli(sb, ["check", "--json"]);
    expect(check.code, `${check.stdout}\n${check.stderr}`).toBe(0);
    expect(check.json().problems).toEqual([]);
    // The next writer finds more dead entries than live ones and merges the three into one.
    const next = await snap(sb, 1);
    expect(listings(sb)).toHaveLength(1);
    expect((await coldListing(sb)).ids).toEqual([ids[3], next[0]].sort());

    const repaired = (await ok(sb, ["repair", "index", "--json"])).json();
    expect(repaired.listing.deleted).toHaveLength(1);
    expect(listings(sb)).toEqual([repaired.listing.written]);
    expect((await coldListing(sb)).ids).toEqual([ids[3], next[0]].sort());
  });

  it("a damaged or forged listing object is skipped with a warning; the listing stays right; repair index replaces it", async () => {
    sb = sandbox("listing-damage");
    await ok(sb, ["init"]);
    const ids = await snap(sb, 4);
    const [a, b] = listings(sb);
    const dir = path.join(sb.repo, "listing");
    // Bits flipped in one; another object's bytes under a name that matches them (authentic as a
    // snapshot, not as a listing); a listing's bytes under a name they do not hash to.
    const flipped = readFileSync(path.join(dir, a));
    for (let i = 20; i < flipped.length; i += 5) flipped[i] ^= 0x21;
    writeFileSync(path.join(dir, a), flipped);
    const snapBytes = readFileSync(path.join(sb.repo, "snapshots", ids[0]));
    const forged = createHash("sha256").update(snapBytes).digest("hex");
    writeFileSync(path.join(dir, forged), snapBytes);
    const renamed = "ab".repeat(32);
    copyFileSync(path.join(dir, b), path.join(dir, renamed));

    const cold = await coldListing(sb);
    expect(cold.ids).toEqual([...ids].sort());
    const warnings = cold.r.stderr.trim().split("\n");
    expect(warnings).toHaveLength(3);
    for (const w of warnings) expect(w).toMatch(/^pi-guard: skipped snapshot listing [0-9a-f]{12}.*repair index/);
    expect(cold.r.stderr).toContain(a.slice(0, 12));
    expect(cold.r.stderr).toContain(forged.slice(0, 12));
    expect(cold.r.stderr).toContain(renamed.slice(0, 12));

    const check = await cli(sb, ["check", "--json"]);
    expect(check.code, check.stdout).toBe(0);
    const problems: { severity: string; message: string }[] = check.json().problems;
    expect(problems.filter((p) => p.severity === "warning" && /snapshot listing/.test(p.message))).toHaveLength(3);

    const repaired = (await ok(sb, ["repair", "index", "--json"])).json();
    expect([...repaired.listing.damaged].sort()).toEqual([a, forged, renamed].sort());
    expect(listings(sb)).toEqual([repaired.listing.written]);
    const clean = await coldListing(sb);
    expect(clean.ids).toEqual([...ids].sort());
    expect(clean.r.stderr).toBe("");
  });

  it("two writers at once never lose a snapshot from a cold listing", async () => {
    sb = sandbox("listing-concurrent");
    await ok(sb, ["init"]);
    await snap(sb, 1);
    const writer = async (tag: string) => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        appendFileSync(path.join(sb!.agentDir, `${tag}.txt`), "x");
        ids.push((await snapshot(sb!, ["--tag", tag])).snapshotId);
      }
      return ids;
    };
    const [one, two] = await Promise.all([writer("one"), writer("two")]);
    expect(listings(sb).length).toBeGreaterThan(0);
    const cold = await coldListing(sb);
    expect(cold.ids).toEqual(snapshotObjects(sb));
    for (const id of [...one, ...two]) expect(cold.ids).toContain(id);
    const check = await cli(sb, ["check", "--json"]);
    expect(check.code, check.stdout).toBe(0);
  });

  it("a cold listing read from the listing objects prints the bytes of the full path, spooled or (cache unusable) in memory, and leaves no spool file", async () => {
    sb = sandbox("listing-bytes");
    await ok(sb, ["init"]);
    await snap(sb, 5);
    const reference = (await ok(sb, ["snapshots", "--json", "--host", (await warmRows(sb) as { host: string }[])[0].host], { env: { TZ: "America/St_Johns" } })).stdout;
    dropCache(sb);
    const cold = await ok(sb, ["snapshots", "--json"], { env: { TZ: "America/St_Johns" } });
    expect(cold.stdout).toBe(reference);
    expect(cold.stderr).toBe("");
    const cacheFiles = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? cacheFiles(path.join(dir, d.name)) : [d.name]));
    const files = cacheFiles(path.join(sb.dataHome, "pi-guard", "cache"));
    expect(files).toContain("rows.log");
    expect(files.filter((f) => f.includes("spool"))).toEqual([]);
    // A data dir that cannot hold a cache: the rows stay in memory, the bytes are the same.
    dropCache(sb);
    writeFileSync(path.join(sb.dataHome, "pi-guard", "cache"), "not a folder");
    const noCache = await ok(sb, ["snapshots", "--json"], { env: { TZ: "America/St_Johns" } });
    expect(noCache.stdout).toBe(reference);
    expect(noCache.stderr).toMatch(/metadata cache disabled/);
  });
});
