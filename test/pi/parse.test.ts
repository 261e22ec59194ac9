import { migrateSessionEntries, parseSessionEntries } from "@mariozechner/pi-coding-agent";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { Readable } from "node:stream";
import { beforeAll, describe, expect, it } from "vitest";
import { migrateToV3InMemory, parseSessionFile, parseSessionText, readSessionText, splitGlued } from "../../src/agents/pi/parse.js";
import type { RawSessionEntry } from "../../src/model/session.js";
import { copyFixtures, fixturePaths, sha256File } from "./fixtures.js";

type Loose = Record<string, unknown>;

/** Replace entry ids by positions so two migrations with different random ids compare equal. */
function normalizeIds(entries: readonly Loose[]): unknown[] {
  const index = new Map<unknown, number>();
  entries.forEach((e, i) => index.set(e.id, i));
  const ref = (v: unknown) => (v === null || v === undefined ? v : (index.get(v) ?? `missing:${String(v)}`));
  return entries.map((e) => ({
    ...e,
    id: ref(e.id),
    parentId: ref(e.parentId),
    ...("firstKeptEntryId" in e ? { firstKeptEntryId: ref(e.firstKeptEntryId) } : {}),
  }));
}

/** What pi 0.73.1 holds in memory for a file: its parser and migration, header removed. */
function piEntries(text: string): Loose[] {
  const all = parseSessionEntries(text);
  migrateSessionEntries(all);
  return (all as unknown as Loose[]).filter((e) => e.type !== "session");
}

const kinds = (text: string) => parseSessionText(text).issues.map((i) => i.kind);

describe("parser on the real fixtures, compared with pi's own in-memory parser", () => {
  let copies: Map<string, string>;
  const hashesBefore = new Map<string, string>();
  beforeAll(() => {
    copies = copyFixtures();
    for (const [name, path] of copies) hashesBefore.set(name, sha256File(path));
  });

  it.each(fixturePaths().map((p) => [p.split("/").pop()!]))("%s: same entries and tree as pi after migration", async (name) => {
    const path = copies.get(name)!;
    const text = readFileSync(path, "utf8");
    const parsed = parseSessionText(text);
    expect(parsed.header?.type).toBe("session");
    const ours = migrateToV3InMemory(parsed.header, parsed.entries);
    const theirs = piEntries(text);
    expect(ours.entries.length).toBe(theirs.length);
    if (parsed.version === 3) {
      expect(ours.entries.map((e) => [e.id, e.parentId])).toEqual(theirs.map((e) => [e.id, e.parentId]));
      expect(ours.entries).toEqual(theirs);
    } else {
      expect(normalizeIds(ours.entries as unknown as Loose[])).toEqual(normalizeIds(theirs));
      expect(ours.entries.every((e) => /^[0-9a-f]{8}$/.test(e.id))).toBe(true);
    }
    // The streaming reader sees exactly what the in-memory parser sees.
    const streamed = await parseSessionFile(path);
    expect(streamed.entries).toEqual(parsed.entries);
    expect(streamed.issues).toEqual(parsed.issues);
  });

  it("reads the v1 header fields and compaction indexes of before-compaction.jsonl", () => {
    const parsed = parseSessionText(readFileSync(copies.get("before-compaction.jsonl")!));
    expect(parsed.version).toBe(1);
    expect(parsed.issues).toEqual([]);
    expect(parsed.header).toMatchObject({ provider: "anthropic", modelId: "claude-opus-4-5", thinkingLevel: "off" });
    expect(typeof parsed.header?.branchedFrom).toBe("string");
    const { entries, header } = migrateToV3InMemory(parsed.header, parsed.entries);
    expect(header?.version).toBe(3);
    const compactions = entries.filter((e) => e.type === "compaction");
    expect(compactions).toHaveLength(2);
    for (const c of compactions) {
      expect(c.firstKeptEntryIndex).toBeUndefined();
      // firstKeptEntryIndex counts the header as line 0, so it points at entries[index - 1].
      const index = (parsed.entries[entries.indexOf(c)] as Loose).firstKeptEntryIndex as number;
      expect(c.firstKeptEntryId).toBe(entries[index - 1].id);
    }
    expect(parsed.entries.some((e) => (e.message as Loose | undefined)?.role === "bashExecution")).toBe(true);
  });

  it("reports the garbage line of the legacy file and renames hookMessage only in memory", () => {
    const path = copies.get("legacy-v1-with-garbage-line.jsonl")!;
    const parsed = parseSessionText(readFileSync(path));
    expect(parsed.issues).toEqual([expect.objectContaining({ kind: "malformed-line", line: 4 })]);
    const roleBefore = (parsed.entries[1].message as Loose).role;
    const { entries } = migrateToV3InMemory(parsed.header, parsed.entries);
    expect(roleBefore).toBe("hookMessage");
    expect((parsed.entries[1].message as Loose).role).toBe("hookMessage");
    expect((entries[1].message as Loose).role).toBe("custom");
    expect(parsed.entries[0].id).toBeUndefined();
    expect(entries[2].firstKeptEntryId).toBe(entries[0].id);
  });

  it("keeps the fork header's parentSession and the parent's entry ids", () => {
    const parent = parseSessionText(readFileSync(copies.get("branched.jsonl")!));
    const fork = parseSessionText(readFileSync(copies.get("forked.jsonl")!));
    expect(typeof fork.header?.parentSession).toBe("string");
    const parentIds = new Set(parent.entries.map((e) => e.id));
    expect(fork.entries.filter((e) => parentIds.has(e.id)).length).toBeGreaterThan(3);
  });

  it("never writes to its input: the files hash the same after every read", async () => {
    for (const path of copies.values()) {
      parseSessionText(readFileSync(path));
      await parseSessionFile(path);
      readSessionText(readFileSync(path));
    }
    for (const [name, path] of copies) expect(sha256File(path), name).toBe(hashesBefore.get(name));
  });
});

const H = '{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}';
const E1 = '{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}';
const E2 =
  '{"type":"message","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"yo"}],"timestamp":2}}';
const E3 = '{"type":"label","id":"aaaa0003","parentId":"aaaa0002","timestamp":"2025-01-01T00:00:03.000Z","targetId":"aaaa0001","label":"x"}';

describe("damaged input", () => {
  it("reports a torn last line and keeps everything before it", () => {
    const r = parseSessionText(`${H}\n${E1}\n${E2.slice(0, 50)}`);
    expect(r.entries.map((e) => e.id)).toEqual(["aaaa0001"]);
    expect(r.issues).toEqual([expect.objectContaining({ kind: "torn-last-line", line: 3 })]);
  });

  it("flags a complete last line without its newline", () => {
    expect(kinds(`${H}\n${E1}`)).toEqual(["missing-final-newline"]);
  });

  it("splits entries glued at }{ and recovers both halves", () => {
    const r = parseSessionText(`${H}\n${E1}${E2}\n${E3}\n`);
    expect(r.entries.map((e) => e.id)).toEqual(["aaaa0001", "aaaa0002", "aaaa0003"]);
    expect(r.entryLines).toEqual([2, 2, 3]);
    expect(r.issues).toEqual([expect.objectContaining({ kind: "glued-entries", line: 2 })]);
  });

  it("recovers the entry pi appended after a torn line, reporting the lost fragment", () => {
    const r = parseSessionText(`${H}\n${E1}\n${E2.slice(0, 70)}${E3}\n`);
    expect(r.entries.map((e) => e.id)).toEqual(["aaaa0001", "aaaa0003"]);
    expect(kinds(`${H}\n${E1}\n${E2.slice(0, 70)}${E3}\n`)).toEqual(["glued-entries", "torn-fragment"]);
    // pi's own parser loses the appended entry.
    expect(parseSessionEntries(`${H}\n${E1}\n${E2.slice(0, 70)}${E3}\n`)).toHaveLength(2);
  });

  it("splits a header glued to the first entry, and a torn header glued to one", () => {
    const glued = parseSessionText(`${H}${E1}\n`);
    expect(glued.header?.id).toBe("s1");
    expect(glued.entries.map((e) => e.id)).toEqual(["aaaa0001"]);
    const torn = parseSessionText(`${H.slice(0, 60)}${E1}\n`);
    expect(torn.header).toBeNull();
    expect(torn.headerFragment).toMatchObject({ id: "s1" });
    expect(torn.entries.map((e) => e.id)).toEqual(["aaaa0001"]);
    expect(torn.issues.map((i) => i.kind)).toEqual(["glued-entries", "invalid-header"]);
  });

  it("does not split at nested objects that look like entries", () => {
    const nested = '{"type":"custom","id":"aaaa0004","parentId":null,"timestamp":"t","data":{"inner":{"type":"message","x":1}}}';
    const r = parseSessionText(`${H}\n${nested}${E1}\n`);
    expect(r.entries.map((e) => e.id)).toEqual(["aaaa0004", "aaaa0001"]);
    expect(splitGlued(`${nested}${E1}`)?.map((p) => p.text)).toEqual([nested, E1]);
  });

  it("recovers entries written after a run of NUL bytes (zero-filled tail after power loss)", () => {
    const r = parseSessionText(`${H}\n${E1}\n${"\0".repeat(40)}${E2}\n`);
    expect(r.entries.map((e) => e.id)).toEqual(["aaaa0001", "aaaa0002"]);
  });

  it("reports malformed middle lines, blank lines, non-entries and extra headers", () => {
    expect(kinds(`${H}\nnot json\n\n42\n${H}\n${E1}\n`)).toEqual(["malformed-line", "blank-line", "not-an-entry", "extra-header"]);
  });

  it("reads a headerless file and says so", () => {
    const r = parseSessionText(`${E1}\n${E2}\n`);
    expect(r.header).toBeNull();
    expect(r.entries).toHaveLength(2);
    expect(r.version).toBe(3);
    expect(r.issues).toEqual([expect.objectContaining({ kind: "missing-header", line: 1 })]);
  });

  it("salvages the fields of a torn header", () => {
    const r = parseSessionText(`${H.slice(0, 85)}\n${E1}\n`);
    expect(r.header).toBeNull();
    expect(r.headerFragment).toMatchObject({ id: "s1", version: 3, timestamp: "2025-01-01T00:00:00.000Z" });
    expect(r.issues.map((i) => i.kind)).toEqual(["invalid-header"]);
  });

  it("rejects a header whose id is not a string, as pi does", () => {
    const r = parseSessionText(`{"type":"session","version":3,"id":7,"cwd":"/p"}\n${E1}\n`);
    expect(r.header).toBeNull();
    expect(r.headerFragment).toMatchObject({ cwd: "/p" });
  });

  it("reports invalid UTF-8 and still reads the line", () => {
    const [before, after] = E1.split('"hi"');
    const bad = Buffer.concat([Buffer.from(`${H}\n${before}"h`), Buffer.from([0xff, 0xfe]), Buffer.from(`i"${after}\n`)]);
    const r = parseSessionText(bad);
    expect(r.entries).toHaveLength(1);
    expect(r.issues).toEqual([expect.objectContaining({ kind: "invalid-utf8", line: 2 })]);
  });

  it("strips a byte order mark", () => {
    const r = parseSessionText(`\uFEFF${H}\n${E1}\n`);
    expect(r.header?.id).toBe("s1");
    expect(r.issues.map((i) => i.kind)).toEqual(["bom"]);
  });

  it("reports an empty file", () => {
    expect(kinds("")).toEqual(["empty-file"]);
    expect(parseSessionText("\n\n").header).toBeNull();
  });

  it("never throws on random bytes, in memory or streamed", async () => {
    for (let i = 0; i < 200; i++) {
      const junk = randomBytes(1 + (i * 37) % 4000);
      // Sprinkle real entry starts so the glue splitter gets exercised too.
      const mixed = i % 2 ? Buffer.concat([junk, Buffer.from(`}${E1}\n`), junk.subarray(0, 10)]) : junk;
      expect(() => parseSessionText(mixed)).not.toThrow();
      await expect(parseSessionFile(Readable.from([mixed]))).resolves.toBeDefined();
    }
  });

  it("streams lines that cross chunk boundaries", async () => {
    const text = `${H}\n${E1}\n${E2}\n${E3}`;
    const bytes = Buffer.from(text);
    const chunks = Array.from({ length: Math.ceil(bytes.length / 7) }, (_, i) => bytes.subarray(i * 7, i * 7 + 7));
    const streamed = await parseSessionFile(Readable.from(chunks));
    expect(streamed).toEqual(parseSessionText(text));
  });

  it("preserves unknown fields on headers and entries", () => {
    const r = parseSessionText(`${H.replace("}", ',"future":{"a":1}}')}\n${E1.replace("}}", '},"extra":[1,2]}')}\n`);
    expect(r.header?.future).toEqual({ a: 1 });
    expect(r.entries[0].extra).toEqual([1, 2]);
  });
});

describe("migrateToV3InMemory", () => {
  const v1: RawSessionEntry[] = [
    { type: "message", timestamp: "t1", message: { role: "user", content: "a" } },
    { type: "message", timestamp: "t2", message: { role: "hookMessage", content: "b" } },
    { type: "compaction", timestamp: "t3", summary: "s", firstKeptEntryIndex: 2, tokensBefore: 1 },
    { type: "compaction", timestamp: "t4", summary: "s", firstKeptEntryIndex: 0, tokensBefore: 1 },
  ];
  const header = { type: "session" as const, id: "x", timestamp: "t0", cwd: "/p" };

  it("builds pi's straight chain and index mapping without touching its input", () => {
    const before = JSON.stringify(v1);
    let n = 0;
    const { entries, header: h, fromVersion } = migrateToV3InMemory(header, v1, { generateId: () => `id${n++}` });
    expect(JSON.stringify(v1)).toBe(before);
    expect(fromVersion).toBe(1);
    expect(h?.version).toBe(3);
    expect(entries.map((e) => [e.id, e.parentId])).toEqual([
      ["id0", null],
      ["id1", "id0"],
      ["id2", "id1"],
      ["id3", "id2"],
    ]);
    expect(entries[2].firstKeptEntryId).toBe("id1");
    // Index 0 is the header: pi drops the index and sets no id.
    expect("firstKeptEntryId" in entries[3]).toBe(false);
    expect((entries[1].message as Loose).role).toBe("custom");
  });

  it("matches pi's migrateSessionEntries on the same input", () => {
    const text = [header, ...v1].map((e) => JSON.stringify(e)).join("\n");
    const parsed = parseSessionText(text);
    const ours = migrateToV3InMemory(parsed.header, parsed.entries).entries;
    expect(normalizeIds(ours as unknown as Loose[])).toEqual(normalizeIds(piEntries(text)));
  });

  it("leaves version 3 entries as they are", () => {
    const parsed = parseSessionText(`${H}\n${E1}\n`);
    const { entries, fromVersion } = migrateToV3InMemory(parsed.header, parsed.entries);
    expect(fromVersion).toBe(3);
    expect(entries[0]).toBe(parsed.entries[0]);
  });
});
