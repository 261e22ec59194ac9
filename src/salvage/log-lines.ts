// Finding pi events inside log lines. pi's --mode json/rpc print one bare JSON object per line;
// web UIs and their servers wrap them: a timestamp or "[pi-web]" prefix, an SSE "data: " prefix,
// a {type:"rpc_event",event} envelope. Everything else on a line is ignored.

export type LineResult =
  | { kind: "object"; value: Record<string, unknown> }
  /** No "{" at all: ordinary log text. */
  | { kind: "text" }
  /** Has a "{" but no JSON object could be read from it (torn, or text with braces). */
  | { kind: "broken" };

/** Prefixes are short; trying only the first few "{" keeps a 100 MB line at a few parses. */
const MAX_STARTS = 4;

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Peel envelopes until a pi event, response or header is left. */
export function unwrap(value: Record<string, unknown>, depth = 0): Record<string, unknown> {
  if (depth > 3) return value;
  const inner = value.type === "rpc_event" || typeof value.type !== "string" ? (value.event ?? value.data ?? value.payload) : undefined;
  if (typeof inner === "object" && inner !== null && !Array.isArray(inner)) return unwrap(inner as Record<string, unknown>, depth + 1);
  if (typeof inner === "string" && inner.startsWith("{")) {
    const parsed = parseObject(inner);
    if (parsed) return unwrap(parsed, depth + 1);
  }
  return value;
}

export function readLogLine(raw: string): LineResult {
  const text = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
  let start = text.indexOf("{");
  if (start === -1) return { kind: "text" };
  const end = text.lastIndexOf("}");
  for (let tries = 0; start !== -1 && start < end && tries < MAX_STARTS; tries++) {
    // Whole rest of the line first; then up to the last "}" for loggers that append a suffix.
    const value = parseObject(text.slice(start)) ?? (end < text.length - 1 ? parseObject(text.slice(start, end + 1)) : undefined);
    if (value) return { kind: "object", value: unwrap(value) };
    start = text.indexOf("{", start + 1);
  }
  return { kind: "broken" };
}
