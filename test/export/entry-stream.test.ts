// The streaming reader must see a session exactly as loadSessionBytes + sessionView do: the same
// migrated entries, branch, labels, name and stats, on real pi files and on damaged ones.

import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { bufferSource, openSessionStream, type SessionStream } from "../../src/export/entry-stream.js";
import { sessionStats } from "../../src/model/stats.js";
import { type SessionEntry } from "../../src/model/session.js";
import { loadSessionBytes } from "../../src/sessions/read.js";
import { sessionView } from "../../src/sessions/view.js";
import { FIXTURES_DIR } from "../helpers/tmp.js";

async function collect(it: AsyncIterable<SessionEntry>): Promise<SessionEntry[]> {
  const out: SessionEntry[] = [];
  for await (const e of it) out.push(e);
  return out;
}

async function expectSameAsLoaded(bytes: Buffer, branch?: string, budget?: number): Promise<SessionStream> {
  const loaded = loadSessionBytes(bytes, "fallback-id");
  const view = sessionView(loaded, branch);
  const s = await openSessionStream(bufferSource(bytes), { fallbackId: "fallback-id", branch, readAheadBudget: budget });
  expect(s.header).toEqual(loaded.header);
  expect(s.fromVersion).toBe(loaded.fromVersion);
  expect(s.issues).toBe(loaded.issues);
  expect(await collect(s.entries())).toEqual(loaded.entries);
  expect(await collect(s.branchEntries())).toEqual(view.path);
  expect(s.leafId).toBe(view.leafId);
  expect(s.leafCount).toBe(view.leaves.length);
  expect(s.labels).toEqual(view.labels);
  expect(s.name).toBe(view.name);
  expect(s.stats()).toEqual(sessionStats(loaded.entries));
  expect(s.stats(s.branch)).toEqual(sessionStats(view.path));
  return s;
}

const fixture = (rel: string) => readFileSync(path.join(FIXTURES_DIR, rel));
const lines = (...objs: unknown[]) => Buffer.from(objs.map((o) => (typeof o === "string" ? o : JSON.stringify(o))).join("\n") + "\n");
const header = { type: "session", version: 3, id: "11111111-2222-3333-4444-555555555555", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/p" };
const msg = (id: string, parentId: string | null, role: string, extra: Record<string, unknown> = {}) => ({
  type: "message",
  id,
  parentId,
  timestamp: "2026-01-01T00:00:01.000Z",
  message: { role, content: [{ type: "text", text: `${role} ${id}` }], timestamp: 1, ...extra },
});

describe("openSessionStream", () => {
  it.each(["pi-v3/branched.jsonl", "pi-v3/forked.jsonl", "pi-v3/legacy-v1-with-garbage-line.jsonl", "pi-mono-v1/before-compaction.jsonl", "pi-mono-v1/large-session.jsonl"])(
    "reads the real pi file %s as loadSessionBytes does",
    async (rel) => {
      await expectSameAsLoaded(fixture(rel));
    },
  );

  it("follows --branch to any entry, by unique prefix, and rejects unknown ones", async () => {
    const bytes = fixture("pi-v3/branched.jsonl");
    const { entries } = loadSessionBytes(bytes, "x");
    for (const e of entries.slice(0, 6)) await expectSameAsLoaded(bytes, e.id.slice(0, 6));
    await expect(openSessionStream(bufferSource(bytes), { fallbackId: "x", branch: "zzzz" })).rejects.toThrow(/no entry "zzzz"/);
  });

  it("reads damaged files as the in-memory parser does: no header, glued lines, v2 hook messages, torn tail", async () => {
    const a = msg("aaaaaaaa", null, "user");
    const b = msg("bbbbbbbb", "aaaaaaaa", "assistant", { provider: "p", model: "m", usage: { totalTokens: 5, cost: { total: 0.5 } } });
    const c = msg("cccccccc", "bbbbbbbb", "hookMessage");
    await expectSameAsLoaded(lines(a, b, c)); // headerless, with a v2 role: read as version 2
    await expectSameAsLoaded(lines(header, JSON.stringify(a) + JSON.stringify(b), c, '{"type":"message","id":"dd')); // glued + torn
    await expectSameAsLoaded(lines(JSON.stringify(header) + JSON.stringify(a), b)); // header glued to the first entry
    await expectSameAsLoaded(Buffer.from("")); // empty
    await expectSameAsLoaded(lines("\uFEFF" + JSON.stringify(header), "", "not json", a, { type: "session_info", id: "eeeeeeee", parentId: "aaaaaaaa", name: " named " }));
  });

  it("migrates v1 compactions that point forward and backward like pi does", async () => {
    const v1 = { type: "session", id: "v1-session", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/p" };
    const m = (role: string) => ({ type: "message", timestamp: "2025-01-01T00:00:01.000Z", message: { role, content: "hi", timestamp: 1 } });
    await expectSameAsLoaded(lines(v1, m("user"), m("assistant"), { type: "compaction", summary: "s", firstKeptEntryIndex: 1, tokensBefore: 3 }, { type: "compaction", summary: "t", firstKeptEntryIndex: 6 }, m("user"), { ...m("user"), id: "raw-id-1" }));
  });

  it("walks a hostile tree: a parent after its child, a cycle, duplicate ids", async () => {
    const s = await expectSameAsLoaded(lines(header, msg("cccccccc", "bbbbbbbb", "user"), msg("bbbbbbbb", "aaaaaaaa", "assistant"), msg("aaaaaaaa", "cccccccc", "user"), msg("aaaaaaaa", null, "user"), msg("dddddddd", "cccccccc", "user")));
    expect(s.branch.length).toBeGreaterThan(2);
    // The path runs against file order; a budget too small to read ahead forces re-reads.
    await expectSameAsLoaded(lines(header, msg("cccccccc", "bbbbbbbb", "user"), msg("bbbbbbbb", "aaaaaaaa", "assistant"), msg("aaaaaaaa", null, "user"), msg("dddddddd", "cccccccc", "user")), undefined, 0);
  });

  it("entriesAt yields any order, repeats included, whatever the read-ahead budget", async () => {
    const bytes = fixture("pi-v3/branched.jsonl");
    const { entries } = loadSessionBytes(bytes, "x");
    const order = [3, 0, 5, 5, 1, entries.length - 1, 0, 2];
    for (const budget of [0, 200, 1 << 20]) {
      const s = await openSessionStream(bufferSource(bytes), { fallbackId: "x", readAheadBudget: budget });
      expect(await collect(s.entriesAt(order))).toEqual(order.map((i) => entries[i]));
    }
  });

  it("fails rather than mix two versions when the bytes change between the passes", async () => {
    let calls = 0;
    const one = lines(header, msg("aaaaaaaa", null, "user"), msg("bbbbbbbb", "aaaaaaaa", "assistant"));
    const two = lines(header, msg("aaaaaaaa", null, "user"), msg("ffffffff", "aaaaaaaa", "assistant"));
    const s = await openSessionStream({ read: () => bufferSource(calls++ === 0 ? one : two).read() }, { fallbackId: "x" });
    await expect(collect(s.entries())).rejects.toThrow(/changed while it was being exported/);
  });
});
