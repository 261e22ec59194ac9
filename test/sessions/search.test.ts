// `sessions search` through the real CLI: ranked hits with snippets from live sessions, the real
// fixtures (v1 migrated in memory) and a snapshot-only session; list filters; an index that
// re-reads only changed sessions and can be deleted and rebuilt.

import { closeSync, existsSync, openSync, rmSync, statSync, truncateSync, writeSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOneLineError } from "../helpers/cli.js";
import { makePiSession } from "../helpers/pi-factory.js";
import { fingerprint, treeState } from "../helpers/tmp.js";
import { run, runOk } from "./cli.js";
import { makeWorld, type World } from "./world.js";

interface SearchJson {
  query: string;
  queryMs: number;
  index: { sessions: number; indexed: number; removed: number };
  results: { session: { id: string; deleted: boolean }; score: number; matches: number; hits: { entryId: string; kind: string; snippet: string }[] }[];
}

let w: World;
beforeAll(async () => {
  w = await makeWorld("search");
});
afterAll(() => w?.sb.cleanup());

const search = async (...args: string[]) => (await runOk(w.sb, ["--json", "sessions", "search", ...args])).json<SearchJson>();
const indexFile = () => path.join(w.sb.dataHome, "pi-guard", "search", "index.sqlite");

describe("sessions search", () => {
  it("finds words in live sessions, tool output, v1 fixtures and a snapshot-only session, with snippets", async () => {
    const before = fingerprint(treeState(w.sb.agentDir));
    const first = await search("zebrafish");
    expect(first.index.indexed).toBe(first.index.sessions); // cold: everything read once
    const ids = first.results.map((r) => r.session.id);
    expect(ids).toContain(w.main.sessionId);
    expect(ids).toContain(w.main.fork!.sessionId); // the fork copied the zebrafish turn
    expect(ids).not.toContain(w.gone.sessionId);
    const hit = first.results.find((r) => r.session.id === w.main.sessionId)!;
    expect(hit.hits.some((h) => h.snippet.includes("«zebrafish»"))).toBe(true);
    expect(hit.hits.map((h) => h.kind)).toContain("toolResult"); // what the read tool printed
    for (let i = 1; i < first.results.length; i++) expect(first.results[i - 1].score).toBeGreaterThanOrEqual(first.results[i].score);

    const gone = await search("pelican*");
    expect(gone.results.map((r) => r.session.id)).toEqual([w.gone.sessionId]);
    expect(gone.results[0].session.deleted).toBe(true);
    expect(gone.results[0].hits[0].snippet).toMatch(/«pelican/i); // kept in the index: no repository read
    expect(gone.index.indexed).toBe(0); // warm: nothing changed

    const v1 = await search('"user-message-selector"');
    expect(v1.results.map((r) => r.session.id)).toContain("d703a1a9-1b7b-4fb1-b512-c9738b1fe617");
    expect(fingerprint(treeState(w.sb.agentDir))).toEqual(before);
  });

  it("applies the list filters", async () => {
    expect((await search("zebrafish", "--project", "beta")).results).toEqual([]);
    expect((await search("pelicans", "--deleted")).results.map((r) => r.session.id)).toEqual([w.gone.sessionId]);
    expect((await search("zebrafish", "--deleted")).results).toEqual([]);
    expect((await search("zebrafish", "--since", "2999-01-01")).results).toEqual([]);
    expect((await search("zebrafish", "--limit", "1")).results).toHaveLength(1);
    // --live hides the snapshot-only session without dropping it from the index.
    expect((await search("pelicans", "--live")).results).toEqual([]);
    const again = await search("pelicans");
    expect(again.results.map((r) => r.session.id)).toEqual([w.gone.sessionId]);
    expect(again.index.indexed).toBe(0);
  });

  it("re-indexes only the sessions that changed, and rebuilds a deleted index", async () => {
    const added = await makePiSession({ agentDir: w.sb.agentDir, cwd: path.join(w.sb.root, "work", "gamma"), turns: [{ user: "Tell me about the quokka", assistant: ["The quokka is a small marsupial."] }] });
    const r = await search("quokka");
    expect(r.index.indexed).toBe(1);
    expect(r.results.map((x) => x.session.id)).toEqual([added.sessionId]);
    const human = await runOk(w.sb, ["sessions", "search", "quokka"]);
    // The id as sessions list shows it: at least 8 characters, more when another id shares them.
    expect(human.stdout).toMatch(new RegExp(`^${added.sessionId.slice(0, 8)}\\S* `, "m"));
    expect(human.stdout).toMatch(/«quokka»/);
    expect(human.stdout).toMatch(/1 session in [\d.]+ ms/);

    rmSync(indexFile());
    const rebuilt = await search("quokka");
    expect(rebuilt.index.indexed).toBe(rebuilt.index.sessions);
    expect(rebuilt.results.map((x) => x.session.id)).toEqual([added.sessionId]);
  });

  it("rebuilds a damaged index instead of failing: a broken header, then a truncated file", async () => {
    const expectRebuilt = (r: SearchJson) => {
      expect(r.index.indexed).toBe(r.index.sessions);
      expect(r.results.map((x) => x.session.id)).toContain(w.main.sessionId);
    };
    expect((await search("zebrafish")).index.indexed).toBe(0);
    const fd = openSync(indexFile(), "r+");
    writeSync(fd, Buffer.alloc(100, 0x5a), 0, 100, 0); // SQLite's header is the first 100 bytes
    closeSync(fd);
    expectRebuilt(await search("zebrafish"));
    truncateSync(indexFile(), Math.floor(statSync(indexFile()).size / 2));
    expectRebuilt(await search("zebrafish"));
    expect((await search("zebrafish")).index.indexed).toBe(0);
  });

  it("gives one clear line for bad input and never passes FTS syntax through", async () => {
    expect(expectOneLineError(await run(w.sb, ["sessions", "search", "  ** "]), 2)).toMatch(/nothing to search for/);
    expect(expectOneLineError(await run(w.sb, ["sessions", "search", "x", "--limit", "0"]), 2)).toMatch(/--limit/);
    expect(expectOneLineError(await run(w.sb, ["sessions", "search", "x", "--since", "soonish"]), 2)).toMatch(/--since/);
    const odd = await search('zebrafish AND ( NEAR "');
    expect(odd.results.map((r) => r.session.id)).toEqual([]); // "and" and "near" are words, all must occur
    expect((await search("ZEBRAFISH")).results.length).toBeGreaterThan(0);
    expect(existsSync(indexFile())).toBe(true);
    expect(statSync(indexFile()).mode & 0o777).toBe(0o600); // it holds session text
  });
});
