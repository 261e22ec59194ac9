// Simulates pi continuing its biggest sessions: a user prompt and an assistant
// reply appended line by line with appendFileSync, exactly how pi writes.
import { appendFileSync, closeSync, openSync, readSync, readdirSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { Prng } from "./prng.js";
import { MODELS, SessionBuilder } from "./sessionBuilder.js";
import type { TextPool } from "./textPool.js";

export function listSessionFiles(agentDir: string): { path: string; size: number }[] {
  const files: { path: string; size: number }[] = [];
  const walk = (dir: string): void => {
    for (const ent of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, ent.name);
      if (ent.isDirectory()) walk(full);
      else if (ent.isFile() && ent.name.endsWith(".jsonl")) files.push({ path: full, size: statSync(full).size });
    }
  };
  walk(join(agentDir, "sessions"));
  return files;
}

/** The last complete line of a file, read from its tail only (files can be 80 MB). */
function lastLine(path: string, size: number): string {
  const len = Math.min(size, 2 * 1024 * 1024);
  const buf = Buffer.alloc(len);
  const fd = openSync(path, "r");
  try {
    readSync(fd, buf, 0, len, size - len);
  } finally {
    closeSync(fd);
  }
  const text = buf.toString("utf8").replace(/\n+$/, "");
  return text.slice(text.lastIndexOf("\n") + 1);
}

/**
 * Appends about `bytes` of valid entries (two lines: user + assistant) to each
 * of the `n` largest sessions. Returns the files touched and bytes appended.
 */
export function appendToLargest(agentDir: string, pool: TextPool, n = 10, bytes = 4096, seed = "append"): { files: string[]; bytes: number } {
  const largest = listSessionFiles(agentDir)
    .sort((a, b) => b.size - a.size || a.path.localeCompare(b.path))
    .slice(0, n);
  let total = 0;
  for (const file of largest) {
    const last = JSON.parse(lastLine(file.path, file.size)) as { id: string; timestamp: string; message?: { provider?: string; model?: string } };
    const model = MODELS.find((m) => m.model === last.message?.model) ?? MODELS[0];
    const prng = new Prng(`${seed}:${basename(file.path)}:${file.size}`);
    const builder = new SessionBuilder(prng, pool, "/home/dev/code/app", {
      leafId: last.id,
      clockMs: Date.parse(last.timestamp),
      contextTokens: 60_000,
      model,
    });
    const userLine = JSON.stringify(builder.user(prng.int(80, 300), false)) + "\n";
    const saved = structuredClone(builder.state);
    // The assistant text is sized so both lines together come to ~`bytes`;
    // JSON escaping makes the first guess a little off, so correct once.
    let textChars = Math.max(50, bytes - userLine.length - 700);
    let assistantLine = "";
    for (let attempt = 0; attempt < 3; attempt++) {
      builder.state = structuredClone(saved);
      const { entry } = builder.assistant({ thinkingChars: 0, textChars, toolCalls: 0 });
      assistantLine = JSON.stringify(entry) + "\n";
      const diff = bytes - userLine.length - Buffer.byteLength(assistantLine);
      if (Math.abs(diff) < bytes * 0.05) break;
      textChars = Math.max(50, textChars + diff);
    }
    appendFileSync(file.path, userLine);
    appendFileSync(file.path, assistantLine);
    total += Buffer.byteLength(userLine) + Buffer.byteLength(assistantLine);
  }
  return { files: largest.map((f) => f.path), bytes: total };
}
