// Finding pi events inside log lines. pi's --mode json/rpc print one bare JSON object per line;
// web UIs and their servers wrap them: a timestamp or "[pi-web]" prefix, an SSE "data: " prefix,
// a {type:"rpc_event",event} envelope. Everything else on a line is ignored.

import { parseBounded } from "../model/nesting.js";

export type LineResult =
  /** `cut`: containers nested too deep to walk, kept as their raw JSON text (pi/nesting.ts). */
  | { kind: "object"; value: Record<string, unknown>; cut: number }
  /** No "{" at all: ordinary log text. */
  | { kind: "text" }
  /** Has a "{" but no JSON object could be read from it (torn, or text with braces). */
  | { kind: "broken" };

/** Prefixes are short; trying only the first few "{" keeps a 100 MB line at a few parses. */
const MAX_STARTS = 4;

function parseObject(text: string): { value: Record<string, unknown>; cut: number } | undefined {
  const parsed = parseBounded(text);
  if (!parsed.ok) return undefined;
  const v = parsed.value;
  return typeof v === "object" && v !== null && !Array.isArray(v) ? { value: v as Record<string, unknown>, cut: parsed.cut } : undefined;
}

/** Peel envelopes until a pi event, response or header is left; `cut` adds what inner texts lost. */
export function unwrap(value: Record<string, unknown>, depth = 0, cut = 0): { value: Record<string, unknown>; cut: number } {
  if (depth > 3) return { value, cut };
  const inner = value.type === "rpc_event" || typeof value.type !== "string" ? (value.event ?? value.data ?? value.payload) : undefined;
  if (typeof inner === "object" && inner !== null && !Array.isArray(inner)) return unwrap(inner as Record<string, unknown>, depth + 1, cut);
  if (typeof inner === "string" && inner.startsWith("{")) {
    const parsed = parseObject(inner);
    if (parsed) return unwrap(parsed.value, depth + 1, cut + parsed.cut);
  }
  return { value, cut };
}

export function readLogLine(raw: string): LineResult {
  const text = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
  let start = text.indexOf("{");
  if (start === -1) return { kind: "text" };
  const end = text.lastIndexOf("}");
  for (let tries = 0; start !== -1 && start < end && tries < MAX_STARTS; tries++) {
    // Whole rest of the line first; then up to the last "}" for loggers that append a suffix.
    const parsed = parseObject(text.slice(start)) ?? (end < text.length - 1 ? parseObject(text.slice(start, end + 1)) : undefined);
    if (parsed) return { kind: "object", ...unwrap(parsed.value, 0, parsed.cut) };
    start = text.indexOf("{", start + 1);
  }
  return { kind: "broken" };
}
