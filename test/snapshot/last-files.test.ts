// Issue 20: a long-running process (the watcher) keeps its last snapshot's file nodes in memory
// (LastFiles) instead of reading that snapshot's tree again. A snapshot made from the remembered
// nodes must be the one made from the parent read back from the repository: the same file list,
// byte for byte, and only the appended bytes read. A parent another writer made is read, not
// taken from memory.

import { appendFileSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRepo } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writeFileExact } from "../helpers/tmp.js";
import { jsonl, openEngine, piSessionJsonl, type Engine } from "./engine.js";
import type { LastFiles } from "../../src/snapshot/snapshotter.js";

const SESSIONS = ["a", "b", "c"].map((s) => `sessions/--p--/${s}.jsonl`);

describe("the last snapshot's files kept in memory", () => {
  let sb: Sandbox;
  let engine: Engine;
  beforeAll(async () => {
    sb = makeSandbox("last-files");
    await initRepo(sb);
    for (const [i, rel] of SESSIONS.entries()) writeFileExact(path.join(sb.agentDir, rel), piSessionJsonl(2_000_000 + i * 50_000, rel), 0o644);
    engine = await openEngine(sb);
  });
  afterAll(() => sb?.cleanup());

  const append = (rel: string, seed: string) => appendFileSync(path.join(sb.agentDir, rel), jsonl(4096, seed));

  it("a snapshot from the remembered parent has the file list of one from the parent read back, and reads only the appends", async () => {
    const last: LastFiles = {};
    const first = await engine.snap({ lastFiles: last });
    expect(last.id).toBe(first.id);
    expect([...last.files!.keys()].length).toBe(first.snapshot.summary.files);

    for (const rel of SESSIONS.slice(0, 2)) append(rel, `${rel}-1`);
    const remembered = await engine.snap({ lastFiles: last });
    expect(remembered.snapshot.parent).toBe(first.id);
    expect(last.id).toBe(remembered.id);
    // Nothing changed since: the same change, taken from the parent as read from the repository.
    const readBack = await engine.snap({ parent: first.id });
    expect(readBack.snapshot.treeList).toEqual(remembered.snapshot.treeList);
    expect(remembered.snapshot.summary).toMatchObject({ filesChanged: 2, filesNew: 0 });
    // The appends and a few blobs (at most 128 KiB each) around the append points, not 2 MB files.
    expect(remembered.snapshot.summary.bytesRead).toBeLessThan(2 * (4096 + 3 * 128 * 1024));
    expect((await engine.bytes(await engine.node(remembered, SESSIONS[0]))).equals(readFileSync(path.join(sb.agentDir, SESSIONS[0])))).toBe(true);
  });

  it("when another writer made a newer snapshot, that one is the parent and is read from the repository", async () => {
    const last: LastFiles = {};
    const mine = await engine.snap({ lastFiles: last });
    append(SESSIONS[2], "other-writer");
    // Another process's snapshot: no LastFiles of its own.
    const other = await engine.snap();
    append(SESSIONS[2], "after-other");
    const next = await engine.snap({ lastFiles: last });
    expect(next.snapshot.parent).toBe(other.id);
    expect(next.snapshot.parent).not.toBe(mine.id);
    expect(next.snapshot.summary.filesChanged).toBe(1);
    for (const rel of SESSIONS) expect((await engine.bytes(await engine.node(next, rel))).equals(readFileSync(path.join(sb.agentDir, rel))), rel).toBe(true);
    const readBack = await engine.snap({ parent: other.id });
    expect(readBack.snapshot.treeList).toEqual(next.snapshot.treeList);
  });
});
