// Checks generated sessions with pi's own in-memory parser. Never uses
// SessionManager.open, which rewrites files it does not like (DESIGN.md §2).
//   node dist/bench/check-sessions.js DIR [--sample 20]
import { buildSessionContext, migrateSessionEntries, parseSessionEntries, type SessionEntry } from "@mariozechner/pi-coding-agent";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { listSessionFiles } from "./append.js";

/** Returns a list of problems; empty means pi reads the file as we meant it. */
export function checkSessionFile(path: string): string[] {
  const problems: string[] = [];
  const text = readFileSync(path, "utf8");
  const lines = text.split("\n").filter((l) => l.length > 0);
  const entries = parseSessionEntries(text);
  if (entries.length !== lines.length) problems.push(`pi parsed ${entries.length} of ${lines.length} lines`);
  const header = entries[0] as { type?: string; version?: number };
  if (header?.type !== "session" || header.version !== 3) problems.push("first line is not a v3 header");
  migrateSessionEntries(entries);
  const body = entries.slice(1) as SessionEntry[];
  const ids = new Set<string>();
  for (const e of body) {
    if (!/^[0-9a-f]{8}$/.test(e.id)) problems.push(`bad id ${e.id}`);
    if (ids.has(e.id)) problems.push(`duplicate id ${e.id}`);
    if (e.parentId !== null && !ids.has(e.parentId)) problems.push(`parent ${e.parentId} of ${e.id} not seen before it`);
    if (Number.isNaN(Date.parse(e.timestamp))) problems.push(`bad timestamp on ${e.id}`);
    ids.add(e.id);
  }
  const leaf = body[body.length - 1];
  const ctx = buildSessionContext(body, leaf?.id ?? null);
  if (ctx.messages.length === 0) problems.push("context has no messages");
  if (!ctx.messages.some((m) => m.role === "assistant")) problems.push("context has no assistant message");
  return problems.slice(0, 5);
}

function main(): void {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { sample: { type: "string", default: "20" } } });
  if (positionals.length !== 1) {
    console.error("usage: node dist/bench/check-sessions.js AGENT_DIR [--sample 20]");
    process.exit(2);
  }
  // Always include the largest files (they get appended to), then an even spread.
  const files = listSessionFiles(positionals[0]).sort((a, b) => b.size - a.size);
  const want = Number(values.sample);
  const step = Math.max(1, Math.floor(files.length / want));
  const chosen = new Set(files.slice(0, 3).map((f) => f.path));
  for (let i = 0; i < files.length && chosen.size < want; i += step) chosen.add(files[i].path);
  let bad = 0;
  for (const path of chosen) {
    const problems = checkSessionFile(path);
    if (problems.length > 0) {
      bad++;
      console.log(`FAIL ${path}\n  ${problems.join("\n  ")}`);
    }
  }
  console.log(`${chosen.size - bad}/${chosen.size} sampled sessions parse cleanly with pi's parser`);
  process.exitCode = bad === 0 ? 0 : 1;
}

main();
