// Turning recovered log messages into pi v3 entries: one linear chain (event streams carry no
// tree), ids derived from content (ids.ts), and model_change entries where the assistant's model
// changes, so `pi --session FILE` continues with the model the conversation used.

import { createHash } from "node:crypto";
import type { SessionEntry, SessionHeader } from "../model/session.js";
import { EntryIds } from "./ids.js";
import { Q, type LogSession } from "./log-session.js";
import { messageText } from "./message-key.js";
import { PROVENANCE_TYPE } from "./types.js";

/** Tool call ids of an assistant message: tells apart tool-only messages with the same time. */
function toolCallsOf(m: Record<string, unknown>): string {
  if (!Array.isArray(m.content)) return "";
  return (m.content as { type?: string; id?: string }[]).filter((b) => b?.type === "toolCall").map((b) => b.id).join(",");
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A uuid-shaped id derived from the log's first message, so re-running gives the same session. */
export function inventedSessionId(seed: string): string {
  const h = createHash("sha256").update(seed).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export interface BuiltLogSession {
  entries: SessionEntry[];
  gaps: string[];
  firstTime: number | undefined;
}

export function buildLogEntries(header: SessionHeader, log: LogSession): BuiltLogSession {
  const ids = new EntryIds();
  const entries: SessionEntry[] = [];
  let parentId: string | null = null;
  let lastTime: number | undefined;
  let model = "";
  const push = (fields: Record<string, unknown>, seed: string, time: number | undefined) => {
    const id = ids.make(`${header.id}|${seed}`);
    const ts = time ?? lastTime ?? Date.parse(header.timestamp);
    entries.push({ ...fields, id, parentId, timestamp: iso(Number.isFinite(ts) ? ts : 0) } as SessionEntry);
    parentId = id;
  };
  const counts = { partial: 0, toolExecution: 0, compaction: 0 };

  for (const slot of log.slots) {
    const m = slot.message;
    const time = typeof m.timestamp === "number" ? m.timestamp : undefined;
    if (slot.kind === "compaction") {
      counts.compaction++;
      // The summary's firstKeptEntryId names an entry id of the lost file; a real compaction
      // entry pointing nowhere would hide messages from pi, so keep it as data instead.
      push({ type: "custom", customType: `${PROVENANCE_TYPE}/compaction`, data: m }, `compaction|${m.summary}`, lastTime);
      continue;
    }
    if (m.role === "assistant" && typeof m.provider === "string" && typeof m.model === "string" && `${m.provider}/${m.model}` !== model) {
      model = `${m.provider}/${m.model}`;
      push({ type: "model_change", provider: m.provider, modelId: m.model }, `model|${model}|${time}`, time);
    }
    if (slot.quality === Q.partial) counts.partial++;
    if (slot.quality === Q.toolExecution) counts.toolExecution++;
    // A result rebuilt from tool_execution_end has no time of its own; it came right after its call.
    const message = time === undefined ? { ...m, timestamp: lastTime ?? Date.parse(header.timestamp) } : m;
    const seed = `${m.role}|${message.timestamp}|${m.toolCallId ?? ""}|${messageText(m).slice(0, 400)}|${toolCallsOf(m)}`;
    if (m.role === "custom") {
      const { role: _r, timestamp: _t, ...rest } = message;
      push({ type: "custom_message", ...rest }, seed, time);
    } else push({ type: "message", message }, seed, time);
    if (time !== undefined) lastTime = time;
  }

  const gaps = ["event streams carry no entry ids, branches, labels, session names or thinking-level changes: rebuilt as one linear chain"];
  if (counts.partial) gaps.push(`${counts.partial} assistant message(s) only partly streamed (no message_end or later copy): kept as far as they got`);
  if (counts.toolExecution) gaps.push(`${counts.toolExecution} tool result(s) rebuilt from tool_execution_end: timestamp approximated`);
  if (counts.compaction) gaps.push(`${counts.compaction} compaction(s) kept as custom entries: pi will not apply them, so the full history goes back into context`);
  const first = log.slots.map((s) => s.message.timestamp).find((t): t is number => typeof t === "number");
  return { entries, gaps, firstTime: first };
}
