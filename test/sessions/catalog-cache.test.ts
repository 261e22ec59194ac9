// The catalog's caches through the real CLI: a warm list or search answers from the cached view
// without the repository key; a new snapshot is decrypted (and needs the key) on its own and
// extends each file's runs of unchanged snapshots; removed snapshots shorten the runs, and a
// deleted session whose newest copy went with them is read from an older snapshot; live changes
// show at once.

import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
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
  versions: { first: { snapshotId: string }; last: { snapshotId: string }; snapshots: number; size: number }[];
  snapshotCount: number;
  lastSnapshot: { snapshotId: string } | null;
}

/** Snapshot ids in the order they were taken. */
const snapshots: string[] = [];
const runs = (r: Row) => r.versions.map((v) => [v.first.snapshotId, v.last.snapshotId, v.snapshots]);

/** Append a user message the way pi appends one: a new line whose parent is the last entry. */
function appendEntry(file: string, text: string): void {
  const lines = readFileSync(file, "utf8").trim().split("\n");
  const now = new Date();
  const entry = { type: "message", id: randomBytes(4).toString("hex"), parentId: JSON.parse(lines[lines.length - 1]).id, timestamp: now.toISOString(), message: { role: "user", content: [{ type: "text", text }], timestamp: now.getTime() } };
  appendFileSync(file, JSON.stringify(entry) + "\n");
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
const history = () => JSON.parse(readFileSync(path.join(repoCatalog(), "history.json"), "utf8")).value as { snapshots: { id: string }[]; files: { runs: unknown[] }[] };

describe("the sessions catalog cache", () => {
  it("answers a warm list and search without the repository key", async () => {
    const withKey = await list();
    expect(await search("pelicans")).toEqual([w.gone.sessionId]);
    expect(existsSync(path.join(repoCatalog(), "history.json"))).toBe(true);
    expect(await list(noKey())).toEqual(withKey);
    expect(await search("pelicans", noKey())).toEqual([w.gone.sessionId]); // snapshot-only, from the index
  });

  it("decrypts a new snapshot on its own (it needs the key), extending each file's run of unchanged snapshots", async () => {
    const second = await snapshot(w.sb);
    const denied = await run(w.sb, ["sessions", "list"], noKey());
    expect(expectOneLineError(denied, 1)).toMatch(/password|key/i);
    const rows = await list();
    const main = rows.find((r) => r.id === w.main.sessionId)!;
    expect(runs(main)).toEqual([[w.snapshotId, second.snapshotId, 2]]); // same bytes in both: one version
    expect(main).toMatchObject({ snapshotCount: 2, lastSnapshot: { snapshotId: second.snapshotId } });
    expect(runs(rows.find((r) => r.id === w.gone.sessionId)!)).toEqual([[w.snapshotId, w.snapshotId, 1]]);
    expect(history().snapshots.map((s) => s.id)).toEqual([w.snapshotId, second.snapshotId]);
    expect(await list(noKey())).toEqual(rows); // cached again
    snapshots.push(w.snapshotId, second.snapshotId);
  });

  it("keeps versions, not snapshots times files: many snapshots of one changing session stay small", async () => {
    const runCount = () => history().files.reduce((n, f) => n + f.runs.length, 0);
    const before = runCount();
    for (let i = 0; i < 8; i++) {
      appendEntry(w.main.file, `walrus note ${i}`);
      snapshots.push((await snapshot(w.sb)).snapshotId);
    }
    const rows = await list();
    const main = rows.find((r) => r.id === w.main.sessionId)!;
    expect(runs(main)).toEqual([[snapshots[0], snapshots[1], 2], ...snapshots.slice(2).map((id) => [id, id, 1])]);
    expect(main.versions.at(-1)!.size).toBe(statSync(w.main.file).size);
    const fixture = rows.find((r) => r.id === "d703a1a9-1b7b-4fb1-b512-c9738b1fe617")!;
    expect(runs(fixture)).toEqual([[snapshots[0], snapshots[9], 10]]); // unchanged: one run over all ten
    expect(existsSync(path.join(repoCatalog(), "snapshots"))).toBe(false); // no per-snapshot file lists
    // Eight snapshots added eight runs, all to the one file that changed; the others' runs grew longer.
    expect(runCount()).toBe(before + 8);
  });

  it("shortens the runs when snapshots disappear, and reads an older copy when the newest is gone", async () => {
    // A session changed between two snapshots, then deleted from disk.
    const victim = await makePiSession({ agentDir: w.sb.agentDir, cwd: path.join(w.sb.root, "work", "epsilon"), turns: [{ user: "Tell me about the narwhal", assistant: ["It has a tusk."] }] });
    const older = (await snapshot(w.sb)).snapshotId;
    appendEntry(victim.file, "narwhal follow-up");
    const newer = (await snapshot(w.sb)).snapshotId;
    rmSync(victim.file);
    const entries = async () => (await runOk(w.sb, ["export", victim.sessionId, "--format", "json"])).json<{ entries: unknown[] }>().entries.length;
    const withFollowUp = await entries();

    rmSync(path.join(w.sb.repo, "snapshots", newer)); // as a forget would
    rmSync(path.join(w.sb.repo, "snapshots", w.snapshotId));
    const rows = await list();
    expect(rows.some((r) => r.id === w.gone.sessionId)).toBe(false); // it was only in the first snapshot
    const v = rows.find((r) => r.id === victim.sessionId)!;
    expect(v).toMatchObject({ deleted: true, snapshotCount: 1, lastSnapshot: { snapshotId: older } });
    expect(await entries()).toBe(withFollowUp - 1); // the older copy, read from its snapshot
    expect(history().snapshots.map((s) => s.id)).not.toContain(w.snapshotId);
    expect(await search("pelicans")).toEqual([]); // and the index forgets the gone session
    expect(await search("narwhal")).toEqual([victim.sessionId]);

    // A snapshot that comes back is older than the newest known one: every snapshot is walked again.
    const back = path.join(w.sb.repo, "snapshots", snapshots[3]);
    const away = path.join(w.sb.root, "snapshot-away");
    renameSync(back, away);
    const without = await list();
    const mainCount = (rs: Row[]) => rs.find((r) => r.id === w.main.sessionId)!.snapshotCount;
    expect([mainCount(rows), mainCount(without)]).toEqual([10, 9]);
    renameSync(away, back);
    expect(await list()).toEqual(rows);
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

