// What every kind of query returns on a fixed corpus (the real fixtures and a generated set, one
// session of which grew after it was indexed), pinned: the ranked sessions, their scores, match
// counts, hits and snippets were recorded from the FTS5 index that stored a copy of the text
// (schema 6), and any later layout of the index must return exactly the same.
// Record again (only when a change of results is intended): PIN_RECORD=1 npx vitest run <this file>.
//
// NEAR: the user's words never reach FTS5 as syntax (ftsQuery), so "a NEAR b" is three words;
// that is pinned too.

import { appendFileSync, existsSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { SessionCatalog } from "../../src/sessions/catalog.js";
import Database from "better-sqlite3";
import { SearchIndex, searchIndexFile } from "../../src/sessions/search-index.js";
import { runQuery, type QueryOptions } from "../../src/sessions/search-query.js";
import { copyFixtures, makeSandbox, writeFileExact, type Sandbox } from "../helpers/tmp.js";

const PINNED = path.join(import.meta.dirname, "search-pinned.json");

const WORDS = ("walrus kraken zebrafish pelican quokka narwhal otter heron badger lynx compile compiler compiling " +
  "compiled build builds building test tests testing deploy deployment running runs ran café naïve résumé " +
  "database index query snippet phrase prefix ranking error errors failed failure retry timeout socket " +
  "the a of and to in is it for on with as").split(" ");

/** A fixed sequence of numbers in [0, 1): the corpus is the same on every run. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function sentence(rand: () => number, n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(WORDS[Math.floor(rand() * WORDS.length)]);
  return out.join(" ") + ".";
}

const sessionId = (i: number) => `0000${String(i).padStart(4, "0")}-aaaa-4bbb-8ccc-${String(i).padStart(12, "0")}`;

/** A v3 pi session: user prompts, answers with thinking and tool calls, tool results. */
function generatedSession(i: number, rand: () => number): { file: string; lines: string[]; last: string; time: number } {
  const start = Date.UTC(2026, 0, 1) + i * 3_600_000;
  const lines = [JSON.stringify({ type: "session", version: 3, id: sessionId(i), timestamp: new Date(start).toISOString(), cwd: `/work/gen${i % 4}` })];
  let parent: string | null = null;
  let t = start;
  const add = (message: object) => {
    const id = `${String(i).padStart(4, "0")}${String(lines.length).padStart(4, "0")}`;
    t += 1000;
    lines.push(JSON.stringify({ type: "message", id, parentId: parent, timestamp: new Date(t).toISOString(), message: { ...message, timestamp: t } }));
    parent = id;
  };
  const turns = 2 + Math.floor(rand() * 4);
  for (let k = 0; k < turns; k++) {
    add({ role: "user", content: [{ type: "text", text: sentence(rand, 4 + Math.floor(rand() * 12)) }] });
    const call = `call${i}_${k}`;
    add({ role: "assistant", content: [{ type: "thinking", thinking: sentence(rand, 10 + Math.floor(rand() * 30)) }, { type: "text", text: sentence(rand, 5 + Math.floor(rand() * 60)) }, { type: "toolCall", id: call, name: "bash", arguments: { command: `grep ${WORDS[k % WORDS.length]} src` } }], provider: "anthropic", model: "claude-sonnet-4-5", stopReason: "toolUse" });
    add({ role: "toolResult", toolCallId: call, toolName: "bash", content: [{ type: "text", text: Array.from({ length: 1 + Math.floor(rand() * 8) }, () => sentence(rand, 8)).join("\n") }], isError: rand() < 0.2 });
  }
  return { file: path.join(`--gen${i % 4}--`, `${sessionId(i)}.jsonl`), lines, last: parent!, time: t };
}

let sb: Sandbox;
let grownFile = "";
let grownLast = "";
beforeAll(() => {
  sb = makeSandbox("search-pinned");
  copyFixtures(sb.agentDir);
  const rand = prng(20);
  for (let i = 0; i < 40; i++) {
    const s = generatedSession(i, rand);
    const file = path.join(sb.sessionsDir, s.file);
    writeFileExact(file, s.lines.join("\n") + "\n", 0o644);
    utimesSync(file, s.time / 1000, s.time / 1000);
    if (i === 7) [grownFile, grownLast] = [file, s.last];
  }
});
afterAll(() => sb?.cleanup());

async function withIndex<T>(fn: (index: SearchIndex, catalog: SessionCatalog) => Promise<T>): Promise<T> {
  const config = loadConfig({}, sb.env);
  const catalog = await SessionCatalog.build({ config, repo: null, env: sb.env });
  const index = await SearchIndex.open(config.dataDir);
  try {
    await index.sync(catalog, true);
    return await fn(index, catalog);
  } finally {
    index.close();
    await catalog.close();
  }
}

interface Case {
  query: string;
  limit?: number;
  hitsPerSession?: number;
  rankCap?: number;
  /** Only the sessions whose id ends in an even digit may be shown (a list filter). */
  even?: boolean;
}

const CASES: Case[] = [
  { query: "walrus" },
  { query: "kraken", limit: 100, hitsPerSession: 100 },
  { query: "files" }, // the fixtures
  { query: "compaction" },
  { query: "WALRUS Kraken" }, // every word must occur, in any case
  { query: "compil*" }, // prefix
  { query: "c*", limit: 5 },
  { query: "run" }, // porter: running, runs
  { query: "cafe naive" }, // diacritics removed
  { query: '"walrus kraken"', limit: 100 }, // phrase
  { query: '"the walrus"', hitsPerSession: 10 },
  { query: '"read the file"' },
  { query: '"walrus kraken" otter' },
  { query: "walrus NEAR kraken" }, // no NEAR: three words
  { query: "zebrafish", rankCap: 5, limit: 100 }, // only the newest five matches ranked
  { query: "heron", even: true, limit: 100 },
  { query: "grep bash" }, // tool calls
  { query: "user-message-selector" }, // punctuation splits words
  { query: "appended leviathan" }, // only in the grown session's new lines
  { query: "nosuchwordanywhere" },
];

async function runCase(index: SearchIndex, catalog: SessionCatalog, c: Case) {
  const opts: QueryOptions = {
    allowed: (id) => catalog.has(id) && (!c.even || Number(id.at(-1)) % 2 === 0),
    record: (id) => catalog.record(id),
    limit: c.limit ?? 20,
    hitsPerSession: c.hitsPerSession ?? 3,
    rankCap: c.rankCap ?? 0,
    source: catalog,
  };
  const r = await runQuery(index, c.query, opts);
  return {
    query: c.query,
    capped: r.capped ?? null,
    results: r.results.map((x) => ({
      session: x.session.id,
      score: x.score.toFixed(6),
      matches: x.matches,
      hits: x.hits.map((h) => ({ entryId: h.entryId, kind: h.kind, timestamp: h.timestamp, score: h.score.toFixed(6), snippet: h.snippet })),
    })),
  };
}

describe("search results on a fixed corpus", () => {
  it("are the pinned ones for every kind of query, before and after a session grew", async () => {
    const before = await withIndex(async (index, catalog) => {
      const out = [];
      for (const c of CASES) out.push(await runCase(index, catalog, c));
      return out;
    });
    // The grown session is indexed again from its new lines only (a new segment).
    const t = Date.UTC(2026, 5, 1);
    appendFileSync(grownFile, JSON.stringify({ type: "message", id: "grown001", parentId: grownLast, timestamp: new Date(t).toISOString(), message: { role: "user", content: [{ type: "text", text: "An appended leviathan walrus question." }], timestamp: t } }) + "\n");
    const after = await withIndex(async (index, catalog) => {
      const out = [];
      for (const c of CASES) out.push(await runCase(index, catalog, c));
      return out;
    });
    const got = { before, after };
    if (process.env.PIN_RECORD === "1" || !existsSync(PINNED)) {
      if (process.env.PIN_RECORD !== "1") throw new Error(`${PINNED} is missing: record it with PIN_RECORD=1`);
      writeFileSync(PINNED, JSON.stringify(got, null, 1) + "\n");
    }
    const pinned = JSON.parse(readFileSync(PINNED, "utf8")) as typeof got;
    // Sanity: the corpus exercises what it claims to.
    expect(before.find((r) => r.query === "walrus")!.results.length).toBeGreaterThan(3);
    expect(before.find((r) => r.query === '"walrus kraken"')!.results.length).toBeGreaterThan(0);
    expect(before.find((r) => r.query === "zebrafish")!.capped).toEqual({ ranked: 5 });
    expect(before.find((r) => r.query === "appended leviathan")!.results).toEqual([]);
    expect(after.find((r) => r.query === "appended leviathan")!.results).toHaveLength(1);
    for (const key of ["before", "after"] as const) {
      for (let i = 0; i < CASES.length; i++) expect(got[key][i], `${key}: ${CASES[i].query}`).toEqual(pinned[key][i]);
    }
  });
});

describe("the index keeps words, not text", () => {
  it("stores no copy of the text, and finds a hit's text again only as it was indexed", async () => {
    await withIndex(async (index, catalog) => {
      const sql = String(index.db.prepare("SELECT sql FROM sqlite_master WHERE name = 'fts'").get()!.sql);
      expect(sql).toMatch(/content=''/);
      expect(index.db.prepare("SELECT name FROM sqlite_master WHERE name = 'fts_content'").get()).toBeUndefined();
      expect(index.db.prepare("SELECT count(*) AS n FROM pragma_table_info('entries') WHERE name = 'text'").get()!.n).toBe(0);

      const r = await runQuery(index, "kraken", { allowed: (id) => id === sessionId(3), record: (id) => catalog.record(id), limit: 1, hitsPerSession: 1, rankCap: 0, source: catalog });
      const rid = Number(index.db.prepare("SELECT id FROM entries WHERE entry_id = ?").get(r.results[0].hits[0].entryId)!.id);
      const bytes = await catalog.readBytes(sessionId(3));
      const text = (await index.entryTexts(catalog, [rid])).get(rid)!;
      expect(text).toMatch(/kraken/i);
      // The same line moved (a rewrite the index has not seen): the segment is parsed again and the entry found by id.
      const header = bytes.indexOf(0x0a) + 1;
      const moved = Buffer.concat([bytes.subarray(0, header), Buffer.from("\n\n"), bytes.subarray(header)]);
      expect((await index.entryTexts({ readBytes: async () => moved }, [rid])).get(rid)).toBe(text);
      // Its line now holds another entry, or the session is gone: no text, so no snippet, rather than a wrong one.
      const other = Buffer.from(bytes.toString("utf8").replace(r.results[0].hits[0].entryId, "deadbeef"));
      expect((await index.entryTexts({ readBytes: async () => other }, [rid])).has(rid)).toBe(false);
      expect((await index.entryTexts({ readBytes: () => Promise.reject(new Error("ENOENT")) }, [rid])).size).toBe(0);
    });
  });

  it("drops an index of the old layout (schema 6, a copy of the text) and gives its pages back", async () => {
    const file = searchIndexFile(loadConfig({}, sb.env).dataDir);
    for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
    const old = new Database(file);
    old.exec("CREATE TABLE info (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO info VALUES ('schema', '6');");
    old.exec("CREATE TABLE entries (id INTEGER PRIMARY KEY, entry_id TEXT NOT NULL, kind TEXT NOT NULL, ts TEXT NOT NULL, text TEXT NOT NULL);");
    const insert = old.prepare("INSERT INTO entries (entry_id, kind, ts, text) VALUES ('x', 'user', '', ?)");
    for (let i = 0; i < 200; i++) insert.run("walrus ".repeat(2000));
    old.close();
    const oldSize = statSync(file).size;
    expect(oldSize).toBeGreaterThan(2_000_000);
    const reopened = await SearchIndex.open(loadConfig({}, sb.env).dataDir);
    reopened.db.pragma("wal_checkpoint(TRUNCATE)");
    reopened.close();
    expect(statSync(file).size).toBeLessThan(100_000); // VACUUM gave the old text's pages back
    const results = await withIndex(async (index, catalog) => {
      expect(index.db.prepare("SELECT value FROM info WHERE key = 'schema'").get()!.value).toBe("7");
      return runCase(index, catalog, { query: "walrus" });
    });
    expect(results).toEqual((JSON.parse(readFileSync(PINNED, "utf8")) as { after: unknown[] }).after[0]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});
