// A file whose blobs do not add up to the size the snapshot's file list gives it is damaged: the
// restore fails it by name (kind "damaged"), writes nothing of it, and restores the rest. The check
// runs on the one pass that looks every blob up (read-pipeline.ts, PackOrderedRead.run).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { restoreSnapshot } from "../../src/restore/restorer.js";
import { withSnapshotBuilder } from "../../src/snapshot/snapshotter.js";
import { initRepo } from "../helpers/cli.js";
import { listFiles, makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { openEngine } from "../snapshot/engine.js";

let sb: Sandbox | undefined;
afterEach(() => {
  sb?.cleanup();
  sb = undefined;
});

describe("a file whose blobs do not add up to its size", () => {
  it("is failed as damaged and not written; the other files are restored", async () => {
    sb = makeSandbox("size-check");
    await initRepo(sb);
    mkdirSync(sb.agentDir, { recursive: true });
    writeFileSync(path.join(sb.agentDir, "a.txt"), "hello world\n");
    const engine = await openEngine(sb);
    const real = await engine.node(await engine.snap(), "a.txt");
    // Same blobs, a size they do not add up to (a damaged or hostile file list).
    const crafted = await withSnapshotBuilder(engine.repo, { command: "test-craft" }, async (b) => {
      await b.addNode(real);
      await b.addNode({ ...real, path: "lies.txt", size: 999 });
      return b.commit({ host: os.hostname(), roots: [{ name: "agent", path: sb!.agentDir }], tags: [] });
    });
    const target = sb.dir("target");
    const report = await restoreSnapshot(engine.repo, { id: crafted.id, snapshot: crafted.snapshot }, { destinations: { agent: target } });
    expect(report.failed).toEqual([{ path: "lies.txt", root: "agent", kind: "damaged", error: "its data holds 12 bytes where the snapshot's file list says 999" }]);
    expect(report.files.map((f) => f.path)).toEqual(["a.txt"]);
    expect(readFileSync(path.join(target, "a.txt"), "utf8")).toBe("hello world\n");
    expect(listFiles(target).map((f) => path.relative(target, f))).toEqual(["a.txt"]);
  });
});
