// `snapshots --json` prints from cached rendered rows (src/repo/snapshot-rows.ts, rows.log in
// docs/FORMAT.md §13): a warm listing parses no snapshot object, a new snapshot brings its own row,
// and the bytes are those of a 2-space JSON array of the same records, the local time made in the
// reader's TZ. The proof that nothing else is read: damage the cached snapshot objects
// (snapshots.log) and the listing neither notices nor changes.

import { appendFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
const ids: string[] = [];
const cacheFiles = (name: string) => {
  const root = path.join(sb.dataHome, "pi-guard", "cache");
  const out: string[] = [];
  for (const repoId of readdirSync(root)) for (const where of readdirSync(path.join(root, repoId))) out.push(path.join(root, repoId, where, name));
  return out;
};

beforeAll(async () => {
  sb = makeSandbox("rows");
  mkdirSync(sb.agentDir, { recursive: true });
  writeFileSync(path.join(sb.agentDir, "settings.json"), "{}\n");
  await ok(sb, ["init"]);
  for (const tag of ["a", "b", "a"]) {
    appendFileSync(path.join(sb.agentDir, "settings.json"), " ");
    ids.push((await snapshot(sb, ["--tag", tag])).snapshotId);
  }
});
afterAll(() => sb?.cleanup());

const KEYS = ["id", "shortId", "time", "localTime", "host", "user", "tags", "roots", "parent", "imported", "skipped", "changedWhileRead", "special", "summary"];

describe("snapshots --json from cached rows", () => {
  it("prints a 2-space JSON array of the records, local time in TZ, and reads no cached snapshot object", async () => {
    const first = await ok(sb, ["snapshots", "--json"], { env: { TZ: "Asia/Kolkata" } });
    const rows = first.json<Record<string, unknown>[]>();
    expect(rows.map((r) => r.id)).toEqual(ids);
    expect(first.stdout).toBe(JSON.stringify(rows, null, 2) + "\n");
    for (const r of rows) {
      expect(Object.keys(r)).toEqual(KEYS);
      expect(r.localTime).toMatch(/\+05:30$/);
    }
    // The same records through the filtered path, which parses every snapshot.
    const filtered = (await ok(sb, ["snapshots", "--json", "--tag", "a"], { env: { TZ: "Asia/Kolkata" } })).json<Record<string, unknown>[]>();
    expect(filtered).toEqual(rows.filter((r) => (r.tags as string[]).includes("a")));

    for (const f of cacheFiles("snapshots.log")) appendFileSync(f, "garbage that is no batch");
    const again = await ok(sb, ["snapshots", "--json"], { env: { TZ: "America/St_Johns" } });
    expect(again.stderr).toBe("");
    const later = again.json<Record<string, unknown>[]>();
    expect(later.map((r) => ({ ...r, localTime: "" }))).toEqual(rows.map((r) => ({ ...r, localTime: "" })));
    for (const r of later) expect(r.localTime).toMatch(/-0[23]:30$/);
  });

  it("a new snapshot brings its row, a forgotten one is gone, without a full listing", async () => {
    appendFileSync(path.join(sb.agentDir, "settings.json"), " ");
    const added = (await snapshot(sb)).snapshotId;
    await ok(sb, ["forget", ids[0]]);
    for (const f of cacheFiles("snapshots.log")) appendFileSync(f, "more garbage");
    const r = await ok(sb, ["snapshots", "--json"]);
    expect(r.stderr).toBe("");
    expect(r.json<{ id: string }[]>().map((x) => x.id)).toEqual([ids[1], ids[2], added]);
  });

  it("with no cache at all, the rows are rebuilt and print the same", async () => {
    const warm = (await ok(sb, ["snapshots", "--json"], { env: { TZ: "UTC" } })).stdout;
    rmSync(path.join(sb.dataHome, "pi-guard", "cache"), { recursive: true, force: true });
    const cold = await ok(sb, ["snapshots", "--json"], { env: { TZ: "UTC" } });
    expect(cold.stdout).toBe(warm);
    expect((await ok(sb, ["snapshots", "--json"], { env: { TZ: "UTC" } })).stdout).toBe(warm);
  });

  it("an empty repository prints []", async () => {
    const empty = makeSandbox("rows-empty");
    try {
      await ok(empty, ["init"]);
      expect((await ok(empty, ["snapshots", "--json"])).stdout).toBe("[]\n");
    } finally {
      empty.cleanup();
    }
  });
});
