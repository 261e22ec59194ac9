import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { readSessionText } from "../../src/agents/pi/parse.js";
import { sessionStats } from "../../src/model/stats.js";
import { copyFixtures } from "./fixtures.js";

describe("sessionStats", () => {
  const fixtures = copyFixtures();

  it("counts every branch of the branched fixture", () => {
    const text = readFileSync(fixtures.get("branched.jsonl")!, "utf8");
    const stats = sessionStats(readSessionText(text).entries);
    // Independent tally straight from the JSON lines.
    const messages = text.trim().split("\n").map((l) => JSON.parse(l)).filter((e) => e.type === "message").map((e) => e.message);
    const assistants = messages.filter((m) => m.role === "assistant");
    expect(stats).toMatchObject({
      entries: 20,
      userMessages: 4,
      assistantMessages: 6,
      toolResults: 2,
      toolCalls: 2,
      turns: 4,
      models: ["anthropic/claude-sonnet-4-5", "openai/gpt-4o"],
      firstTimestamp: "2026-11-29T18:13:18.767Z",
      lastTimestamp: "2026-11-29T18:13:18.768Z",
    });
    expect(stats.tokens).toBe(assistants.reduce((n, m) => n + m.usage.totalTokens, 0));
    expect(stats.cost).toBeCloseTo(assistants.reduce((n, m) => n + m.usage.cost.total, 0), 12);
  });

  it("handles a migrated v1 session", () => {
    const stats = sessionStats(readSessionText(readFileSync(fixtures.get("large-session.jsonl")!)).entries);
    expect(stats.userMessages).toBeGreaterThan(0);
    expect(stats.assistantMessages).toBeGreaterThan(stats.userMessages);
    expect(stats.turns).toBeLessThanOrEqual(stats.userMessages);
    expect(stats.tokens).toBeGreaterThan(0);
    expect(stats.models.length).toBeGreaterThan(0);
    expect(stats.firstTimestamp! <= stats.lastTimestamp!).toBe(true);
  });

  it("gives zeros and nulls for no entries", () => {
    expect(sessionStats([])).toMatchObject({ entries: 0, turns: 0, tokens: 0, cost: 0, models: [], firstTimestamp: null });
  });
});
