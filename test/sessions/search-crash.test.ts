// kill -9 while `sessions search` builds its index. The index is derived data and each session
// is indexed in its own transaction: after any kill the next search resumes where the dead one
// stopped, SQLite's and FTS5's integrity checks pass, and the results equal those of a build that
// was never interrupted.

import { rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateAgentDir } from "../../bench/generate.js";
import { Prng } from "../../bench/prng.js";
import { loadTextPool } from "../../bench/textPool.js";
import { collect, PROJECT_ROOT, spawnCli } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { SearchIndex, searchIndexFile } from "../../src/sessions/search-index.js";
import { runOk } from "./cli.js";

const MIB = 1024 * 1024;
const KILLS = 5;
const MAX_ROUNDS = 12;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface SearchJson {
  index: { sessions: number; indexed: number };
  results: { session: { id: string }; score: number; matches: number }[];
}

let sb: Sandbox;
beforeAll(() => {
  sb = makeSandbox("search-crash");
  const pool = loadTextPool(path.join(PROJECT_ROOT, "node_modules"), 8 * MIB);
  // Many small sessions (3 per call), so a kill lands between sessions as well as inside one.
  for (let i = 0; i < 10; i++) generateAgentDir({ out: sb.agentDir, sizeBytes: 3 * MIB, seed: `search-crash-${i}`, pool });
});
afterAll(() => sb?.cleanup());

const dataDir = () => path.join(sb.dataHome, "pi-guard");
const removeIndex = () => {
  const file = searchIndexFile(dataDir());
  for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
};
const ranked = (r: SearchJson) => r.results.map((x) => `${x.session.id} ${x.score.toFixed(6)} ${x.matches}`);

/** SQLite's page-level check and FTS5's check that the full-text index matches its content table. */
async function assertIndexSound(): Promise<void> {
  const index = await SearchIndex.open(dataDir());
  try {
    expect(index.db.prepare("PRAGMA integrity_check").all()).toEqual([{ integrity_check: "ok" }]);
    index.db.exec("INSERT INTO fts(fts) VALUES('integrity-check')"); // throws when they disagree
  } finally {
    index.close();
  }
}

describe("kill -9 while the search index is built", () => {
  it(`resumes after ${KILLS} kills and ends with the results of an uninterrupted build`, { timeout: 300_000 }, async () => {
    const search = async () => (await runOk(sb, ["--json", "sessions", "search", "--live", "function"])).json<SearchJson>();
    const started = Date.now();
    const reference = await search();
    const fullMs = Date.now() - started;
    expect(reference.index.indexed).toBe(reference.index.sessions);
    expect(reference.index.sessions).toBeGreaterThanOrEqual(30);
    expect(reference.results.length).toBeGreaterThan(0);

    const prng = new Prng("search-crash");
    let killedMidway = 0;
    let resumed = 0; // rounds whose next search found part of the work done
    for (let round = 0; killedMidway < KILLS && round < MAX_ROUNDS; round++) {
      removeIndex();
      const delay = 100 + Math.floor(prng.next() * Math.max(1, fullMs - 100));
      const child = spawnCli(sb, ["--json", "sessions", "search", "--live", "function"]);
      const done = collect(child);
      await sleep(delay);
      child.kill("SIGKILL");
      if ((await done).signal === "SIGKILL") killedMidway++;

      const next = await search();
      if (next.index.indexed > 0 && next.index.indexed < next.index.sessions) resumed++;
      expect(ranked(next), `round ${round}, killed after ${delay} ms`).toEqual(ranked(reference));
      expect((await search()).index.indexed).toBe(0);
      await assertIndexSound();
    }
    expect(killedMidway).toBe(KILLS);
    expect(resumed).toBeGreaterThan(0);
  });
});
