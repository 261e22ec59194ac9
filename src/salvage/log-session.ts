// Rebuilding one session's messages from pi's event stream. Each message gets a slot in stream
// order; later and better copies upgrade the slot. Quality ranks what a copy is worth:
// message_end is authoritative; turn_end, agent_end and get_messages carry final copies too;
// tool_execution_end lacks the result's timestamp; message_start/update hold a partial stream.

import { isDeepStrictEqual } from "node:util";
import { messageText } from "./message-key.js";

export const Q = { partial: 1, toolExecution: 2, fallback: 3, final: 4 } as const;

export type Msg = Record<string, unknown> & { role?: unknown; timestamp?: unknown };

export interface Slot {
  kind: "message" | "compaction";
  message: Msg;
  quality: number;
  /** Which event kind supplied the copy we keep; for the report. */
  via: string;
}

const isObj = (v: unknown): v is Msg => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Roles pi stores as session entries; others (compactionSummary...) are derived views. pi 1.x
 * stores the prompt and tool loadout as role "system" messages (docs/session-format.md).
 */
const STORED_ROLES = new Set(["user", "assistant", "toolResult", "bashExecution", "custom", "system"]);

export class LogSession {
  readonly slots: Slot[] = [];
  /** The assistant message being streamed (message_start .. message_end). */
  private open: Slot | undefined;
  private readonly byToolCall = new Map<string, Slot>();
  /** Slots by role and timestamp: the candidates when a copy of a message turns up again. */
  private readonly byStamp = new Map<string, Slot[]>();

  get messageCount(): number {
    return this.slots.filter((s) => s.kind === "message").length;
  }

  private find(m: Msg): Slot | undefined {
    if (m.role === "toolResult" && typeof m.toolCallId === "string") return this.byToolCall.get(m.toolCallId);
    // A system message's content is usually empty and it is never streamed: two patches sent in
    // one millisecond differ only in their sections and tool lists, so compare all of it.
    if (m.role === "system") return this.byStamp.get(`${m.role}|${m.timestamp}`)?.find((s) => isDeepStrictEqual(s.message, m));
    const text = messageText(m);
    const calls = new Set(toolCallIds(m));
    let prefixMatch: Slot | undefined;
    for (const s of this.byStamp.get(`${m.role}|${m.timestamp}`) ?? []) {
      // Compared in place: serialising a 100 MB message to compare would double memory.
      if (isDeepStrictEqual(s.message.content, m.content)) return s;
      // A partial stream of this very message: its text so far is a prefix of the final text
      // and the tool calls it got so far are all in the final message.
      if (!prefixMatch && s.quality < Q.fallback && text.startsWith(messageText(s.message)) && toolCallIds(s.message).every((id) => calls.has(id))) {
        prefixMatch = s;
      }
    }
    return prefixMatch;
  }

  private index(slot: Slot): void {
    const key = `${slot.message.role}|${slot.message.timestamp}`;
    const list = this.byStamp.get(key) ?? [];
    if (!list.includes(slot)) this.byStamp.set(key, [...list, slot]);
    const id = slot.message.toolCallId;
    if (slot.message.role === "toolResult" && typeof id === "string") this.byToolCall.set(id, slot);
  }

  private upgrade(slot: Slot, m: Msg, quality: number, via: string): void {
    if (quality > slot.quality || (quality === slot.quality && quality <= Q.partial)) {
      slot.message = m;
      slot.quality = quality;
      slot.via = via;
      this.index(slot);
    }
  }

  /** A copy seen in stream order (message_start/update/end, tool_execution_end). */
  add(m: unknown, quality: number, via: string): Slot | undefined {
    if (!isObj(m) || !STORED_ROLES.has(String(m.role))) return undefined;
    const found = this.find(m);
    if (found) {
      this.upgrade(found, m, quality, via);
      return found;
    }
    const slot: Slot = { kind: "message", message: m, quality, via };
    this.slots.push(slot);
    this.index(slot);
    return slot;
  }

  /**
   * An ordered list of final copies (agent_end.messages, get_messages, turn_end): messages the
   * stream lost are put right after their predecessor in the list, so order survives.
   */
  addOrdered(list: unknown, quality: number, via: string): void {
    if (!Array.isArray(list)) return;
    const found = list.map((m) => (isObj(m) && STORED_ROLES.has(String(m.role)) ? this.find(m) : undefined));
    // The next message of the list we already hold, per position: computed once, back to front,
    // because get_messages lists can hold a whole long session.
    const nextKnown: (Slot | undefined)[] = new Array(found.length);
    for (let i = found.length - 1, next: Slot | undefined; i >= 0; i--) {
      nextKnown[i] = next;
      if (found[i]) next = found[i];
    }
    let prev: Slot | undefined;
    list.forEach((m, i) => {
      if (!isObj(m) || !STORED_ROLES.has(String(m.role))) return;
      const slot = found[i];
      if (slot) {
        this.upgrade(slot, m, quality, via);
        prev = slot;
        return;
      }
      const fresh: Slot = { kind: "message", message: m, quality, via };
      const next = nextKnown[i];
      const at = prev ? this.slots.indexOf(prev) + 1 : next ? this.slots.indexOf(next) : this.slots.length;
      this.slots.splice(at, 0, fresh);
      this.index(fresh);
      prev = fresh;
    });
  }

  messageStart(m: unknown): void {
    if (!isObj(m) || m.role !== "assistant") {
      this.open = undefined;
      this.add(m, Q.final, "message_start");
      return;
    }
    // Every assistant message_start is a new message, even when an earlier partial one has the
    // same timestamp and (still empty) text.
    this.open = { kind: "message", message: m, quality: Q.partial, via: "message_start" };
    this.slots.push(this.open);
    this.index(this.open);
  }

  /** Old form: the full partial message; newer form: only assistantMessageEvent deltas. */
  messageUpdate(event: Record<string, unknown>): void {
    const ame = isObj(event.assistantMessageEvent) ? event.assistantMessageEvent : undefined;
    if (ame?.type === "done" && isObj(ame.message)) {
      this.open = this.add(ame.message, Q.fallback, "message_update done");
      return;
    }
    const full = isObj(event.message) ? event.message : isObj(ame?.partial) ? ame.partial : undefined;
    if (full) {
      if (this.open) this.upgrade(this.open, full, Q.partial, "message_update");
      else this.open = this.add(full, Q.partial, "message_update");
      return;
    }
    if (ame && this.open && this.open.quality <= Q.partial) applyDelta(this.open.message, ame);
  }

  messageEnd(m: unknown): void {
    if (this.open && isObj(m) && m.role === "assistant" && this.open.quality < Q.final) {
      this.open.message = m;
      this.open.quality = Q.final;
      this.open.via = "message_end";
      this.index(this.open);
      this.open = undefined;
      return;
    }
    this.open = undefined;
    this.add(m, Q.final, "message_end");
  }

  toolExecutionEnd(event: Record<string, unknown>): void {
    if (typeof event.toolCallId !== "string" || this.byToolCall.has(event.toolCallId)) return;
    const result = isObj(event.result) ? event.result : {};
    this.add(
      {
        role: "toolResult",
        toolCallId: event.toolCallId,
        toolName: event.toolName,
        content: Array.isArray(result.content) ? result.content : [],
        ...(result.details !== undefined ? { details: result.details } : {}),
        isError: event.isError === true,
      },
      Q.toolExecution,
      "tool_execution_end",
    );
  }

  compaction(result: unknown): void {
    if (isObj(result) && typeof result.summary === "string") this.slots.push({ kind: "compaction", message: result, quality: Q.final, via: "compaction_end" });
  }
}

function toolCallIds(m: Msg): string[] {
  if (!Array.isArray(m.content)) return [];
  return (m.content as Msg[]).filter((b) => isObj(b) && b.type === "toolCall" && typeof b.id === "string").map((b) => String(b.id));
}

/** Apply one delta-only streaming event to the message being built. */
function applyDelta(message: Msg, ame: Record<string, unknown>): void {
  const content = (Array.isArray(message.content) ? message.content : (message.content = [])) as Record<string, unknown>[];
  const i = typeof ame.contentIndex === "number" ? ame.contentIndex : content.length;
  const delta = typeof ame.delta === "string" ? ame.delta : "";
  switch (ame.type) {
    case "text_start":
      content[i] = { type: "text", text: "" };
      break;
    case "text_delta":
      content[i] ??= { type: "text", text: "" };
      content[i].text = String(content[i].text ?? "") + delta;
      break;
    case "text_end":
      if (typeof ame.content === "string") content[i] = { ...(content[i] ?? {}), type: "text", text: ame.content };
      break;
    case "thinking_start":
      content[i] = { type: "thinking", thinking: "" };
      break;
    case "thinking_delta":
      content[i] ??= { type: "thinking", thinking: "" };
      content[i].thinking = String(content[i].thinking ?? "") + delta;
      break;
    case "thinking_end":
      if (typeof ame.content === "string") content[i] = { ...(content[i] ?? {}), type: "thinking", thinking: ame.content };
      break;
    case "toolcall_end":
      if (isObj(ame.toolCall)) content[i] = ame.toolCall;
      break;
    case "error":
      if (isObj(ame.error)) Object.assign(message, { stopReason: ame.error.stopReason, errorMessage: ame.error.errorMessage });
      break;
  }
}
