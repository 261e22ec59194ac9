// Facts per session for the fidelity report: what the written session holds (kept), and what it
// visibly lacks (not kept: calls known by name only, results not recorded, text the source cut,
// messages without usage or model, made-up times). Counted from the entries as written, so a fact
// another source filled in during the merge is not reported missing.

import type { SessionEntry } from "../model/session.js";
import { isNameOnlyCall, isUnrecordedResult } from "./not-recorded.js";
import { PROVENANCE_TYPE } from "./types.js";

export type Counts = Record<string, number>;

const TRUNCATED = /\.\.\. \(truncated, \d+ chars total\)/;

type Block = { type?: string; text?: unknown };

function add(c: Counts, key: string, n = 1): void {
  if (n > 0) c[key] = (c[key] ?? 0) + n;
}

export function sessionFacts(entries: readonly SessionEntry[], timesKnown: boolean): { kept: Counts; notKept: Counts } {
  const kept: Counts = {};
  const notKept: Counts = {};
  for (const e of entries) {
    if (e.type !== "message") {
      const custom = e.type === "custom" && String((e as { customType?: unknown }).customType ?? "").startsWith(PROVENANCE_TYPE);
      if (!custom) add(kept, "other entries");
      continue;
    }
    const m = e.message as { role?: string; content?: unknown; provider?: string; model?: string };
    const blocks = Array.isArray(m.content) ? (m.content as Block[]) : [];
    const texts = typeof m.content === "string" ? [m.content] : blocks.filter((b) => b?.type === "text").map((b) => String(b.text ?? ""));
    add(notKept, "texts cut by the source", texts.filter((t) => TRUNCATED.test(t)).length);
    switch (m.role) {
      case "user":
        add(kept, "user messages");
        break;
      case "assistant": {
        add(kept, "assistant messages");
        add(kept, "assistant text blocks", blocks.filter((b) => b?.type === "text").length);
        add(kept, "thinking blocks", blocks.filter((b) => b?.type === "thinking").length);
        const calls = blocks.filter((b) => b?.type === "toolCall");
        const byName = calls.filter(isNameOnlyCall).length;
        add(kept, "tool calls with arguments", calls.length - byName);
        add(kept, "tool calls by name only", byName);
        add(notKept, "tool call arguments", byName);
        if (m.provider && m.provider !== "unknown") add(kept, "usage/model");
        else add(notKept, "usage/model");
        break;
      }
      case "toolResult":
        if (isUnrecordedResult(m)) add(notKept, "tool results (not recorded)");
        else add(kept, "tool results");
        break;
      default:
        add(kept, `${m.role ?? "unknown"} messages`);
    }
    add(timesKnown ? kept : notKept, timesKnown ? "timestamps" : "timestamps (made up)");
  }
  return { kept: ordered(kept), notKept: ordered(notKept) };
}

const ORDER = [
  "user messages",
  "assistant messages",
  "assistant text blocks",
  "thinking blocks",
  "tool calls with arguments",
  "tool calls by name only",
  "tool call arguments",
  "tool results",
  "tool results (not recorded)",
  "usage/model",
  "texts cut by the source",
  "timestamps",
  "timestamps (made up)",
  "other entries",
];

/** Always the same order, so reports read alike from session to session. */
function ordered(c: Counts): Counts {
  const rank = (k: string) => (ORDER.includes(k) ? ORDER.indexOf(k) : ORDER.length);
  return Object.fromEntries(Object.entries(c).sort(([a], [b]) => rank(a) - rank(b)));
}

export function formatCounts(c: Counts): string {
  return (
    Object.entries(c)
      .map(([k, n]) => `${k} ${n}`)
      .join(", ") || "nothing"
  );
}
