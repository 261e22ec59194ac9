// The snapshot writer copies new chunks into batch buffers that go to the seal worker and come
// back to be filled again (BlobWriter's spare buffers); the worker seals into buffers that come back
// once their frames are written, to be sealed into again. A buffer filled again while a batch still
// used it, or a batch sealed from or into the wrong buffer, would store wrong bytes under a right-looking
// id: only reading every byte back shows it. So: a real pi agent dir (the bench's
// generator) of many batches, snapshotted by the built CLI with its real worker thread, restored
// and compared file by file, and `check --read-data` over every blob.
import { afterAll, describe, expect, it } from "vitest";
import { generateAgentDir } from "../../bench/generate.js";
import { initRepo, ok, restoreJson, snapshot } from "../helpers/cli.js";
import { fingerprint, makeSandbox, treeState, type Sandbox } from "../helpers/tmp.js";

const sandboxes: Sandbox[] = [];
afterAll(() => sandboxes.forEach((sb) => sb.cleanup()));

describe("batch buffers reused across the seal worker", () => {
  it("stores every byte as read", async () => {
    const sb = makeSandbox("batches");
    sandboxes.push(sb);
    // About 40 MiB: dozens of 1 MiB batches, so every spare buffer is filled several times.
    generateAgentDir({ out: sb.agentDir, sizeBytes: 40 * 1024 * 1024, seed: "batches" });
    await initRepo(sb);
    const snap = await snapshot(sb);
    expect(snap.filesNew).toBeGreaterThan(5);
    const target = sb.dir("restored");
    await restoreJson(sb, ["latest", "--target", target]);
    expect(fingerprint(treeState(target))).toEqual(fingerprint(treeState(sb.agentDir)));
    const check = await ok(sb, ["check", "--read-data", "--json"]);
    expect(JSON.parse(check.stdout).problems).toEqual([]);
  }, 180_000);
});
