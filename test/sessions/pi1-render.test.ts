// pi 1.x's own entries, read from sessions pi 1.6.0 wrote, as `sessions show`, the Markdown export
// and `sessions search` present them: the system prompt with its sections and tools, each later
// system update as what it changed (resolved against the prompt before it on the branch), a
// compaction's checkpoint, usage and context_edit entries (and the edited entry marked), and the
// fields pi 1.x adds (thinkingLevel, durationMs, cost.totalFromProvider, header metadata, roots).

import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSessionText } from "../../src/agents/pi/parse.js";
import { runOk } from "./cli.js";
import { makePi1World, type Pi1World } from "./pi1-world.js";

let w: Pi1World;
let rich: { compactionId: string; editId: string; editedId: string; leadingId: string; patchId: string; usageId: string };
let quokka: { omitEditId: string; omittedId: string; replaceEditId: string; replacedId: string; turn2LeafId: string };

const idOf = (text: string, pick: (e: any) => boolean) => readSessionText(text).entries.find(pick)!.id;
const role = (e: any) => (e.type === "message" ? e.message.role : undefined);

beforeAll(async () => {
  w = await makePi1World("pi1-render");
  const r = readFileSync(w.rich.file, "utf8");
  const systems = readSessionText(r).entries.filter((e) => role(e) === "system");
  rich = {
    compactionId: idOf(r, (e) => e.type === "compaction"),
    editId: idOf(r, (e) => e.type === "context_edit"),
    editedId: w.rich.turnMessageIds[0],
    leadingId: systems[0].id,
    patchId: systems[1].id,
    usageId: idOf(r, (e) => e.type === "usage"),
  };
  const q = readFileSync(w.quokka.file, "utf8");
  const edits = readSessionText(q).entries.filter((e) => e.type === "context_edit");
  quokka = {
    omitEditId: edits[0].id,
    omittedId: w.quokka.turnMessageIds[0],
    replaceEditId: edits[1].id,
    replacedId: w.quokka.turnMessageIds[1],
    turn2LeafId: w.quokka.turnLeafIds[2],
  };
}, 180_000);
afterAll(() => w?.sb.cleanup());

let exports = 0;
const show = async (...args: string[]) => (await runOk(w.sb, ["sessions", "show", ...args])).stdout;
async function markdown(id: string, branch?: string): Promise<string> {
  const out = path.join(w.sb.root, `${id}-${branch ?? "leaf"}-${++exports}.md`);
  await runOk(w.sb, ["export", id, "--format", "markdown", "-o", out, ...(branch ? ["--branch", branch] : [])]);
  return readFileSync(out, "utf8");
}

describe("item 3: system messages (pi 1.6.0)", () => {
  it("sessions show prints the prompt's sections and the tools with parameters, each update as what it changed, and the compaction's checkpoint", async () => {
    const out = await show("ledger-july", "--branch", rich.compactionId);
    expect(out).toContain(`## system prompt [${rich.leadingId}]`);
    expect(out).toContain("── section preamble\n    You are a coding assistant running inside pi");
    expect(out).toContain("── section plan\n    <plan>\n    Read first, then answer.");
    expect(out).toContain("tools (4):");
    expect(out).toContain("read(path: string, offset?: number, limit?: number)  Read the contents of a file.");
    expect(out).toContain("bash(command: string, timeout?: number)");
    // The patch, resolved against the prompt before it: two sections replaced, one removed, two tools gone.
    expect(out).toContain(`## system update: tools, rules, -plan, tools -edit -write [${rich.patchId}]`);
    expect(out).toContain("~ section tools replaced\n    <tools>\n    - read: Read file contents\n    - bash:");
    expect(out).toContain("- section plan removed\n");
    expect(out).toContain("- tool edit\n  - tool write\n");
    expect(out).toContain("system prompt from here on: sections preamble, tools, rules, docs, cwd; tools read, bash");
    // The outline says what each system entry is, as pi's tree does.
    expect(out).toMatch(/system +system update: tools, rules, -plan, tools -edit/);
  });

  it("an update after a branch summary is resolved against the prompt of its own branch", async () => {
    const out = await show("ledger-july");
    // The branch left from turn 0, where the prompt still had "plan": pi removes it, and says so.
    expect(out).toMatch(/## system update: -plan \[[0-9a-f]{8}\][^\n]*\n  - section plan removed\n/);
    expect(out).not.toContain("was not in the prompt");
  });

  it("the Markdown export shows the prompt, the tool list with parameters, the updates and the checkpoint", async () => {
    const md = await markdown("ledger-july", rich.compactionId);
    expect(md).toContain("## System prompt\n");
    expect(md).toContain("<summary>Section <code>preamble</code> (1 line)</summary>\n\n```text\nYou are a coding assistant running inside pi");
    expect(md).toContain("**Tools (4)**");
    expect(md).toContain("- <code>read</code>: Read the contents of a file.");
    expect(md).toContain("  - <code>path</code> string, required: ");
    expect(md).toContain("  - <code>offset</code> number, optional: ");
    expect(md).toContain("## System update: tools, rules, -plan, tools -edit -write\n");
    expect(md).toContain("Section <code>tools</code> replaced:\n\n```text\n<tools>\n- read: Read file contents");
    expect(md).toContain("Section <code>plan</code> removed.");
    expect(md).toContain("**Tools removed:** <code>edit</code>, <code>write</code>");
    expect(md).toContain("<summary>System prompt from here on: 5 section(s), 2 tool(s)</summary>");
    expect(md).not.toMatch(/## system\n/);
  });
});

describe("item 4: usage and context_edit entries (pi 1.6.0)", () => {
  it("sessions show prints a usage entry's kind, model, tokens and cost, a context edit's target and replacement, and marks the target", async () => {
    // Up to the edit: pi applies it. On the path through the compaction that summarized both the
    // edit and its target, pi ignores it, and the target is not marked (test/export/context-edit-compaction.test.ts).
    expect(await show("ledger-july", "--branch", rich.compactionId)).not.toContain(`[edited in context by ${rich.editId}`);
    const out = await show("ledger-july", "--branch", rich.editId);
    expect(out).toMatch(new RegExp(`· usage cache_warm: pi1-faux/faux-1 · \\d+ tokens \\(↑\\d+ ↓\\d+ R\\d+ W\\d+\\) · \\$[0-9.]+ \\[${rich.usageId}\\]`));
    expect(out).not.toContain('usage: ""');
    expect(out).toContain(`[${rich.editedId}] [label: read-done] [edited in context by ${rich.editId}: content replaced]`);
    expect(out).toContain(`· context edit: ${rich.editedId} replaced in the model's context with: [${rich.editId}]`);
    expect(out).toContain(`[${rich.editId}]  `);
    expect(out).toMatch(/replaced in the model's context with: [^\n]*\n  It has two lines \(edited\)\.\n/);
  });

  it("an omitting edit (replacement null) and a usage note, in show", async () => {
    const out = await show("quokka-notes", "--branch", quokka.turn2LeafId);
    expect(out).toContain(`[${quokka.omittedId}] [edited in context by ${quokka.omitEditId}: omitted]`);
    expect(out).toContain(`· context edit: ${quokka.omittedId} omitted from the model's context [${quokka.omitEditId}]`);
    expect(out).toContain(`[${quokka.replacedId}] [edited in context by ${quokka.replaceEditId}: content replaced]`);
    expect(out).toMatch(/· usage cache_warm: pi1-faux\/faux-1 · [^\n]* · warm before lunch \[/);
    expect(out).toMatch(new RegExp(`\\* ${quokka.omittedId} assistant +Quokkas are small marsupials\\.  \\[edited\\]`));
  });

  it("the Markdown export shows usage entries and context edits, and marks the edited entries", async () => {
    expect(await markdown("ledger-july", rich.compactionId)).not.toContain(`edited in context by ${rich.editId}`);
    const md = await markdown("ledger-july", rich.editId);
    expect(md).toMatch(new RegExp(`_Usage \\(cache_warm\\): pi1-faux/faux-1 · \\d+ tokens \\(↑\\d+ ↓\\d+ R\\d+ W\\d+\\) · \\$[0-9.]+ · id ${rich.usageId}_`));
    expect(md).toContain(`id ${rich.editedId} · label: read-done · edited in context by ${rich.editId}: content replaced</sub>`);
    expect(md).toContain(`## Context edit\n\n<sub>`);
    expect(md).toContain(`Replaces what the model sees of entry <code>${rich.editedId}</code> from here on (the entry itself is unchanged) with:\n\nIt has two lines (edited).`);
    const q = await markdown("quokka-notes", quokka.turn2LeafId);
    expect(q).toContain(`Leaves entry <code>${quokka.omittedId}</code> out of the model's context from here on`);
    expect(q).toContain(`id ${quokka.omittedId} · edited in context by ${quokka.omitEditId}: omitted</sub>`);
    expect(q).toMatch(/_Usage \(cache_warm\): [^\n]* · warm before lunch · id /);
  });
});

describe("item 7: search and the fields pi 1.x adds (pi 1.6.0)", () => {
  interface SearchJson {
    results: { session: { id: string }; hits: { entryId: string; kind: string; snippet: string }[] }[];
  }
  const search = async (q: string) => (await runOk(w.sb, ["--json", "sessions", "search", "--live", q])).json<SearchJson>();

  it("search finds words of a system prompt section and of a context edit's replacement", async () => {
    const section = await search('"quokka colony"');
    expect(section.results.map((r) => r.session.id)).toEqual(["quokka-notes"]);
    expect(section.results[0].hits[0]).toMatchObject({ kind: "system" });
    expect(section.results[0].hits[0].snippet).toContain("«quokka colony»");
    const harness = await search('"coding agent harness"');
    expect(harness.results.map((r) => r.session.id)).toEqual(expect.arrayContaining(["ledger-july", "quokka-notes", w.rich.fork!.sessionId]));
    expect(harness.results.every((r) => r.hits.some((h) => h.kind === "system"))).toBe(true);
    const replacement = await search("zanzibarian");
    expect(replacement.results.map((r) => r.session.id)).toEqual(["quokka-notes"]);
    expect(replacement.results[0].hits.map((h) => h.kind)).toEqual(["context_edit"]);
  });

  it("show prints thinkingLevel, durationMs, a provider-billed cost, header metadata and several roots", async () => {
    const out = await show("quokka-notes", "--branch", quokka.turn2LeafId);
    expect(out).toContain("header origin: {\"tool\":\"ledger-sync\",\"run\":7}");
    expect(out).toMatch(/tree: \d+ entries, 2 roots, /);
    expect(out).toMatch(new RegExp(`## assistant \\(faux-1 · [^)]* · thinking: low · 1\\.2 s · cost billed by the provider\\) \\[${w.billedId}\\]`));
    const rich = await show("ledger-july");
    expect(rich).toMatch(/## ← read ok · \d+ ms \[/); // a tool result's durationMs, as pi wrote it
    expect(rich).toContain("· thinking: medium) [");
  });

  it("the Markdown export prints the same fields", async () => {
    const md = await markdown("quokka-notes", quokka.turn2LeafId);
    expect(md).toContain("| Header origin | {&quot;tool&quot;:&quot;ledger-sync&quot;,&quot;run&quot;:7} |");
    expect(md).toMatch(/\| Branch \| `[0-9a-f]{8}` \(\d+ of \d+ entries, \d+ leaves, 2 roots\) \|/);
    expect(md).toMatch(new RegExp(`<sub>faux-1 · [^<]* · thinking: low · 1\\.2 s · cost billed by the provider · [^<]*id ${w.billedId}`));
    const rich = await markdown("ledger-july");
    expect(rich).toMatch(/\*\*Result\*\* <sub>\d+ ms<\/sub>/);
  });
});
