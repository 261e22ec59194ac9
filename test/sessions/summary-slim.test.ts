// summarizeSession keeps only slim entries (no text), so the catalog does not hold a whole
// session in memory; its numbers must be exactly those of the full entries.

import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { migrateToV3InMemory, parseSessionText } from "../../src/agents/pi/parse.js";
import { sessionName } from "../../src/model/tree.js";
import { sessionStats } from "../../src/model/stats.js";
import { stableIdGenerator } from "../../src/sessions/read.js";
import { summarizeSession, usageBreakdown } from "../../src/sessions/summary.js";
import { FIXTURES_DIR } from "../helpers/tmp.js";

/** The summary computed from full entries, as summarizeSession did before it slimmed them. */
function fullReference(text: Buffer, fallbackId: string) {
  const parsed = parseSessionText(text);
  const header = parsed.header;
  const id = header?.id ?? (typeof parsed.headerFragment?.id === "string" ? parsed.headerFragment.id : fallbackId);
  const { entries, fromVersion } = migrateToV3InMemory(header, parsed.entries, { generateId: stableIdGenerator(id) });
  return { stats: sessionStats(entries), name: sessionName(entries) ?? null, version: fromVersion, ...usageBreakdown(header ?? undefined, entries) };
}

async function* chunks(b: Buffer) {
  yield b;
}

describe("summarizeSession on slim entries", () => {
  it.each(["pi-v3/branched.jsonl", "pi-v3/forked.jsonl", "pi-v3/legacy-v1-with-garbage-line.jsonl", "pi-mono-v1/before-compaction.jsonl", "pi-mono-v1/large-session.jsonl"])("%s: the same numbers as the full entries give", async (rel) => {
    const bytes = readFileSync(path.join(FIXTURES_DIR, rel));
    const s = await summarizeSession(chunks(bytes), "fallback");
    const ref = fullReference(bytes, "fallback");
    expect({ name: s.name, version: s.version, usage: s.usage, turnsBySlot: s.turnsBySlot, copied: s.copied, origins: s.origins }).toEqual({ name: ref.name, version: ref.version, usage: ref.usage, turnsBySlot: ref.turnsBySlot, copied: ref.copied, origins: ref.origins });
    expect({ turns: s.turns, tokens: s.tokens, cost: s.cost, entries: s.entries, models: s.models, toolCalls: s.toolCalls, userMessages: s.userMessages, assistantMessages: s.assistantMessages }).toEqual({
      turns: ref.stats.turns,
      tokens: ref.stats.tokens,
      cost: ref.stats.cost,
      entries: ref.stats.entries,
      models: ref.stats.models,
      toolCalls: ref.stats.toolCalls,
      userMessages: ref.stats.userMessages,
      assistantMessages: ref.stats.assistantMessages,
    });
  });

  it("a fork's copied entries keep the identity of the full entry", async () => {
    const bytes = readFileSync(path.join(FIXTURES_DIR, "pi-v3/forked.jsonl"));
    const s = await summarizeSession(chunks(bytes), "fallback");
    expect(s.copied.length).toBeGreaterThan(0);
    expect(s.copied).toEqual(fullReference(bytes, "fallback").copied);
  });
});
