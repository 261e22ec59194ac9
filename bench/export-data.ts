// One large, realistic pi session for the export benchmark and the streaming-export tests: long
// tool outputs, many turns, compactions, a model change, and a branch. The main line is written
// by writeSession (the generator behind every bench tree); then a side branch leaves an early
// entry, and one last turn continues the main line, so pi's leaf (the last line) sits on the
// long branch and the exported path spans nearly the whole file.

import { appendFileSync, closeSync, openSync, readSync, statSync } from "node:fs";
import { Prng } from "./prng.js";
import { MODELS, SessionBuilder } from "./sessionBuilder.js";
import { writeSession } from "./sessionFile.js";
import type { TextPool } from "./textPool.js";

export interface BranchedSession {
  sessionId: string;
  bytes: number;
  /** The entry the side branch leaves from, and the side branch's last entry. */
  branchPoint: string;
  sideLeaf: string;
  /** pi's leaf: the last entry, on the main line. */
  leafId: string;
}

/** The ids of the entries in the first `limit` bytes of a session file (header excluded). */
function idsNear(file: string, position: number, limit: number): string[] {
  const fd = openSync(file, "r");
  try {
    const buf = Buffer.alloc(limit);
    const n = readSync(fd, buf, 0, limit, position);
    return [...buf.subarray(0, n).toString("utf8").matchAll(/^\{"type":"[a-z_]+","id":"([0-9a-f]{8})"/gm)].map((m) => m[1]);
  } finally {
    closeSync(fd);
  }
}

export function writeBranchedSession(file: string, opts: { cwd: string; sessionId: string; targetBytes: number; seed: string; pool: TextPool }): BranchedSession {
  const startMs = Date.UTC(2026, 0, 15, 9, 0, 0);
  writeSession({ path: file, cwd: opts.cwd, sessionId: opts.sessionId, startMs, targetBytes: opts.targetBytes }, new Prng(opts.seed), opts.pool);
  const size = statSync(file).size;
  const tail = idsNear(file, Math.max(0, size - 4 * 1024 * 1024), 4 * 1024 * 1024);
  const mainLeaf = tail[tail.length - 1];
  const early = idsNear(file, 0, 1024 * 1024);
  const branchPoint = early[Math.min(early.length - 1, 6)];
  if (!mainLeaf || !branchPoint) throw new Error(`cannot find entry ids in ${file}`);

  const prng = new Prng(`${opts.seed}:branch`);
  const b = new SessionBuilder(prng, opts.pool, opts.cwd, { leafId: branchPoint, clockMs: startMs + 400 * 86_400_000, contextTokens: 20_000, model: MODELS[0] });
  const lines: unknown[] = [];
  const turn = () => {
    lines.push(b.user(prng.logInt(30, 800), false));
    const { entry, calls } = b.assistant({ thinkingChars: 300, textChars: 400, toolCalls: 1 });
    lines.push(entry);
    for (const call of calls) lines.push(b.toolResult(call, prng.logInt(100, 20_000), false));
    lines.push(b.assistant({ thinkingChars: 200, textChars: 600, toolCalls: 0 }).entry);
  };
  turn();
  turn();
  const sideLeaf = b.state.leafId!;
  b.state.leafId = mainLeaf;
  turn();
  appendFileSync(file, lines.map((l) => JSON.stringify(l) + "\n").join(""));
  return { sessionId: opts.sessionId, bytes: statSync(file).size, branchPoint, sideLeaf, leafId: b.state.leafId! };
}
