// A fixed corpus of sessions for the list and parse tests: the real fixtures, generated pi 1.x
// sessions with usage, forks and names, and damaged files (a torn line, a lost header, a deep
// entry, a garbage line, an empty file).

import path from "node:path";
import { utimesSync } from "node:fs";
import { copyFixtures, writeFileExact, type Sandbox } from "../helpers/tmp.js";
import { deepObject } from "./hostile.js";

const sessionId = (i: number) => `0000${String(i).padStart(4, "0")}-dddd-4bbb-8ccc-${String(i).padStart(12, "0")}`;

/** A pi 1.x style session: system prompt, turns with usage, a usage entry, a fork header on some. */
function generated(i: number): { rel: string; text: string; time: number } {
  const start = Date.UTC(2026, 2, 1) + i * 5_400_000;
  const header: Record<string, unknown> = { type: "session", version: 3, id: sessionId(i), timestamp: new Date(start).toISOString(), cwd: `/work/proj${i % 3}` };
  if (i % 4 === 3) header.parentSession = `/x/--work-proj--/2026-03-01T00-00-00-000Z_${sessionId(i - 1)}.jsonl`;
  const lines = [JSON.stringify(header)];
  let parent: string | null = null;
  let t = start;
  const add = (entry: Record<string, unknown>) => {
    const id = `${String(i).padStart(4, "0")}${String(lines.length).padStart(4, "0")}`;
    t += 7 * 60_000; // turns cross 15-minute slots
    lines.push(JSON.stringify({ ...entry, id, parentId: parent, timestamp: new Date(t).toISOString() }));
    parent = id;
  };
  const usage = (k: number) => ({ input: 100 * k, output: 10 * k, cacheRead: k, cacheWrite: 2 * k, totalTokens: 113 * k, cost: { input: 0.001 * k, output: 0.002 * k, cacheRead: 0, cacheWrite: 0, total: 0.003 * k } });
  add({ type: "message", message: { role: "system", sections: { base: "You are pi." }, toolsAdded: [{ name: "bash", description: "run" }] } });
  for (let k = 1; k <= 2 + (i % 3); k++) {
    add({ type: "message", message: { role: "user", content: [{ type: "text", text: `question ${k} of ${i}` }], timestamp: t } });
    add({ type: "message", message: { role: "assistant", content: [{ type: "text", text: "answer" }, { type: "toolCall", id: `c${k}`, name: "bash", arguments: { command: "ls" } }], provider: "anthropic", model: k % 2 ? "claude-sonnet-4-5" : "claude-opus-4", usage: usage(k), stopReason: "toolUse", timestamp: t } });
    add({ type: "message", message: { role: "toolResult", toolCallId: `c${k}`, toolName: "bash", content: [{ type: "text", text: "ok" }], isError: false, timestamp: t } });
  }
  add({ type: "usage", kind: "cache_warm", provider: "anthropic", model: "claude-sonnet-4-5", usage: usage(1) });
  if (i % 2) add({ type: "session_info", name: `named ${i}` });
  return { rel: path.join(`--work-proj${i % 3}--`, `2026-03-01T00-00-00-000Z_${sessionId(i)}.jsonl`), text: lines.join("\n") + "\n", time: t };
}

/** Write the corpus into the sandbox's sessions dir. */
export function writeListCorpus(sb: Sandbox): void {
  copyFixtures(sb.agentDir);
  for (let i = 0; i < 12; i++) {
    const g = generated(i);
    const file = path.join(sb.sessionsDir, g.rel);
    let text = g.text;
    if (i === 5) text = text.slice(0, -40); // a torn last line
    if (i === 6) text = text.split("\n").slice(1).join("\n"); // the header lost
    if (i === 7) text += `{"type":"message","id":"deep0001","parentId":null,"timestamp":"2026-03-02T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"deep"}],"x":${deepObject(3000)}}}\n`;
    if (i === 8) text = text.replace("\n", "\nnot json at all\n");
    writeFileExact(file, text, 0o644);
    utimesSync(file, g.time / 1000, g.time / 1000);
  }
  writeFileExact(path.join(sb.sessionsDir, "--work-empty--", "2026-03-01T00-00-00-000Z_00000099-dddd-4bbb-8ccc-000000000099.jsonl"), "", 0o644);
}
