// Issue 17, item 3: the append path trusts a grown file's prefix, so a same-length edit in its
// middle followed by an append was stored wrong for ever (old middle, new tail). The trust is now
// bounded: a grown file whose last full read is older than snapshot.fullReadIntervalMs is read in
// full again (docs/FORMAT.md §10). Within the bound, `pi-guard verify` names the file.

import { closeSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync, writeSync, appendFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, initRepo, restoreJson, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writeFileExact } from "../helpers/tmp.js";
import { jsonl, openEngine, piSessionJsonl } from "./engine.js";
import { withSnapshotBuilder } from "../../src/snapshot/snapshotter.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Overwrite `length` bytes in the middle of `file` with other bytes of the same length: size and inode stay. */
function editMiddle(file: string, length = 64, fill = "#"): void {
  const size = statSync(file).size;
  const at = Math.floor(size / 2);
  const fd = openSync(file, "r+");
  try {
    writeSync(fd, Buffer.alloc(length, fill), 0, length, at);
  } finally {
    closeSync(fd);
  }
}

describe("the append window is bounded", () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = makeSandbox("fullread");
    await initRepo(sb);
  });
  afterAll(() => sb?.cleanup());

  it("once fullReadIntervalMs has passed, a grown file is read in full: a middle edit plus an append restores exactly", async () => {
    mkdirSync(path.join(sb.configHome, "pi-guard"), { recursive: true });
    const config = path.join(sb.root, "config-1s.json");
    writeFileSync(config, JSON.stringify({ snapshot: { fullReadIntervalMs: 1000 } }));
    const env = { PI_GUARD_CONFIG: config };
    const rel = "sessions/--p--/edited.jsonl";
    const file = path.join(sb.agentDir, rel);
    writeFileExact(file, piSessionJsonl(600_000, "edited"), 0o644);
    await snapshot(sb, [], { env });
    await sleep(1100);
    editMiddle(file);
    appendFileSync(file, '{"type":"message","id":"tail","text":"appended after the edit"}\n');
    const s = await snapshot(sb, [], { env });
    expect(s.filesChanged).toBe(1);
    const target = sb.dir("restored-bound");
    await restoreJson(sb, ["latest", "--target", target, "--path", rel]);
    expect(readFileSync(path.join(target, rel)).equals(readFileSync(file))).toBe(true);
    const v = await cli(sb, ["verify", "--json"], { env });
    expect(v.code, v.stderr).toBe(0);
    expect(v.json().identical).toBe(true);
  });

  it("within the bound the append path stores what it trusts, and `pi-guard verify` names the file that differs", async () => {
    const rel = "sessions/--p--/within.jsonl";
    const file = path.join(sb.agentDir, rel);
    writeFileExact(file, jsonl(600_000, "within"), 0o644);
    await snapshot(sb);
    editMiddle(file);
    appendFileSync(file, '{"type":"message","id":"tail","text":"appended after the edit"}\n');
    const s = await snapshot(sb);
    expect(s.filesChanged).toBe(1);
    // The documented limit: the default window (1 h) has not passed, so the edit is not seen...
    const v = await cli(sb, ["verify", "--json"]);
    expect(v.code).toBe(1);
    const report = v.json();
    expect(report.identical).toBe(false);
    // ...but verify finds it, at the chunk that holds the edit.
    const diff = report.differences.find((d: { path: string }) => d.path === rel);
    expect(diff).toMatchObject({ root: "agent", path: rel, status: "changed" });
    expect(diff.from).toBeGreaterThan(0);
    expect(diff.from).toBeLessThanOrEqual(Math.floor(statSync(file).size / 2));
    expect(report.differences.filter((d: { path: string }) => d.path !== rel)).toEqual([]);
    expect((await cli(sb, ["verify"])).stdout).toContain("pi-guard snapshot --full-read");
    // What verify suggests: one snapshot that trusts nothing of the last one, and the copy is exact again.
    const full = await snapshot(sb, ["--full-read"]);
    expect(full.filesUnchanged).toBe(0);
    expect((full as unknown as { bytesRead: number }).bytesRead).toBeGreaterThanOrEqual(full.bytesTotal);
    expect((await cli(sb, ["verify", "--json"])).json().identical).toBe(true);
  });

  it("records the last full read in the node, carries it through appends, and reads in full when it is stale or in the future", async () => {
    const engine = await openEngine(sb);
    const rel = "sessions/--p--/engine.jsonl";
    const file = path.join(sb.agentDir, rel);
    // Large enough that the blobs the append path reads (the first, the last kept one, the tail:
    // each at most one 128 KiB chunk, wherever the repository's keyed chunker cuts) are under half.
    writeFileExact(file, jsonl(3_000_000, "engine"), 0o644);
    const t0 = Date.now();
    const first = await engine.snap();
    const n1 = await engine.node(first, rel);
    expect(n1.fullReadMs).toBeGreaterThanOrEqual(t0);
    expect(n1.ctimeMs).toBe(statSync(file).ctimeMs);

    // An append within the window: only the tail is read, and the full read's time is kept.
    appendFileSync(file, '{"type":"message","id":"a1"}\n');
    const second = await engine.snap({ fullReadIntervalMs: 3_600_000 });
    const n2 = await engine.node(second, rel);
    expect(n2.fullReadMs).toBe(n1.fullReadMs);
    expect(second.snapshot.summary.bytesRead).toBeLessThan(n2.size! / 2);
    expect((await engine.bytes(n2)).equals(readFileSync(file))).toBe(true);

    // The window has passed: the whole file is read, and the node says when.
    editMiddle(file);
    appendFileSync(file, '{"type":"message","id":"a2"}\n');
    const third = await engine.snap({ fullReadIntervalMs: 0 });
    const n3 = await engine.node(third, rel);
    expect(third.snapshot.summary.bytesRead).toBeGreaterThanOrEqual(n3.size!);
    expect(n3.fullReadMs).toBeGreaterThan(n1.fullReadMs!);
    expect((await engine.bytes(n3)).equals(readFileSync(file))).toBe(true);

    // A tree is untrusted, and clocks go back: a last full read "in the future" is no reason to trust.
    const future = await withSnapshotBuilder(engine.repo, { command: "test" }, async (builder) => {
      for (const node of await engine.nodes(third)) await builder.addNode(node.path === rel ? { ...node, fullReadMs: Date.now() + 86_400_000 } : node);
      return builder.commit({ host: "test-host", roots: third.snapshot.roots, tags: [] });
    });
    editMiddle(file, 32, "%");
    appendFileSync(file, '{"type":"message","id":"a3"}\n');
    const fourth = await engine.snap({ fullReadIntervalMs: 3_600_000 });
    expect(fourth.snapshot.parent).toBe(future.id);
    const n4 = await engine.node(fourth, rel);
    expect(fourth.snapshot.summary.bytesRead).toBeGreaterThanOrEqual(n4.size!);
    expect(n4.fullReadMs).toBeLessThanOrEqual(Date.now());
    expect((await engine.bytes(n4)).equals(readFileSync(file))).toBe(true);
  });
});
