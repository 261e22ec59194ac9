// A snapshot never commits a file list that reuses a damaged tree blob of an earlier snapshot
// (src/snapshot/snapshotter.ts commit). File nodes record when their file was last read in full, so
// a parent that cannot be read gives new file nodes; but a stretch of the list that holds only
// folders comes out the same bytes again, so its blob id is the damaged one. Then the snapshot is
// refused, nothing saved, rather than saved unreadable. Real CLI, a real bit flip in a real pack.

import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlobReader } from "../../src/repo/blob-reader.js";
import { Repository } from "../../src/repo/repository.js";
import { SealPool } from "../../src/repo/seal-pool.js";
import { treeLeaves } from "../../src/snapshot/tree.js";
import { LocalTarget } from "../../src/targets/local.js";
import { cli, initRepo, snapshot } from "../helpers/cli.js";
import { listFiles, makeSandbox, type Sandbox, writeFileExact } from "../helpers/tmp.js";

describe("a damaged tree blob that the next file list would reuse", () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = makeSandbox("tree-reuse");
    // Empty folders first in the sorted walk ("aaa" < "auth.json"): the list starts with folders only.
    for (let i = 0; i < 3000; i++) mkdirSync(path.join(sb.agentDir, "aaa", `d${String(i).padStart(4, "0")}`), { recursive: true });
    writeFileExact(path.join(sb.agentDir, "auth.json"), "{}", 0o600);
    await initRepo(sb);
  });
  afterAll(() => sb?.cleanup());

  it("is refused with exit 3, nothing saved; check names the damage", async () => {
    const first = await snapshot(sb);
    const keyFile = readFileSync(path.join(sb.configHome, "pi-guard", "key"), "utf8").trim();
    const repo = await Repository.open(new LocalTarget(sb.repo), { kind: "keyfile", secret: Buffer.from(keyFile, "base64"), path: "key" });
    await repo.loadIndex();
    const tree = await treeLeaves(new BlobReader(repo, new SealPool(0)), await repo.loadSnapshot(first.snapshotId));
    const loc = repo.index.get(tree[0])!;
    const pack = listFiles(path.join(sb.repo, "data")).find((f) => path.basename(f) === loc.pack)!;
    const bytes = readFileSync(pack);
    bytes[loc.offset + Math.floor(loc.length / 2)] ^= 0x01;
    writeFileSync(pack, bytes);
    const before = readdirSync(path.join(sb.repo, "snapshots")).sort();

    const r = await cli(sb, ["snapshot", "--json"]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain(`parent snapshot ${first.snapshotId.slice(0, 8)} is unreadable`);
    expect(r.stderr).toMatch(/would reuse \d+ damaged tree blob\(s\) of an earlier snapshot; nothing was saved/);
    expect(readdirSync(path.join(sb.repo, "snapshots")).sort()).toEqual(before);
    const check = await cli(sb, ["check", "--read-data"]);
    expect(check.code).toBe(3);
  });
});
