// Hostile session content for tests: JSON nested far deeper than any real session, appended to a
// real pi session file the way pi appends (one line, a child of the last entry).

import { appendFileSync, readFileSync } from "node:fs";

/** `{"a":{"a":…1…}}`, `levels` objects deep: 5,000 levels are about 30 KB. */
export function deepObject(levels: number): string {
  return `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;
}

/** `[[[…]]]`, `levels` arrays deep. */
export function deepArray(levels: number): string {
  return `${"[".repeat(levels)}${"]".repeat(levels)}`;
}

/**
 * Append an assistant message whose tool call carries `deep` (raw JSON text) as an argument, as a
 * child of the file's last entry, the way pi appends: one line. Returns the entry id.
 */
export function appendHostileEntry(file: string, deep: string, id: string): string {
  const lines = readFileSync(file, "utf8").trimEnd().split("\n");
  const parentId = (JSON.parse(lines[lines.length - 1]) as { id: string }).id;
  const entry = {
    type: "message",
    id,
    parentId,
    timestamp: new Date().toISOString(),
    message: {
      role: "assistant",
      content: [{ type: "toolCall", id: `call_${id}`, name: "bash", arguments: { command: "echo hostile", payload: "@DEEP@" } }],
      api: "faux",
      provider: "faux",
      model: "faux-1",
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: "toolUse",
      timestamp: Date.now(),
    },
  };
  appendFileSync(file, `${JSON.stringify(entry).replace('"@DEEP@"', deep)}\n`);
  return id;
}
