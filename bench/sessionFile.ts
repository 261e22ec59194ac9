// Writes one whole session file of roughly `targetBytes`, turn by turn.
import { closeSync, openSync, writeSync } from "node:fs";
import type { Prng } from "./prng.js";
import { MODELS, SessionBuilder } from "./sessionBuilder.js";
import type { TextPool } from "./textPool.js";

/** pi compacts when the context nears the window; this keeps usage numbers plausible. */
const COMPACT_AT_TOKENS = 160_000;
const FLUSH_BYTES = 1024 * 1024;

/** Buffers lines and writes ~1 MiB at a time: bounded memory, few syscalls. */
class LineWriter {
  private parts: string[] = [];
  private pending = 0;
  bytes = 0;
  private readonly fd: number;

  constructor(path: string) {
    this.fd = openSync(path, "w", 0o644);
  }

  write(entry: unknown): void {
    const line = JSON.stringify(entry) + "\n";
    const len = Buffer.byteLength(line);
    this.parts.push(line);
    this.pending += len;
    this.bytes += len;
    if (this.pending >= FLUSH_BYTES) this.flush();
  }

  flush(): void {
    if (this.parts.length === 0) return;
    writeSync(this.fd, this.parts.join(""));
    this.parts = [];
    this.pending = 0;
  }

  close(): void {
    this.flush();
    closeSync(this.fd);
  }
}

export interface SessionSpec {
  path: string;
  cwd: string;
  sessionId: string;
  startMs: number;
  targetBytes: number;
}

export function writeSession(spec: SessionSpec, prng: Prng, pool: TextPool): number {
  const out = new LineWriter(spec.path);
  const model = prng.pick(MODELS);
  const b = new SessionBuilder(prng, pool, spec.cwd, { leafId: null, clockMs: spec.startMs, contextTokens: 4_000, model });
  out.write({ type: "session", version: 3, id: spec.sessionId, timestamp: new Date(spec.startMs).toISOString(), cwd: spec.cwd });
  out.write(b.modelChange(model));
  out.write(b.thinkingLevelChange(prng.pick(["off", "low", "medium", "high"])));
  const named = prng.chance(0.3);

  let turn = 0;
  while (out.bytes < spec.targetBytes) {
    // Images are large; only put them where they cannot swamp a small session.
    const roomForImage = spec.targetBytes - out.bytes > 600_000;
    out.write(b.user(prng.logInt(30, 2_500), roomForImage && prng.chance(0.012)));
    // One user prompt starts an agent loop of several model/tool rounds.
    const rounds = prng.int(1, 8);
    for (let r = 0; r < rounds && out.bytes < spec.targetBytes; r++) {
      const { entry, calls } = b.assistant({
        thinkingChars: prng.chance(0.7) ? prng.logInt(80, 5_000) : 0,
        textChars: prng.chance(0.6) ? prng.logInt(40, 3_000) : 0,
        toolCalls: prng.chance(0.15) ? prng.int(2, 3) : 1,
      });
      out.write(entry);
      for (const call of calls) {
        const image = call.name === "read" && roomForImage && prng.chance(0.004);
        out.write(b.toolResult(call, prng.logInt(100, 40_000), image));
      }
    }
    out.write(b.assistant({ thinkingChars: prng.logInt(80, 2_000), textChars: prng.logInt(100, 4_000), toolCalls: 0 }).entry);
    if (turn === 0 && named) out.write(b.sessionInfo(`Work on ${spec.cwd.split("/").pop()}`));
    if (prng.chance(0.02)) out.write(b.modelChange(prng.pick(MODELS)));
    if (b.state.contextTokens > COMPACT_AT_TOKENS) out.write(b.compaction());
    turn++;
  }
  out.close();
  return out.bytes;
}
