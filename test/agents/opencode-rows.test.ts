// A SQLite db that loses most of its sessions in place is a suspected loss, like a vanished folder:
// the real opencode 1.18.33 makes three sessions offline; each snapshot records the rows of
// opencode.db's `session` table in the db's tree node; the sessions are then deleted from the db as
// a bad migration does (anomalyco/opencode #13560), with no file vanishing; the next snapshot is
// flagged (reason "rows"), and `restore latest` brings the rows back.
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { openRepository } from "../../src/engine.js";
import { BlobReader } from "../../src/repo/blob-reader.js";
import type { TreeNode } from "../../src/repo/format.js";
import { SealPool } from "../../src/repo/seal-pool.js";
import { copySqlite } from "../../src/snapshot/sqlite-copy.js";
import { readTree } from "../../src/snapshot/tree.js";
import { opencodeDb, runOpencode, startOpencodeModel } from "../helpers/agents/opencode.js";
import { cli, initRepo, ok, snapshot } from "../helpers/cli.js";
import { type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox | undefined;
let server: FakeModelServer | undefined;
afterEach(async () => {
  await server?.close();
  sb?.cleanup();
  sb = server = undefined;
});

/** The db's node in a snapshot's tree. */
async function dbNode(sb: Sandbox, id: string): Promise<TreeNode | undefined> {
  const repo = await openRepository(loadConfig({}, sb.env));
  await repo.loadIndex();
  for await (const n of readTree(new BlobReader(repo, new SealPool(0)), (await repo.loadSnapshot(id)).tree)) if (n.type === "file" && n.path === "opencode.db") return n;
  return undefined;
}

/** Session rows, read from a consistent copy (never by opening the live db). */
async function sessionCount(sb: Sandbox): Promise<number> {
  const copy = await copySqlite(opencodeDb(sb), { stagingDir: sb.dir("test-staging") });
  const db = new Database(copy.path, { readonly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM session").get() as { n: number }).n;
  } finally {
    db.close();
    await copy.dispose();
  }
}

describe("opencode: a db that loses most of its sessions in place", () => {
  it("records the session rows, flags the shrink as a suspected loss (rows), and restore latest brings them back", async () => {
    sb = makeSandbox("opencode-rows");
    server = await startOpencodeModel([say("one")]);
    for (const word of ["one", "two", "three"]) {
      server.setScript([say(`answer ${word}`)]);
      await runOpencode(sb, server, `prompt ${word}`);
    }
    expect(await sessionCount(sb)).toBe(3);
    await initRepo(sb);
    const whole = await snapshot(sb);
    expect((await dbNode(sb, whole.snapshotId))?.rows).toEqual({ table: "session", count: 3 });

    // The migration's loss: the rows go, the file stays (opencode is not running).
    const db = new Database(opencodeDb(sb));
    db.prepare("DELETE FROM session").run();
    db.close();
    expect(await sessionCount(sb)).toBe(0);

    const flagged = await cli(sb, ["snapshot", "--json"]);
    expect(flagged.code, flagged.stderr).toBe(1);
    expect(flagged.stderr).toMatch(/SUSPECTED LOSS: a database lost most of its sessions \(opencode:opencode\.db: 0 of 3 rows of table session left/);
    const v = flagged.json<{ tags: string[]; suspectLoss: { reason: string; rows: unknown[]; against: string } }>();
    expect(v.tags).toEqual(["suspect-loss"]);
    expect(v.suspectLoss).toMatchObject({ reason: "rows", against: whole.snapshotId, rows: [{ file: "opencode:opencode.db", table: "session", before: 3, now: 0 }] });

    const restored = (await ok(sb, ["restore", "latest", "--json"])).json<{ snapshotId: string }>();
    expect(restored.snapshotId).toBe(whole.snapshotId);
    expect(await sessionCount(sb)).toBe(3);
    // Whole again: the next snapshot is no loss.
    const again = (await ok(sb, ["snapshot", "--json"])).json<{ tags: string[]; suspectLoss: unknown }>();
    expect(again).toMatchObject({ tags: [], suspectLoss: null });
  });
});
