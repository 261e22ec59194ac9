// `pi-guard export` to Markdown and JSON, from live files and from a snapshot, with --branch and
// --redact, and the bad-input errors.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { marked, type Token, type Tokens } from "marked";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOneLineError } from "../helpers/cli.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { parseSessionText } from "../../src/agents/pi/parse.js";
import { serializeSession } from "../../src/agents/pi/writer.js";
import { type SessionEntry } from "../../src/model/session.js";
import { run, runOk } from "../sessions/cli.js";
import { makeWorld, SECRET, type World } from "../sessions/world.js";

let w: World;
beforeAll(async () => {
  w = await makeWorld("export");
});
afterAll(() => w?.sb.cleanup());

/** Every token of a Markdown document, nested ones included. */
function allTokens(tokens: Token[]): Token[] {
  const out: Token[] = [];
  const walk = (list: Token[]) => {
    for (const t of list) {
      out.push(t);
      const inner = (t as { tokens?: Token[] }).tokens;
      if (inner) walk(inner);
      if (t.type === "list") for (const item of (t as Tokens.List).items) walk(item.tokens);
    }
  };
  walk(tokens);
  return out;
}

function pathMessages(text: string, leafId?: string): { role: string; text: string; toolCalls: string[] }[] {
  const { entries } = parseSessionText(text);
  const byId = new Map(entries.map((e) => [e.id as string, e]));
  let cur = byId.get(leafId ?? (entries[entries.length - 1].id as string));
  const pathEntries = [];
  while (cur) {
    pathEntries.unshift(cur);
    cur = cur.parentId ? byId.get(cur.parentId as string) : undefined;
  }
  return pathEntries
    .filter((e) => e.type === "message")
    .map((e) => {
      const m = e.message as { role: string; content: unknown };
      const blocks = Array.isArray(m.content) ? (m.content as { type: string; text?: string; name?: string }[]) : [{ type: "text", text: String(m.content) }];
      return { role: m.role, text: blocks.filter((b) => b.type === "text").map((b) => b.text).join("\n\n"), toolCalls: blocks.filter((b) => b.type === "toolCall").map((b) => b.name!) };
    });
}

describe("export --format markdown", () => {
  it("has every message and tool call of the branch, parsed by a CommonMark parser", async () => {
    const md = (await runOk(w.sb, ["export", w.main.sessionId, "--format", "markdown"])).stdout;
    const tokens = allTokens(marked.lexer(md));
    const headings = tokens.filter((t): t is Tokens.Heading => t.type === "heading");
    expect(headings[0]).toMatchObject({ depth: 1, text: "Alpha notes" });
    const messages = pathMessages(readFileSync(w.main.file, "utf8"));
    const roles = headings.filter((h) => h.depth === 2).map((h) => h.text);
    const expectedRoles = messages.filter((m) => m.role !== "toolResult").map((m) => (m.role === "user" ? "User" : "Assistant"));
    expect(roles).toEqual(expectedRoles);
    for (const m of messages) if (m.role !== "toolResult" && m.text.trim()) expect(md).toContain(m.text.trim());
    // Tool calls are <details> blocks with the tool's name; the result is inside, fenced.
    const html = tokens.filter((t) => t.type === "html").map((t) => t.raw).join("");
    const calls = messages.flatMap((m) => m.toolCalls);
    expect(calls).toEqual(["read"]);
    for (const name of calls) expect(html).toContain(`Tool call: <code>${name}</code>`);
    const code = tokens.filter((t): t is Tokens.Code => t.type === "code");
    expect(code.some((c) => c.text.includes("zebrafish lives here"))).toBe(true);
    expect(html).toContain("<summary>Thinking</summary>");
  });

  it("--branch exports the other path, including its bash tool call", async () => {
    const leaf = w.main.turnLeafIds[1];
    const md = (await runOk(w.sb, ["export", w.main.sessionId, "--branch", leaf])).stdout;
    const messages = pathMessages(readFileSync(w.main.file, "utf8"), leaf);
    for (const m of messages) if (m.role !== "toolResult" && m.text.trim()) expect(md).toContain(m.text.trim());
    expect(md).toContain("Tool call: <code>bash</code>");
    expect(md).not.toContain("Try the other way instead");
  });

  it("exports a session that exists only in a snapshot, and a v1 fixture", async () => {
    const out = path.join(w.sb.root, "gone.md");
    const r = await runOk(w.sb, ["--json", "export", w.gone.sessionId, "-o", out]);
    expect(r.json()).toMatchObject({ format: "markdown", output: out });
    expect(r.json().source).toMatch(/^snapshot /);
    const md = readFileSync(out, "utf8");
    for (const m of pathMessages(w.goneText)) if (m.text.trim()) expect(md).toContain(m.text.trim());
    expect(md).toContain("pelican-output");
    const v1 = (await runOk(w.sb, ["export", "d703a1a9"])).stdout;
    const v1Headings = allTokens(marked.lexer(v1)).filter((t) => t.type === "heading" && (t as Tokens.Heading).depth === 2);
    expect(v1Headings.length).toBeGreaterThan(100);
  });
});

describe("export --format json", () => {
  it("round-trips: export, re-create the JSONL, pi accepts it and the entries are the same", async () => {
    const doc = (await runOk(w.sb, ["export", w.main.sessionId, "--format", "json"])).json();
    expect(doc).toMatchObject({ format: "pi-guard.session", version: 1, redacted: false, name: "Alpha notes" });
    const original = readFileSync(w.main.file, "utf8");
    const jsonl = serializeSession(doc.header, doc.entries as SessionEntry[]);
    expect(jsonl).toBe(original); // byte-identical: pi writes one JSON.stringify per line
    const piView = validateWithPi(jsonl, { expectMessages: true });
    expect(piView.entries).toEqual(validateWithPi(original).entries);
    expect(doc.path[doc.path.length - 1]).toBe(doc.leafId);
    expect(doc.leafId).toBe(parseSessionText(original).entries.at(-1)!.id);
  });

  it("round-trips the snapshot-only session and a migrated v1 fixture", async () => {
    const gone = (await runOk(w.sb, ["export", w.gone.sessionId.slice(0, -2), "-f", "json"])).json();
    expect(serializeSession(gone.header, gone.entries)).toBe(w.goneText);
    const v1 = (await runOk(w.sb, ["export", "ffae836b", "-f", "json"])).json();
    expect(v1.header.version).toBe(3);
    const piView = validateWithPi(serializeSession(v1.header, v1.entries), { expectMessages: true });
    expect(piView.entries.map((e) => e.type)).toEqual(v1.entries.map((e: SessionEntry) => e.type));
    expect(piView.entries.map((e) => e.id)).toEqual(v1.entries.map((e: SessionEntry) => e.id));
  });
});

describe("export --redact", () => {
  it("masks key shapes and the values of auth.json in every format", async () => {
    const auth = JSON.parse(readFileSync(path.join(w.sb.agentDir, "auth.json"), "utf8")).anthropic.key as string;
    const md = (await runOk(w.sb, ["export", w.main.sessionId, "--redact"])).stdout;
    expect(md).toContain("[REDACTED]");
    expect(md).not.toContain(SECRET);
    const plain = (await runOk(w.sb, ["export", w.main.sessionId])).stdout;
    expect(plain).toContain(SECRET); // the test would prove nothing if the secret were never there
    for (const format of ["json", "html"]) {
      const out = (await runOk(w.sb, ["export", w.main.sessionId, "--redact", "-f", format])).stdout;
      const decoded = format === "html" ? Buffer.from(/id="session-data" type="application\/json">([^<]+)</.exec(out)![1], "base64").toString() : out;
      expect(decoded).not.toContain(SECRET);
      expect(decoded).not.toContain(auth);
      expect(decoded).toContain("[REDACTED]");
    }
  });
});

describe("export: bad input", () => {
  it("unknown id, ambiguous prefix, unknown format, unwritable output: one line, non-zero, nothing written", async () => {
    expect(expectOneLineError(await run(w.sb, ["export", "nosuchid"]), 1)).toMatch(/no session matches "nosuchid"/);
    expect(expectOneLineError(await run(w.sb, ["export", "01a2288"]), 2)).toMatch(/ambiguous/);
    expect(expectOneLineError(await run(w.sb, ["export", w.main.sessionId, "--format", "pdf"]), 2)).toMatch(/unknown export format "pdf"/);
    const file = path.join(w.sb.root, "a-regular-file");
    writeFileSync(file, "x");
    const under = path.join(file, "out.html");
    expect(expectOneLineError(await run(w.sb, ["export", w.main.sessionId, "-f", "html", "-o", under]), 1)).toMatch(/cannot write .*not a folder/);
    const missing = path.join(w.sb.root, "no-such-folder", "out.md");
    expect(expectOneLineError(await run(w.sb, ["export", w.main.sessionId, "-o", missing]), 1)).toMatch(/cannot write .*does not exist/);
    expect(existsSync(missing)).toBe(false);
    expect(readFileSync(file, "utf8")).toBe("x");
  });
});
