// JSONL helpers the agent readers share: a bounded head of a file (listings read only that), and
// tolerant line parsing (a torn last line is the agent's own write in progress, not an error).

import type { FileReader, FileRef } from "./types.js";

/** The first `maxBytes` of a file (fewer when it is shorter), read by streaming: a listing never reads a whole transcript. */
export async function readHead(files: FileReader, ref: FileRef, maxBytes: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of files.stream(ref)) {
    parts.push(chunk);
    size += chunk.length;
    if (size >= maxBytes) break;
  }
  return Buffer.concat(parts).subarray(0, maxBytes);
}

export interface JsonLine {
  /** 1-based line number in the file. */
  line: number;
  value: Record<string, unknown>;
}

/**
 * The JSON objects of JSONL text, in order, with a warning per line that is not one. When
 * `partial` (a head cut at a byte limit), the last line is dropped unparsed: it may be cut.
 */
export function parseJsonLines(text: string, warnings: string[], partial = false): JsonLine[] {
  const lines = text.split("\n");
  if (partial) lines.pop();
  const out: JsonLine[] = [];
  lines.forEach((raw, i) => {
    if (!raw.trim()) return;
    try {
      const value: unknown = JSON.parse(raw);
      if (value && typeof value === "object" && !Array.isArray(value)) out.push({ line: i + 1, value: value as Record<string, unknown> });
      else warnings.push(`line ${i + 1}: not a JSON object`);
    } catch {
      // The agent may be writing the last line right now: that is not damage.
      warnings.push(i === lines.length - 1 ? `line ${i + 1}: incomplete last line (being written?)` : `line ${i + 1}: not JSON`);
    }
  });
  return out;
}

/** A short title from a prompt: its first line, at most 80 characters. */
export function titleOf(text: string): string {
  const first = text.trim().split("\n")[0] ?? "";
  return first.length > 80 ? `${first.slice(0, 79)}…` : first;
}

export const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
export const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
export const isoToMs = (iso: string | undefined): number => {
  const t = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(t) ? t : 0;
};
