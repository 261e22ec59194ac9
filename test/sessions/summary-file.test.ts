// A session file summarised by its synchronous reader (summarizeFile: a parse worker, a cold
// `sessions list`) must give exactly what the streaming reader gives for the same bytes, on real
// sessions and on files whose lines cross the reader's 1 MiB chunks, outgrow them, or are damaged.

import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileLinesSync, readLines } from "../../src/agents/pi/parse.js";
import { summarizeFile, summarizeSession } from "../../src/sessions/summary.js";
import { FIXTURES_DIR, makeSandbox, writeFileExact, type Sandbox } from "../helpers/tmp.js";
import { deepObject } from "./hostile.js";

const MiB = 1 << 20;

let sb: Sandbox;
beforeAll(() => {
  sb = makeSandbox("summary-file");
});
afterAll(() => sb?.cleanup());

async function* once(bytes: Buffer) {
  yield bytes;
}

/** The same bytes in 64 KiB pieces, as a file stream delivers them. */
async function* pieces(bytes: Buffer) {
  for (let i = 0; i < bytes.length; i += 65536) yield bytes.subarray(i, i + 65536);
}

const header = (id: string, time = "2026-03-01T10:00:00.000Z") => JSON.stringify({ type: "session", version: 3, id, timestamp: time, cwd: "/work/p" });

/** An entry of about `size` bytes: most of it one text block, as a long tool result or answer is. */
function entry(n: number, size: number, extra: Record<string, unknown> = {}): string {
  const base = { type: "message", id: `e${String(n).padStart(7, "0")}`, parentId: n ? `e${String(n - 1).padStart(7, "0")}` : null, timestamp: new Date(Date.UTC(2026, 2, 1, 10, n)).toISOString() };
  const role = n % 2 ? "assistant" : "user";
  const message = role === "assistant" ? { role, provider: "p", model: `m${n % 3}`, usage: { input: n, output: 2, cacheRead: 0, cacheWrite: 1, cost: { total: 0.01 } }, content: [{ type: "text", text: "" }, { type: "toolCall", id: "c", name: "bash", arguments: {} }] } : { role, content: [{ type: "text", text: "" }] };
  const text = JSON.stringify({ ...base, message, ...extra });
  return text.replace('"text":""', `"text":"${"x\\n\\\"q\\\" ".repeat(Math.max(0, Math.ceil((size - text.length) / 10)))}"`);
}

/** Files that stress the chunked reader: lines ending on, just before and just after a chunk's end, lines of several chunks, damage. */
function hostileFiles(): Record<string, Buffer> {
  const id = "aaaaaaaa-0000-4000-8000-000000000001";
  const lines = (sizes: number[]) => [header(id), ...sizes.map((s, n) => entry(n, s))];
  const out: Record<string, Buffer> = {};
  // The first chunk ends exactly at a newline, one byte before it, and one byte after it.
  for (const shift of [0, -1, 1, -2]) {
    const head = header(id) + "\n";
    const first = entry(0, MiB - head.length - 1 + shift);
    out[`boundary${shift}`] = Buffer.from([head + first, entry(1, 5000), entry(2, 300)].join("\n") + "\n");
  }
  out["line of 2.5 MiB, then small"] = Buffer.from(lines([2.5 * MiB, 200, 3 * MiB, 100]).join("\n") + "\n");
  out["torn last line after a long one"] = Buffer.from(lines([1.5 * MiB, 400]).join("\n") + "\n" + entry(3, 2 * MiB).slice(0, -7));
  out["no final newline"] = Buffer.from(lines([MiB + 3, 900]).join("\n"));
  out["empty"] = Buffer.alloc(0);
  out["only newlines"] = Buffer.from("\n\n\n");
  out["bom, blank lines, garbage, glued"] = Buffer.from(`\uFEFF${header(id)}\n\n${entry(0, 500)}\nnot json\n${entry(1, 700)}${entry(2, 800)}\n${entry(3, 90)}\n`);
  out["invalid utf-8 in a long line"] = Buffer.concat([Buffer.from(`${header(id)}\n${entry(0, 1.2 * MiB).slice(0, 600_000)}`), Buffer.from([0xff, 0xc3]), Buffer.from(`${entry(0, 1.2 * MiB).slice(600_000)}\n${entry(1, 50)}\n`)]);
  out["deep nesting"] = Buffer.from(`${header(id)}\n${entry(0, 300, { x: 1 })}\n${entry(1, 300).slice(0, -1)},"deep":${deepObject(3000)}}\n`);
  out["header lost, copies older than the header"] = Buffer.from([entry(0, 2 * MiB), header(id, "2026-03-01T10:01:00.000Z"), entry(1, 100), entry(2, 1.1 * MiB)].join("\n") + "\n");
  out["CRLF lines"] = Buffer.from(lines([MiB, 10, 20]).join("\r\n") + "\r\n");
  return out;
}

function realSessions(): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  for (const dir of ["pi-v3", "pi-mono-v1"]) for (const f of readdirSync(path.join(FIXTURES_DIR, dir))) out[`${dir}/${f}`] = readFileSync(path.join(FIXTURES_DIR, dir, f));
  return out;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe("summarizeFile (synchronous, chunked reads)", () => {
  const cases = { ...realSessions(), ...hostileFiles() };
  it.each(Object.keys(cases))("%s: the same lines and summary as the streaming reader", async (name) => {
    const bytes = cases[name];
    const file = path.join(sb.root, `${name.replace(/[^a-z0-9.-]+/gi, "_")}.jsonl`);
    writeFileExact(file, bytes, 0o644);

    const sync = Array.from(readFileLinesSync(file), (l) => ({ line: l.line, terminated: l.terminated, hex: Buffer.from(l.bytes).toString("base64") }));
    const streamed = (await collect(readLines(pieces(bytes)))).map((l) => ({ line: l.line, terminated: l.terminated, hex: Buffer.from(l.bytes).toString("base64") }));
    expect(sync.length).toBe(streamed.length);
    expect(sync).toEqual(streamed);

    const fromFile = summarizeFile(file, "fallback-id");
    expect(fromFile).toEqual(await summarizeSession(once(bytes), "fallback-id"));
    expect(fromFile).toEqual(await summarizeSession(pieces(bytes), "fallback-id"));
  });

  it("a missing file throws", () => {
    expect(() => summarizeFile(path.join(sb.root, "missing.jsonl"), "x")).toThrow(/ENOENT/);
  });
});
