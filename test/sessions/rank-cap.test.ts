// The search library on a real index: rowids name their session and grow with recency, so a rank
// cap keeps the newest matches; a session that grew gets a new, newest segment holding only its
// new lines, with the results of a full rebuild; filters hold under a cap.

import { randomBytes } from "node:crypto";
import { appendFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { SessionCatalog } from "../../src/sessions/catalog.js";
import { ENTRY_SLOTS, SearchIndex, searchIndexFile, type SyncReport } from "../../src/sessions/search-index.js";
import { runQuery, type QueryOptions } from "../../src/sessions/search-query.js";
import { makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
const made: PiSessionResult[] = [];
beforeAll(async () => {
  sb = makeSandbox("rank-cap");
  // Oldest first: each session mentions the walrus twice (prompt and answer).
  for (const name of ["first", "second", "third"]) {
    made.push(await makePiSession({ agentDir: sb.agentDir, cwd: path.join(sb.root, "work", name), turns: [{ user: `The ${name} walrus question`, assistant: [`A ${name} walrus answer.`] }] }));
    await new Promise((r) => setTimeout(r, 5)); // distinct activity times
  }
});
afterAll(() => sb?.cleanup());

async function withIndex<T>(fn: (index: SearchIndex, catalog: SessionCatalog, sync: SyncReport) => Promise<T> | T): Promise<T> {
  const config = loadConfig({}, sb.env);
  const catalog = await SessionCatalog.build({ config, repo: null, env: sb.env });
  const index = await SearchIndex.open(config.dataDir);
  try {
    const sync = await index.sync(catalog, false);
    return await fn(index, catalog, sync);
  } finally {
    index.close();
    await catalog.close();
  }
}

const opts = (catalog: SessionCatalog, rankCap: number, only?: string): QueryOptions => ({
  allowed: (id) => (only ? id === only : catalog.has(id)),
  record: (id) => catalog.record(id),
  limit: 10,
  hitsPerSession: 3,
  rankCap,
  source: catalog,
});
const ids = (r: Awaited<ReturnType<typeof runQuery>>) => r.results.map((x) => x.session.id).sort();

describe("search ranking over a capped set of matches", () => {
  it("ranks every match without a cap, and only the newest ones under a cap", async () => {
    await withIndex(async (index, catalog) => {
      const all = await runQuery(index, "walrus", opts(catalog, 0));
      expect(ids(all)).toEqual(made.map((m) => m.sessionId).sort());
      expect(all.capped).toBeUndefined();
      expect((await runQuery(index, "walrus", opts(catalog, 6))).capped).toBeUndefined(); // exactly at the cap

      const newest = await runQuery(index, "walrus", opts(catalog, 2));
      expect(newest.capped).toEqual({ ranked: 2 });
      expect(ids(newest)).toEqual([made[2].sessionId]);
      expect(newest.results[0].hits.map((h) => h.snippet).join(" ")).toContain("«walrus»");
      expect(newest.results[0].hits.every((h) => h.entryId && h.kind && h.timestamp)).toBe(true);
      // Rowids name their segment (and so their session): sid * ENTRY_SLOTS + position.
      const sids = index.db.prepare("SELECT sid FROM segments ORDER BY sid").all().map((r) => Number(r.sid));
      const rowids = index.db.prepare("SELECT id FROM entries").all().map((r) => Number(r.id));
      expect(new Set(rowids.map((id) => Math.floor(id / ENTRY_SLOTS)))).toEqual(new Set(sids));
    });
  });

  it("applies filters before the cap, and moves a re-indexed session to the top", async () => {
    await withIndex(async (index, catalog) => {
      const oldest = await runQuery(index, "walrus", opts(catalog, 2, made[0].sessionId));
      expect(ids(oldest)).toEqual([made[0].sessionId]); // the newest two of *its* matches
    });
    // A new user message appended to the oldest session, as pi appends it: its new segment is the newest.
    appendUserMessage(made[0].file, "One more walrus");
    await withIndex(async (index, catalog, sync) => {
      expect(sync).toMatchObject({ indexed: 1, appended: 1 });
      expect(ids(await runQuery(index, "walrus", opts(catalog, 1)))).toEqual([made[0].sessionId]);
    });
  });

  it("indexes only the lines a session gained, with the results of a full rebuild; a rewrite is indexed whole", async () => {
    appendUserMessage(made[1].file, "Is the kraken real?");
    appendUserMessage(made[1].file, "And does the walrus fear the kraken?");
    // Sorted: equal scores may come in either order (ties follow rowids, which differ).
    const scores = (r: Awaited<ReturnType<typeof runQuery>>) => r.results.map((x) => `${x.score.toFixed(9)} ${x.session.id} ${x.matches} ${x.hits.map((h) => h.entryId).sort().join(",")}`).sort();
    const grown = await withIndex(async (index, catalog, sync) => {
      expect(sync).toMatchObject({ indexed: 1, appended: 1 });
      return Promise.all(["walrus", "kraken"].map(async (q) => scores(await runQuery(index, q, opts(catalog, 0)))));
    });
    expect(grown[1]).toHaveLength(1);
    rmSync(searchIndexFile(loadConfig({}, sb.env).dataDir));
    const rebuilt = await withIndex(async (index, catalog, sync) => {
      expect(sync).toMatchObject({ indexed: 3, appended: 0 });
      return Promise.all(["walrus", "kraken"].map(async (q) => scores(await runQuery(index, q, opts(catalog, 0)))));
    });
    expect(grown).toEqual(rebuilt);

    // The header rewritten (same length, so only the edge check can tell), then a line appended.
    const text = readFileSync(made[2].file, "utf8");
    writeFileSync(made[2].file, text.replace(/"cwd":"([^"]*)third/, '"cwd":"$1THIRD'));
    appendUserMessage(made[2].file, "walrus again");
    await withIndex(async (index, catalog, sync) => {
      expect(sync).toMatchObject({ indexed: 1, appended: 0 });
      expect(ids(await runQuery(index, "walrus", opts(catalog, 0)))).toEqual(made.map((m) => m.sessionId).sort());
    });
  });
});

describe("two searches indexing the same growth at once", () => {
  it("store the new lines once", async () => {
    appendUserMessage(made[1].file, "A leviathan appears");
    const config = loadConfig({}, sb.env);
    const catalog = await SessionCatalog.build({ config, repo: null, env: sb.env });
    const [a, b] = [await SearchIndex.open(config.dataDir), await SearchIndex.open(config.dataDir)];
    try {
      const reports = await Promise.all([a.sync(catalog, false), b.sync(catalog, false)]);
      expect(reports.map((r) => r.appended).sort()).toEqual([0, 1]);
      const count = (ix: SearchIndex) => Number(ix.db.prepare("SELECT count(*) AS n FROM entries").get()!.n);
      const appended = count(a);
      a.close();
      b.close();
      rmSync(searchIndexFile(config.dataDir));
      const fresh = await SearchIndex.open(config.dataDir);
      await fresh.sync(catalog, false);
      expect(appended).toBe(count(fresh)); // no line indexed twice
      fresh.close();
    } finally {
      await catalog.close();
    }
  });
});

/** Append a user message the way pi does: one line whose parent is the last entry. */
function appendUserMessage(file: string, text: string): void {
  const lines = readFileSync(file, "utf8").trim().split("\n");
  const now = new Date();
  const entry = { type: "message", id: randomBytes(4).toString("hex"), parentId: JSON.parse(lines[lines.length - 1]).id, timestamp: now.toISOString(), message: { role: "user", content: [{ type: "text", text }], timestamp: now.getTime() } };
  appendFileSync(file, JSON.stringify(entry) + "\n");
}
