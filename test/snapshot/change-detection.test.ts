// Issue 17, item 2: a same-size rewrite whose mtime was put back (cp -p, touch -r) keeps inode, size
// and mtime; only the ctime tells. The snapshot must see it (docs/FORMAT.md §10), and a node written
// before ctime was recorded must make the file be read in full once. An unchanged file still costs
// no read at all.

import { spawnSync } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRepo, ok, restoreJson, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writeFileExact } from "../helpers/tmp.js";
import { jsonl, openEngine, piSessionJsonl } from "./engine.js";
import { withSnapshotBuilder } from "../../src/snapshot/snapshotter.js";

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${r.stderr || r.error}`);
}

/** The same length, other bytes: every "line" becomes "LINE". */
const rewritten = (b: Buffer): Buffer => Buffer.from(b.toString("latin1").replaceAll("line", "LINE"), "latin1");

describe("change detection compares ctime too", () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = makeSandbox("ctime");
    await initRepo(sb);
  });
  afterAll(() => sb?.cleanup());

  async function restoredBytes(rel: string): Promise<Buffer> {
    const target = sb.dir(`restored-${Math.random().toString(16).slice(2)}`);
    await restoreJson(sb, ["latest", "--target", target, "--path", rel]);
    return readFileSync(path.join(target, rel));
  }

  it("a same-size rewrite with its mtime put back by touch -r is backed up", async () => {
    const rel = "sessions/--p--/touched.jsonl";
    const file = path.join(sb.agentDir, rel);
    const before = piSessionJsonl(100_000, "touched");
    writeFileExact(file, before, 0o644);
    const ref = path.join(sb.root, "touched.ref");
    run("cp", ["-p", file, ref]);
    await snapshot(sb);
    const ino = statSync(file).ino;
    const after = rewritten(before);
    expect(after.length).toBe(before.length);
    writeFileSync(file, after);
    run("touch", ["-r", ref, file]);
    // What the old comparison looked at is all the same.
    expect(statSync(file).ino).toBe(ino);
    expect(statSync(file, { bigint: true }).mtimeNs).toBe(statSync(ref, { bigint: true }).mtimeNs);
    const s = await snapshot(sb);
    expect(s.filesChanged).toBe(1);
    expect((await restoredBytes(rel)).equals(after)).toBe(true);
  });

  it("a same-size file copied over with cp -p (mtime of the copy) is backed up", async () => {
    const rel = "auth.json";
    const file = path.join(sb.agentDir, rel);
    const before = Buffer.from(JSON.stringify({ anthropic: { type: "api_key", key: "sk-ant-OLD-" + "a".repeat(40) } }));
    writeFileExact(file, before, 0o600);
    await snapshot(sb);
    const st = statSync(file, { bigint: true });
    const replacement = path.join(sb.root, "auth.new");
    const after = Buffer.from(JSON.stringify({ anthropic: { type: "api_key", key: "sk-ant-NEW-" + "b".repeat(40) } }));
    expect(after.length).toBe(before.length);
    writeFileSync(replacement, after, { mode: 0o600 });
    // The copy carries the old file's mtime to the nanosecond (a file synced back from elsewhere).
    run("touch", ["-r", file, replacement]);
    run("cp", ["-p", replacement, file]);
    expect(statSync(file, { bigint: true }).ino).toBe(st.ino);
    expect(statSync(file, { bigint: true }).mtimeNs).toBe(st.mtimeNs);
    const s = await snapshot(sb);
    expect(s.filesChanged).toBe(1);
    expect((await restoredBytes(rel)).equals(after)).toBe(true);
  });

  it("a node without ctimeMs (written before it was recorded) makes the file be read in full once; then an unchanged file is not read", async () => {
    const engine = await openEngine(sb);
    const rel = "sessions/--p--/old-node.jsonl";
    const file = path.join(sb.agentDir, rel);
    const before = jsonl(200_000, "old-node");
    writeFileExact(file, before, 0o644);
    const first = await engine.snap();
    // The same tree as an older pi-guard wrote it: no ctimeMs, no fullReadMs, and newest, so it is the parent.
    const legacy = await withSnapshotBuilder(engine.repo, { command: "test" }, async (builder) => {
      for (const node of await engine.nodes(first)) {
        const { ctimeMs: _c, fullReadMs: _f, ...old } = node as typeof node & { ctimeMs?: number; fullReadMs?: number };
        await builder.addNode(old);
      }
      return builder.commit({ host: "test-host", roots: first.snapshot.roots, tags: [] });
    });
    const ref = path.join(sb.root, "old-node.ref");
    run("cp", ["-p", file, ref]);
    const after = rewritten(before);
    writeFileSync(file, after);
    run("touch", ["-r", ref, file]);
    const second = await engine.snap();
    expect(second.snapshot.parent).toBe(legacy.id);
    expect((await engine.bytes(await engine.node(second, rel))).equals(after)).toBe(true);
    // Every file of the legacy parent was read in full (none had a ctime to compare).
    expect(second.snapshot.summary.filesUnchanged).toBe(0);
    const third = await engine.snap();
    expect(third.snapshot.summary.filesUnchanged).toBe(third.snapshot.summary.files);
    expect(third.snapshot.summary.bytesRead).toBe(0);
    expect((await ok(sb, ["check", "--read-data", "--json"])).json().ok).toBe(true);
  });
});
