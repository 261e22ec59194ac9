// Builds pi v3 session entries (see @mariozechner/pi-coding-agent docs/session-format.md).
// Shapes follow what pi 0.73 writes: 8-hex ids chained by parentId, ISO
// timestamps on entries, unix-ms timestamps inside messages, usage with cost.
import type { Prng } from "./prng.js";
import { sliceText, type TextPool } from "./textPool.js";

interface ModelInfo {
  provider: string;
  model: string;
  api: string;
  /** USD per million tokens: input, output, cacheRead, cacheWrite. */
  price: [number, number, number, number];
}

export const MODELS: readonly ModelInfo[] = [
  { provider: "anthropic", model: "claude-sonnet-4-5", api: "anthropic-messages", price: [3, 15, 0.3, 3.75] },
  { provider: "anthropic", model: "claude-opus-4-1", api: "anthropic-messages", price: [15, 75, 1.5, 18.75] },
  { provider: "openai", model: "gpt-5.1-codex", api: "openai-responses", price: [1.25, 10, 0.125, 0] },
  { provider: "google", model: "gemini-2.5-pro", api: "google-generative-ai", price: [1.25, 10, 0.31, 0] },
];

const TOOLS = ["read", "read", "read", "bash", "bash", "edit", "grep", "write", "find", "ls"] as const;
type Entry = Record<string, unknown>;

export interface BuilderState {
  leafId: string | null;
  clockMs: number;
  /** Context size in tokens; grows through the session like a real conversation. */
  contextTokens: number;
  model: ModelInfo;
}

export class SessionBuilder {
  private readonly ids = new Set<string>();
  private recentIds: string[] = [];

  constructor(
    private readonly prng: Prng,
    private readonly pool: TextPool,
    readonly cwd: string,
    public state: BuilderState,
  ) {}

  private nextId(): string {
    for (;;) {
      const id = this.prng.hex(8);
      if (!this.ids.has(id)) {
        this.ids.add(id);
        return id;
      }
    }
  }

  /** Common entry fields; advances the clock like a human-plus-model session would. */
  private base(type: string, stepMaxMs = 40_000): Entry {
    this.state.clockMs += this.prng.int(200, stepMaxMs);
    const id = this.nextId();
    const entry: Entry = { type, id, parentId: this.state.leafId, timestamp: new Date(this.state.clockMs).toISOString() };
    this.state.leafId = id;
    this.recentIds.push(id);
    if (this.recentIds.length > 32) this.recentIds.shift();
    return entry;
  }

  modelChange(model: ModelInfo): Entry {
    this.state.model = model;
    return { ...this.base("model_change", 2_000), provider: model.provider, modelId: model.model };
  }

  thinkingLevelChange(level: string): Entry {
    return { ...this.base("thinking_level_change", 2_000), thinkingLevel: level };
  }

  sessionInfo(name: string): Entry {
    return { ...this.base("session_info", 2_000), name };
  }

  compaction(): Entry {
    const firstKept = this.recentIds[Math.max(0, this.recentIds.length - 8)];
    const tokensBefore = this.state.contextTokens;
    this.state.contextTokens = Math.floor(tokensBefore * 0.2);
    const summary = `## Goal\n${sliceText(this.pool, this.prng, 400)}\n\n## Progress\n${sliceText(this.pool, this.prng, this.prng.int(800, 4000))}`;
    return { ...this.base("compaction"), summary, firstKeptEntryId: firstKept, tokensBefore, details: { readFiles: this.somePaths(4), modifiedFiles: this.somePaths(2) } };
  }

  user(textChars: number, withImage: boolean): Entry {
    const content: Entry[] = [{ type: "text", text: sliceText(this.pool, this.prng, textChars) }];
    if (withImage) content.push(this.image());
    const entry = this.base("message", 120_000);
    return { ...entry, message: { role: "user", content, timestamp: this.state.clockMs } };
  }

  /** An assistant turn; returns the tool calls it made so results can follow. */
  assistant(opts: { thinkingChars: number; textChars: number; toolCalls: number }): { entry: Entry; calls: Entry[] } {
    const content: Entry[] = [];
    if (opts.thinkingChars > 0) {
      content.push({
        type: "thinking",
        thinking: sliceText(this.pool, this.prng, opts.thinkingChars),
        // Real signatures are opaque encrypted blobs: incompressible base64.
        thinkingSignature: this.prng.bytes(this.prng.int(150, 700)).toString("base64"),
      });
    }
    if (opts.textChars > 0) content.push({ type: "text", text: sliceText(this.pool, this.prng, opts.textChars) });
    const calls: Entry[] = [];
    for (let i = 0; i < opts.toolCalls; i++) calls.push(this.toolCall());
    content.push(...calls);
    const entry = this.base("message");
    const output = Math.ceil((opts.thinkingChars + opts.textChars) / 4) + 40 * calls.length;
    return {
      entry: {
        ...entry,
        message: {
          role: "assistant",
          content,
          api: this.state.model.api,
          provider: this.state.model.provider,
          model: this.state.model.model,
          usage: this.usage(output),
          stopReason: calls.length > 0 ? "toolUse" : "stop",
          timestamp: this.state.clockMs,
        },
      },
      calls,
    };
  }

  toolResult(call: Entry, textChars: number, withImage: boolean): Entry {
    const name = call.name as string;
    const args = call.arguments as Record<string, unknown>;
    let text: string;
    let details: unknown;
    if (name === "edit") {
      text = `Successfully replaced 1 block(s) in ${String(args.path)}.`;
      details = { diff: sliceText(this.pool, this.prng, Math.min(textChars, 6000)), firstChangedLine: this.prng.int(1, 400) };
    } else if (name === "write") {
      text = `Successfully wrote ${String(args.content).length} bytes to ${String(args.path)}`;
    } else {
      text = sliceText(this.pool, this.prng, textChars);
    }
    const content: Entry[] = [{ type: "text", text: withImage ? `Read image file [image/png]` : text }];
    if (withImage) content.push(this.image());
    const isError = this.prng.chance(0.03);
    this.state.contextTokens += Math.ceil(text.length / 4);
    const entry = this.base("message", 8_000);
    const message: Entry = { role: "toolResult", toolCallId: call.id, toolName: name, content, isError, timestamp: this.state.clockMs };
    if (details !== undefined) message.details = details;
    return { ...entry, message };
  }

  private toolCall(): Entry {
    const name = this.prng.pick(TOOLS);
    const path = `${this.cwd}/${this.somePaths(1)[0]}`;
    let args: Record<string, unknown>;
    switch (name) {
      case "read":
        args = this.prng.chance(0.3) ? { path, offset: this.prng.int(1, 400), limit: this.prng.int(50, 400) } : { path };
        break;
      case "bash":
        args = { command: this.prng.pick(["npm test", "git status", "git diff --stat", "npx tsc --noEmit", `rg -n "export" ${path}`, `ls -la ${this.cwd}`]) };
        break;
      case "edit":
        args = { path, edits: [{ oldText: sliceText(this.pool, this.prng, this.prng.int(40, 600)), newText: sliceText(this.pool, this.prng, this.prng.int(40, 900)) }] };
        break;
      case "write":
        args = { path, content: sliceText(this.pool, this.prng, this.prng.logInt(200, 12_000)) };
        break;
      case "grep":
        args = { pattern: this.prng.pick(["TODO", "export function", "import .* from", "throw new Error"]), path: this.cwd };
        break;
      default:
        args = { path: this.cwd };
    }
    const id = this.state.model.provider === "anthropic" ? `toolu_01${this.prng.hex(22)}` : `call_${this.prng.hex(24)}`;
    return { type: "toolCall", id, name, arguments: args };
  }

  private image(): Entry {
    // PNG/JPEG payloads are already compressed, so random bytes are a fair stand-in.
    return { type: "image", data: this.prng.bytes(this.prng.logInt(20_000, 300_000)).toString("base64"), mimeType: "image/png" };
  }

  private usage(output: number): Entry {
    const [pIn, pOut, pCr, pCw] = this.state.model.price;
    const cacheRead = Math.floor(this.state.contextTokens * 0.85);
    const input = this.state.contextTokens - cacheRead + this.prng.int(20, 400);
    const cacheWrite = this.prng.int(0, 2000);
    this.state.contextTokens += output;
    const cost = { input: (input * pIn) / 1e6, output: (output * pOut) / 1e6, cacheRead: (cacheRead * pCr) / 1e6, cacheWrite: (cacheWrite * pCw) / 1e6, total: 0 };
    cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
    return { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost };
  }

  private somePaths(n: number): string[] {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(this.prng.pick(this.pool.paths));
    return out;
  }
}
