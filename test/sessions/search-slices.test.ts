// A large version 3 session is parsed for the index a slice of lines at a time (search-index.ts,
// SLICE_BYTES), to bound the cold build's memory. What it indexes must be exactly what parsing
// the whole file gives: the same entries at the same rowids, the same line ranges, the same words.

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { SessionCatalog } from "../../src/sessions/catalog.js";
import { loadSessionBytes } from "../../src/sessions/read.js";
import { ENTRY_SLOTS, SearchIndex } from "../../src/sessions/search-index.js";
import { runQuery } from "../../src/sessions/search-query.js";
import { indexedEntry } from "../../src/sessions/search-text.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

const ID = "0190aaaa-aaaa-7bbb-8ccc-000000000001";
const FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ".repeat(40);

/** About 3.5 MiB of lines: user and assistant messages, tool results, lines with nothing to index, and one line of several KB. */
function bigSession(): { bytes: Buffer; marks: string[] } {
  const lines = [JSON.stringify({ type: "session", version: 3, id: ID, timestamp: "2026-01-01T00:00:00.000Z", cwd: "/work/big" })];
  const marks: string[] = [];
  let parent: string | null = null;
  for (let i = 0; lines.join("\n").length < 3.5 * 1024 * 1024 || i < 10; i++) {
    const id = `e${String(i).padStart(7, "0")}`;
    const mark = `mark${i}x`;
    marks.push(mark);
    const t = Date.UTC(2026, 0, 1) + i * 1000;
    const message =
      i % 7 === 3
        ? { role: "toolResult", toolCallId: `c${i}`, toolName: "bash", content: [{ type: "text", text: `${mark} ${FILLER}` }], isError: false, timestamp: t }
        : i % 11 === 5
          ? { role: "assistant", content: [], provider: "anthropic", model: "m", stopReason: "stop", timestamp: t } // nothing to index
          : { role: i % 2 ? "assistant" : "user", content: [{ type: "text", text: `${mark} ${i % 97 === 0 ? FILLER.repeat(3) : FILLER.slice(0, 200 + (i % 13) * 50)}` }], timestamp: t };
    lines.push(JSON.stringify({ type: "message", id, parentId: parent, timestamp: new Date(t).toISOString(), message }));
    parent = id;
  }
  return { bytes: Buffer.from(lines.join("\n") + "\n"), marks };
}

let sb: Sandbox;
let big: { bytes: Buffer; marks: string[] };
beforeAll(() => {
  sb = makeSandbox("search-slices");
  big = bigSession();
  const dir = path.join(sb.sessionsDir, "--work-big--");
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `2026-01-01T00-00-00-000Z_${ID}.jsonl`), big.bytes);
});
afterAll(() => sb?.cleanup());

describe("a large session indexed in slices", () => {
  it("holds the entries, line ranges and words of parsing the whole file at once", async () => {
    expect(big.bytes.length).toBeGreaterThan(3 * 1024 * 1024);
    // What the whole file gives: the indexed entries in order, each with its line's byte range.
    const whole = loadSessionBytes(big.bytes, ID);
    const starts = [0];
    for (let i = big.bytes.indexOf(0x0a); i !== -1 && i + 1 < big.bytes.length; i = big.bytes.indexOf(0x0a, i + 1)) starts.push(i + 1);
    const expected = whole.entries.flatMap((e, i) => {
      const ix = indexedEntry(e);
      if (!ix) return [];
      const at = starts[whole.entryLines[i] - 1];
      return [{ entryId: ix.entryId, lineAt: at, lineLen: big.bytes.indexOf(0x0a, at) - at, text: ix.text }];
    });
    expect(expected.length).toBeLessThan(whole.entries.length); // some entries have no text

    const config = loadConfig({}, sb.env);
    const catalog = await SessionCatalog.build({ config, repo: null, env: sb.env });
    const index = await SearchIndex.open(config.dataDir);
    try {
      const sync = await index.sync(catalog, true);
      expect(sync).toMatchObject({ indexed: 1, warnings: [] });
      const segments = index.db.prepare("SELECT sid, from_bytes FROM segments").all() as { sid: number; from_bytes: number }[];
      expect(segments).toHaveLength(1);
      expect(segments[0].from_bytes).toBe(0);
      const sid = segments[0].sid;
      const rows = index.db.prepare("SELECT id, entry_id, line_at, line_len FROM entries ORDER BY id").all() as { id: number; entry_id: string; line_at: number; line_len: number }[];
      expect(rows.map((r) => r.id)).toEqual(expected.map((_, i) => sid * ENTRY_SLOTS + i));
      expect(rows.map((r) => ({ entryId: r.entry_id, lineAt: r.line_at, lineLen: r.line_len }))).toEqual(expected.map(({ entryId, lineAt, lineLen }) => ({ entryId, lineAt, lineLen })));

      // Every entry's words are at its rowid: its own mark finds it and nothing else.
      const byMark = index.db.prepare("SELECT rowid AS rid FROM fts WHERE fts MATCH ?");
      for (const [i, e] of expected.entries()) {
        const mark = /(mark\d+x)/.exec(e.text)![1];
        expect(byMark.all(`"${mark}"`).map((r) => Number(r.rid)), mark).toEqual([sid * ENTRY_SLOTS + i]);
      }
      // A hit's snippet comes from its line, read again from the file.
      const last = /(mark\d+x)/.exec(expected.at(-1)!.text)![1];
      const r = await runQuery(index, last, { allowed: () => true, record: (id) => catalog.record(id), limit: 1, hitsPerSession: 1, rankCap: 0, source: catalog });
      expect(r.results[0].hits[0]).toMatchObject({ entryId: expected.at(-1)!.entryId });
      expect(r.results[0].hits[0].snippet).toContain(`«${last}»`);
    } finally {
      index.close();
      await catalog.close();
    }
  });
});
