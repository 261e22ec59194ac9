// Recall of a salvaged session against the file pi wrote: user prompts compared whole
// (whitespace collapsed), assistant text by words (letters/digits runs, lower-cased), because
// the screen shows rendered markdown, not the source ("**bold**" appears as "bold").

type Line = Record<string, any>;

const words = (s: string) => s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
const squash = (s: string) => s.replace(/\s+/g, " ").trim();

export function parseJsonl(text: string): Line[] {
  return text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
}

function messages(lines: Line[], role: string): Line[] {
  return lines.filter((l) => l.type === "message" && l.message?.role === role).map((l) => l.message);
}

const textOf = (m: Line) => (Array.isArray(m.content) ? m.content.filter((b: Line) => b.type === "text").map((b: Line) => b.text).join("\n") : String(m.content ?? ""));

export interface Recall {
  users: { original: number; recovered: number };
  assistantWords: { original: number; recovered: number; percent: number };
  toolCalls: { original: number; recovered: number };
  toolResults: { original: number; recovered: number };
}

export function recall(original: Line[], salvaged: Line[]): Recall {
  const wantUsers = messages(original, "user").map((m) => squash(textOf(m)));
  const gotUsers = new Set(messages(salvaged, "user").map((m) => squash(textOf(m))));
  const pool = new Map<string, number>();
  for (const w of messages(salvaged, "assistant").flatMap((m) => words(textOf(m)))) pool.set(w, (pool.get(w) ?? 0) + 1);
  const want = messages(original, "assistant").flatMap((m) => words(textOf(m)));
  let hit = 0;
  for (const w of want) {
    const n = pool.get(w) ?? 0;
    if (n > 0) {
      hit++;
      pool.set(w, n - 1);
    }
  }
  const calls = (lines: Line[]) => messages(lines, "assistant").flatMap((m) => (m.content ?? []).filter((b: Line) => b.type === "toolCall").map((b: Line) => `${b.name}|${b.arguments?.command ?? b.arguments?.path ?? ""}`));
  const gotCalls = new Set(calls(salvaged));
  // By name + visible text: the screen shows no call ids.
  const results = (lines: Line[]) => messages(lines, "toolResult").map((m) => `${m.toolName}|${squash(textOf(m))}`);
  const gotResults = new Set(results(salvaged));
  return {
    users: { original: wantUsers.length, recovered: wantUsers.filter((u) => gotUsers.has(u)).length },
    assistantWords: { original: want.length, recovered: hit, percent: want.length ? (100 * hit) / want.length : 100 },
    toolCalls: { original: calls(original).length, recovered: calls(original).filter((c) => gotCalls.has(c)).length },
    toolResults: { original: results(original).length, recovered: results(original).filter((r) => gotResults.has(r)).length },
  };
}
