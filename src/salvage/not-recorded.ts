// Tool calls a source names without their arguments or result (pi-hermes-memory stores only the
// tool names of each assistant turn). They are kept as real toolCall blocks so a reader sees the
// assistant ran `bash` before its next words, each answered by a toolResult so pi's context stays
// valid (every call answered). Both carry a `_pi_guard` marker: in the arguments, where every
// export and a resumed model see it, and in the result's `details`, which pi keeps but never sends.

export const MARK = "_pi_guard";
export const ARGS_NOT_RECORDED = "arguments not recorded";
export const RESULT_NOT_RECORDED = "result not recorded";

type Block = { type?: string; arguments?: unknown };

export function nameOnlyCall(id: string, name: string): Record<string, unknown> {
  return { type: "toolCall", id, name, arguments: { [MARK]: ARGS_NOT_RECORDED } };
}

/**
 * isError is false: the source does not say the tool failed, and marking it failed would invent
 * a fact (a resumed model would "retry" it). The text says plainly that nothing was recorded.
 */
export function unrecordedResult(toolCallId: string, toolName: string, timestamp: number, source: string): Record<string, unknown> {
  return {
    role: "toolResult",
    toolCallId,
    toolName,
    content: [{ type: "text", text: `[pi-guard: the result of this ${toolName} call was not recorded by ${source}]` }],
    details: { [MARK]: RESULT_NOT_RECORDED, source },
    isError: false,
    timestamp,
  };
}

export function isNameOnlyCall(block: unknown): boolean {
  const b = block as Block | null;
  if (!b || b.type !== "toolCall" || typeof b.arguments !== "object" || b.arguments === null) return false;
  return (b.arguments as Record<string, unknown>)[MARK] === ARGS_NOT_RECORDED;
}

export function isUnrecordedResult(message: unknown): boolean {
  const m = message as { role?: string; details?: Record<string, unknown> } | null;
  return !!m && m.role === "toolResult" && typeof m.details === "object" && m.details !== null && m.details[MARK] === RESULT_NOT_RECORDED;
}

/** The usage of an assistant message whose source recorded none: zeros, so no total counts it. */
export function zeroUsage(): Record<string, unknown> {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
}
