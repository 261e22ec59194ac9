// The catalog's caches through the real CLI: a warm list or search answers from the cached view
// without the repository key; a new snapshot is decrypted (and needs the key) on its own; a
// snapshot that disappears rebuilds the history; live changes show at once.

import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOneLineError, snapshot } from "../helpers/cli.js";
import { makePiSession } from "../helpers/pi-factory.js";
import { run, runOk } from "./cli.js";
import { makeWorld, type World } from "./world.js";

interface Row {
  id: string;
  deleted: boolean;
  tags: string[];
  turns: number;
  snapshots: { snapshotId: string }[];
}

let w: World;
beforeAll(async () => {
  w = await makeWorld("catalog-cache");
});
afterAll(() => w?.sb.cleanup());

const noKey = () => ({ PI_GUARD_KEY_FILE: path.join(w.sb.root, "no-such-key") });
const list = async (env: Record<string, string> = {}) => (await runOk(w.sb, ["--json", "sessions", "list"], env)).json<Row[]>();
const search = async (word: string, env: Record<string, string> = {}) =>
  (await runOk(w.sb, ["--json", "sessions", "search", word], env)).json<{ results: { session: { id: string } }[] }>().results.map((r) => r.session.id);
const catalogDir = () => path.join(w.sb.dataHome, "pi-guard", "catalog");
/** The catalog folder of the one repository. */
const repoCatalog = () => {
  const dirs = readdirSync(catalogDir()).filter((d) => statSync(path.join(catalogDir(), d)).isDirectory());
  expect(dirs).toHaveLength(1);
  return path.join(catalogDir(), dirs[0]);
};
const history = () => JSON.parse(readFileSync(path.join(repoCatalog(), "history.json"), "utf8")).value as { snapshots: { id: string }[] };

describe("the sessions catalog cache", () => {
  it("answers a warm list and search without the repository key", async () => {
    const withKey = await list();
    expect(await search("pelicans")).toEqual([w.gone.sessionId]);
    expect(existsSync(path.join(repoCatalog(), "history.json"))).toBe(true);
    expect(await list(noKey())).toEqual(withKey);
    expect(await search("pelicans", noKey())).toEqual([w.gone.sessionId]); // snapshot-only, from the index
  });

  it("decrypts a new snapshot on its own, and needs the key for it", async () => {
    const second = await snapshot(w.sb);
    const denied = await run(w.sb, ["sessions", "list"], noKey());
    expect(expectOneLineError(denied, 1)).toMatch(/password|key/i);
    const rows = await list();
    const main = rows.find((r) => r.id === w.main.sessionId)!;
    expect(main.snapshots.map((s) => s.snapshotId)).toEqual([w.snapshotId, second.snapshotId]);
    expect(rows.find((r) => r.id === w.gone.sessionId)!.snapshots.map((s) => s.snapshotId)).toEqual([w.snapshotId]);
    expect(history().snapshots.map((s) => s.id)).toEqual([w.snapshotId, second.snapshotId]);
    expect(await list(noKey())).toEqual(rows); // cached again
  });

  it("rebuilds the history when a snapshot disappears from the repository", async () => {
    rmSync(path.join(w.sb.repo, "snapshots", w.snapshotId)); // as a forget would
    const rows = await list();
    expect(rows.some((r) => r.id === w.gone.sessionId)).toBe(false); // it was only in that snapshot
    expect(rows.find((r) => r.id === w.main.sessionId)!.snapshots).toHaveLength(1);
    expect(history().snapshots.map((s) => s.id)).not.toContain(w.snapshotId);
    expect(await search("pelicans")).toEqual([]); // and the index forgets it
  });

  it("sees a new session, a tag and a removed live file in the next run, without the key", async () => {
    const added = await makePiSession({ agentDir: w.sb.agentDir, cwd: path.join(w.sb.root, "work", "delta"), turns: [{ user: "Tell me about the axolotl", assistant: ["It regrows limbs."] }] });
    expect((await list(noKey())).find((r) => r.id === added.sessionId)?.turns).toBe(1);
    expect(await search("axolotl", noKey())).toEqual([added.sessionId]);
    await runOk(w.sb, ["sessions", "tag", added.sessionId, "amphibian"]);
    expect((await list(noKey())).find((r) => r.id === added.sessionId)?.tags).toEqual(["amphibian"]);
    rmSync(added.file);
    expect((await list(noKey())).some((r) => r.id === added.sessionId)).toBe(false); // never snapshotted
  });

  it("is rebuilt from scratch when the cache folder is damaged or removed", async () => {
    const before = await list();
    const view = readdirSync(catalogDir()).find((f) => f.startsWith("view-"))!;
    writeFileSync(path.join(catalogDir(), view), "{ not json");
    expect(await list()).toEqual(before);
    rmSync(catalogDir(), { recursive: true });
    expect(await list()).toEqual(before);
  });
});

