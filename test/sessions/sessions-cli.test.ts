// `sessions list` and `sessions show` over live pi sessions, the real fixtures (v1 migrated in
// memory) and a session that now exists only in a snapshot.

import { existsSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOneLineError } from "../helpers/cli.js";
import { sha256File, treeState, fingerprint } from "../helpers/tmp.js";
import { fixturePaths } from "../pi/fixtures.js";
import { run, runOk } from "./cli.js";
import { makeWorld, type World } from "./world.js";

interface ListRow {
  id: string;
  name: string | null;
  project: string;
  turns: number;
  tokens: number;
  size: number;
  live: string | null;
  deleted: boolean;
  versions: { first: { snapshotId: string }; last: { snapshotId: string }; snapshots: number; path: string; size: number }[];
  snapshotCount: number;
  lastSnapshot: { snapshotId: string } | null;
  hosts: string[];
  tags: string[];
  version: number;
  parentSession: string | null;
}

let w: World;
let beforeAgent: Record<string, string>;

beforeAll(async () => {
  w = await makeWorld("sessions");
  beforeAgent = fingerprint(treeState(w.sb.agentDir));
});
afterAll(() => w?.sb.cleanup());

const list = async (...args: string[]) => (await runOk(w.sb, ["--json", "sessions", "list", ...args])).json<ListRow[]>();

describe("sessions list", () => {
  it("lists live sessions, fixtures and the snapshot-only session with their numbers", async () => {
    const rows = await list();
    const byId = new Map(rows.map((r) => [r.id, r]));
    const main = byId.get(w.main.sessionId)!;
    expect(main).toMatchObject({ name: "Alpha notes", project: path.join(w.sb.root, "work", "alpha"), deleted: false, live: w.main.file, turns: 4 });
    expect(main.tokens).toBeGreaterThan(0);
    expect(main.size).toBe(statSync(w.main.file).size);
    expect(main.versions.map((v) => [v.first.snapshotId, v.last.snapshotId, v.snapshots])).toEqual([[w.snapshotId, w.snapshotId, 1]]);
    expect(main).toMatchObject({ snapshotCount: 1, lastSnapshot: { snapshotId: w.snapshotId } });
    expect(main.hosts).toEqual([os.hostname()]);

    const fork = byId.get(w.main.fork!.sessionId)!;
    expect(fork.parentSession).toBe(w.main.file);

    const gone = byId.get(w.gone.sessionId)!;
    expect(gone).toMatchObject({ deleted: true, live: null, turns: 2, project: path.join(w.sb.root, "work", "beta") });
    expect(gone.size).toBe(Buffer.byteLength(w.goneText));
    expect(gone.versions[0]).toMatchObject({ path: w.gone.file, size: Buffer.byteLength(w.goneText) });

    // The real fixtures: v1 files are read (migrated in memory) and counted.
    const v1 = rows.find((r) => r.id === "d703a1a9-1b7b-4fb1-b512-c9738b1fe617")!;
    expect(v1).toMatchObject({ version: 1, project: "/Users/badlogic/workspaces/pi-mono", deleted: false });
    expect(v1.turns).toBeGreaterThan(10);
    expect(rows.find((r) => r.id === "01a22882-ed2e-75a5-90e5-5a3e7a459bf2")?.name).toBe("Sample session");
    expect(rows).toHaveLength(2 + 1 + w.fixtures.size);
  });

  it("filters by project, deleted, host, time and tag", async () => {
    expect((await list("--project", "beta")).map((r) => r.id)).toEqual([w.gone.sessionId]);
    expect((await list("--deleted")).map((r) => r.id)).toEqual([w.gone.sessionId]);
    expect(await list("--host", "no-such-host")).toEqual([]);
    expect((await list("--host", os.hostname())).length).toBeGreaterThan(3);
    expect(await list("--since", "2999-01-01")).toEqual([]);
    expect((await list("--until", "2025-01-01")).map((r) => r.id)).toEqual(["legacy-1"]); // the 2024 v1 fixture
    const pi = (await list("--date", "2025-11-20")).map((r) => r.id);
    expect(pi).toContain("d703a1a9-1b7b-4fb1-b512-c9738b1fe617");
    expect(pi).not.toContain(w.main.sessionId);
    expect(await list("--tag", "python")).toEqual([]);
  });

  it("prints an aligned table that marks the deleted session", async () => {
    const r = await runOk(w.sb, ["sessions", "list"], { COLUMNS: "200" }); // wide: every column shown
    const line = r.stdout.split("\n").find((l) => l.startsWith(w.gone.sessionId.slice(0, 8)))!;
    expect(line).toMatch(/DELETED, in 1 snapshot/);
    expect(line).toMatch(/\spi\s/); // the AGENT column
    expect(r.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+PROJECT\s+AGENT\s+STARTED\s+LAST ACTIVITY\s+TURNS\s+TOKENS\s+COST\s+SIZE\s+WHERE/);
  });

  it("caches summaries in pi-guard's data dir and rebuilds them when the cache is removed", async () => {
    const catalog = path.join(w.sb.dataHome, "pi-guard", "catalog");
    expect(existsSync(path.join(catalog, "live.json"))).toBe(true);
    const first = await list();
    rmSync(catalog, { recursive: true });
    expect(await list()).toEqual(first);
  });

  it("--live needs no repository and sees no deleted sessions", async () => {
    const rows = await list("--live");
    expect(rows.some((r) => r.id === w.gone.sessionId)).toBe(false);
    expect(rows.every((r) => r.versions.length === 0 && r.snapshotCount === 0 && r.lastSnapshot === null)).toBe(true);
  });
});

describe("sessions show", () => {
  it("prints the conversation with the branch tree, labels and the fork's parent", async () => {
    const r = await runOk(w.sb, ["sessions", "show", w.main.sessionId.slice(0, -3)]);
    expect(r.stdout).toContain(`session ${w.main.sessionId}  "Alpha notes"`);
    expect(r.stdout).toMatch(/branches: 2/);
    expect(r.stdout).toContain("label: read-done");
    const conversation = r.stdout.split("conversation along")[1];
    expect(conversation).toContain("Try the other way instead");
    expect(conversation).not.toContain("Count the files please"); // on the other branch
    const fork = await runOk(w.sb, ["sessions", "show", w.main.fork!.sessionId]);
    expect(fork.stdout).toContain(`forked from ${w.main.file}`);
    expect(fork.stdout).toContain("Continue in the fork");
  });

  it("--branch shows the other path", async () => {
    const leafOfTurn1 = w.main.turnLeafIds[1];
    const r = await runOk(w.sb, ["sessions", "show", w.main.sessionId, "--branch", leafOfTurn1.slice(0, 6)]);
    const conversation = r.stdout.split("conversation along")[1];
    expect(conversation).toContain("Count the files please");
    expect(conversation).toContain("There is one file.");
    expect(conversation).not.toContain("Try the other way instead");
    const json = (await runOk(w.sb, ["--json", "sessions", "show", w.main.sessionId, "--branch", leafOfTurn1])).json();
    expect(json.leafId).toBe(leafOfTurn1);
    expect(json.leaves.length).toBe(2);
    expect(json.branchPoints).toHaveLength(1);
    expect(Object.values(json.labels)).toContain("read-done");
  });

  it("shows a session that exists only in a snapshot", async () => {
    const r = await runOk(w.sb, ["sessions", "show", w.gone.sessionId.slice(0, -3)]);
    expect(r.stdout).toContain("read from snapshot");
    expect(r.stdout).toContain("Deleted session question about pelicans");
    expect(r.stdout).toContain("pelican-output");
  });

  it("shows v1 fixtures with compactions, with entry ids that are stable across runs", async () => {
    const a = (await runOk(w.sb, ["--json", "sessions", "show", "ffae836b"])).json();
    const b = (await runOk(w.sb, ["--json", "sessions", "show", "ffae836b"])).json();
    expect(a.path.map((e: { id: string }) => e.id)).toEqual(b.path.map((e: { id: string }) => e.id));
    expect(a.compactions.length).toBeGreaterThan(0);
    const mid = a.path[10].id;
    const branch = (await runOk(w.sb, ["--json", "sessions", "show", "ffae836b", "--branch", mid])).json();
    expect(branch.path).toHaveLength(11);
    const text = await runOk(w.sb, ["sessions", "show", "ffae836b"]);
    expect(text.stdout).toMatch(/── compaction/);
  });

  it("gives one clear line for unknown ids, ambiguous prefixes and unknown branches", async () => {
    expect(expectOneLineError(await run(w.sb, ["sessions", "show", "zzzz"]), 1)).toMatch(/no session matches "zzzz"/);
    // Two fixtures share the prefix 01a2288.
    expect(expectOneLineError(await run(w.sb, ["sessions", "show", "01a2288"]), 2)).toMatch(/ambiguous: 2 sessions match/);
    expect(expectOneLineError(await run(w.sb, ["sessions", "show", w.main.sessionId, "--branch", "nope"]), 1)).toMatch(/no entry "nope"/);
    expect(expectOneLineError(await run(w.sb, ["sessions", "list", "--since", "not a time at all"]), 2)).toMatch(/--since/);
  });

  it("export: a prefix a live session shares with a deleted one is ambiguous; the whole id is not", async () => {
    // pi's ids are UUIDv7 (time first): the world's sessions, made within minutes, share prefixes.
    // The longest prefix the deleted session shares with a live one: when it names one live
    // session alone (most runs), a live-first lookup would take that one.
    const rows = await list();
    const live = rows.filter((r) => !r.deleted);
    const lcp = (a: string, b: string) => {
      let n = 0;
      while (n < a.length && a[n] === b[n]) n++;
      return a.slice(0, n);
    };
    const shared = rows
      .filter((g) => g.deleted)
      .flatMap((g) => live.map((l) => lcp(l.id, g.id)))
      .sort((a, b) => b.length - a.length)[0];
    expect(shared?.length ?? 0, JSON.stringify(rows.map((r) => [r.id, r.deleted]))).toBeGreaterThanOrEqual(4);
    expect(expectOneLineError(await run(w.sb, ["export", shared!]), 2)).toMatch(/ambiguous/);
    expect((await runOk(w.sb, ["export", w.main.sessionId, "--format", "json"])).stdout).toContain(w.main.sessionId);
    expect((await runOk(w.sb, ["export", w.gone.sessionId, "--format", "json"])).stdout).toContain(w.gone.sessionId);
  });

  it("never changed a byte under the agent dir", () => {
    expect(fingerprint(treeState(w.sb.agentDir))).toEqual(beforeAgent);
    for (const original of fixturePaths()) expect(sha256File(w.fixtures.get(path.basename(original))!)).toBe(sha256File(original));
  });
});
