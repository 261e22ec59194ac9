// Claude Code transcripts into the common session model. A transcript (projects/<key>/<uuid>.jsonl)
// is append-only JSONL where each conversational line carries `uuid` and `parentUuid`:
// - `user` lines hold a prompt (text/image blocks) or the tool_result blocks of the previous
//   assistant turn; each tool_result becomes its own toolResult message;
// - `assistant` lines hold one content block each (thinking, text or tool_use) of an API message,
//   so one API message spans several lines with the same message.id: its usage is counted once;
// - every other line (attachment, queue-operation, summary, cost-state, api-request, …) becomes a
//   `claude:<type>` custom entry, kept whole.
// The uuid chain is the tree: a `parentUuid` that points back past other lines is a branch (a
// rewind or an edited prompt). Lines without a uuid are chained where they sit, and the next
// uuid line is hung below them, so that bookkeeping lines never read as branches.

import type { AssistantMessage, ImageContent, SessionEntry, TextContent, ToolResultMessage, Usage, UserMessage } from "../../model/session.js";
import { isoToMs, num, parseJsonLines, str, titleOf } from "../jsonl.js";
import type { AgentSession, SessionMeta } from "../types.js";

type Rec = Record<string, unknown>;

export function claudeUsage(u: Rec | undefined, costUSD?: number): Usage | undefined {
  if (!u) return undefined;
  const input = num(u.input_tokens);
  const output = num(u.output_tokens);
  const cacheRead = num(u.cache_read_input_tokens);
  const cacheWrite = num(u.cache_creation_input_tokens);
  const total = typeof costUSD === "number" ? costUSD : 0;
  return { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total } };
}

const STOP: Record<string, AssistantMessage["stopReason"]> = { end_turn: "stop", tool_use: "toolUse", max_tokens: "length", stop_sequence: "stop", refusal: "error" };

function imageOf(b: Rec): ImageContent | undefined {
  const src = b.source as Rec | undefined;
  if (src?.type !== "base64" || typeof src.data !== "string") return undefined;
  return { type: "image", data: src.data, mimeType: str(src.media_type) ?? "application/octet-stream" };
}

/** Text and image blocks of a user message or a tool result, as the model holds them. */
function userBlocks(content: unknown): (TextContent | ImageContent)[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) return [];
  const out: (TextContent | ImageContent)[] = [];
  for (const b of content as Rec[]) {
    if (b?.type === "text" && typeof b.text === "string") out.push({ type: "text", text: b.text });
    else if (b?.type === "image") {
      const img = imageOf(b);
      if (img) out.push(img);
    }
  }
  return out;
}

function assistantBlocks(content: unknown): AssistantMessage["content"] {
  const out: AssistantMessage["content"] = [];
  for (const b of (Array.isArray(content) ? content : []) as Rec[]) {
    if (b?.type === "text" && typeof b.text === "string") out.push({ type: "text", text: b.text });
    else if (b?.type === "thinking") out.push({ type: "thinking", thinking: str(b.thinking) ?? "", ...(str(b.signature) ? { thinkingSignature: str(b.signature) } : {}) });
    else if (b?.type === "redacted_thinking") out.push({ type: "thinking", thinking: "", redacted: true, raw: b });
    else if (b?.type === "tool_use" || b?.type === "server_tool_use") {
      out.push({ type: "toolCall", id: str(b.id) ?? "", name: str(b.name) ?? "", arguments: (b.input && typeof b.input === "object" ? b.input : {}) as Record<string, unknown> });
    }
  }
  return out;
}

/** The session's first real prompt (not a tool result, a command caveat or a meta line). */
function promptText(rec: Rec): string | undefined {
  if (rec.type !== "user" || rec.isMeta === true) return undefined;
  const text = userBlocks((rec.message as Rec | undefined)?.content)
    .filter((b): b is TextContent => b.type === "text")
    .map((b) => b.text)
    .join("\n");
  return text && !text.startsWith("<") ? text : undefined;
}

/** What a listing shows, from the head of a transcript. */
export function claudeMetaFromHead(text: string, partial: boolean, meta: SessionMeta): SessionMeta {
  const out = { ...meta };
  for (const { value: rec } of parseJsonLines(text, [], partial)) {
    if (!out.cwd && typeof rec.cwd === "string") out.cwd = rec.cwd;
    if (!out.started && typeof rec.timestamp === "string") out.started = rec.timestamp;
    if (rec.type === "custom-title" && typeof rec.customTitle === "string") out.title = rec.customTitle;
    if (!out.title) {
      const p = promptText(rec) ?? (rec.type === "summary" ? str(rec.summary) : undefined);
      if (p) out.title = titleOf(p);
    }
  }
  return out;
}

export function readClaudeTranscript(text: string, meta: SessionMeta): AgentSession {
  const warnings: string[] = [];
  const entries: SessionEntry[] = [];
  const seen = new Set<string>();
  /** uuid → the id of the last entry chained after it (itself, or the bookkeeping lines below it). */
  const tail = new Map<string, string>();
  const toolNames = new Map<string, string>();
  const countedMessages = new Set<string>();
  let last: string | null = null;
  let lastUuid: string | undefined;
  let cwd = "";
  let started = "";
  let title: string | undefined;
  let sessionId = meta.id;

  const push = (e: SessionEntry) => {
    entries.push(e);
    last = e.id;
    if (lastUuid) tail.set(lastUuid, e.id);
  };

  for (const { line, value: rec } of parseJsonLines(text, warnings)) {
    const timestamp = str(rec.timestamp) ?? started;
    if (!cwd && typeof rec.cwd === "string") cwd = rec.cwd;
    if (!started && timestamp) started = timestamp;
    if (typeof rec.sessionId === "string" && sessionId === meta.id) sessionId = rec.sessionId;
    if (rec.type === "custom-title" && typeof rec.customTitle === "string") title = rec.customTitle;
    if (!title) {
      const p = promptText(rec);
      if (p) title = titleOf(p);
    }
    const uuid = str(rec.uuid);
    if (!uuid || seen.has(uuid)) {
      if (uuid) warnings.push(`line ${line}: uuid ${uuid} seen before; kept as a custom entry`);
      push({ type: "custom", id: `line-${line}`, parentId: last, timestamp, customType: `claude:${String(rec.type)}`, data: rec });
      continue;
    }
    seen.add(uuid);
    const nativeParent = str(rec.parentUuid) ?? str(rec.logicalParentUuid);
    let parentId: string | null;
    if (nativeParent && tail.has(nativeParent)) parentId = tail.get(nativeParent)!;
    else {
      if (nativeParent) warnings.push(`line ${line}: parent ${nativeParent} is not in this transcript; chained to the line before`);
      parentId = last;
    }
    lastUuid = undefined; // a new uuid line starts its own tail
    const ms = isoToMs(timestamp);
    const message = rec.message as Rec | undefined;
    const pieces: SessionEntry[] = [];
    if (rec.type === "assistant" && message) {
      const content = assistantBlocks(message.content);
      for (const b of content) if (b.type === "toolCall") toolNames.set(b.id, b.name);
      const msgId = str(message.id);
      // One API message spans several lines; its usage is the message's, counted on its first line.
      const firstOfMessage = !msgId || !countedMessages.has(msgId);
      if (msgId) countedMessages.add(msgId);
      const usage = firstOfMessage ? claudeUsage(message.usage as Rec | undefined, typeof rec.costUSD === "number" ? rec.costUSD : undefined) : undefined;
      const msg: AssistantMessage = {
        role: "assistant",
        content,
        api: "anthropic-messages",
        provider: "anthropic",
        ...(str(message.model) ? { model: str(message.model) } : {}),
        ...(usage ? { usage } : {}),
        ...(STOP[String(message.stop_reason)] ? { stopReason: STOP[String(message.stop_reason)] } : {}),
        ...(rec.isApiErrorMessage === true ? { stopReason: "error" as const, errorMessage: userBlocks(message.content).map((b) => (b.type === "text" ? b.text : "")).join("") } : {}),
        timestamp: ms,
      };
      pieces.push({ type: "message", id: uuid, parentId, timestamp, message: msg, raw: rec });
    } else if (rec.type === "user" && message) {
      const content = message.content;
      const results = Array.isArray(content) ? (content as Rec[]).filter((b) => b?.type === "tool_result") : [];
      for (const r of results) {
        const toolCallId = str(r.tool_use_id) ?? "";
        const res: ToolResultMessage = {
          role: "toolResult",
          toolCallId,
          toolName: toolNames.get(toolCallId) ?? "",
          content: userBlocks(r.content),
          isError: r.is_error === true,
          ...(rec.toolUseResult !== undefined ? { details: rec.toolUseResult } : {}),
          timestamp: ms,
        };
        pieces.push({ type: "message", id: pieces.length ? `${uuid}#${pieces.length}` : uuid, parentId: null, timestamp, message: res, raw: rec });
      }
      const blocks = userBlocks(Array.isArray(content) ? (content as Rec[]).filter((b) => b?.type !== "tool_result") : content);
      if (blocks.length || !results.length) {
        const msg: UserMessage = { role: "user", content: typeof content === "string" ? content : blocks, timestamp: ms };
        pieces.push({ type: "message", id: pieces.length ? `${uuid}#${pieces.length}` : uuid, parentId: null, timestamp, message: msg, raw: rec });
      }
    } else {
      pieces.push({ type: "custom", id: uuid, parentId, timestamp, customType: `claude:${String(rec.type)}`, data: rec });
    }
    pieces.forEach((p, i) => {
      p.parentId = i === 0 ? parentId : pieces[i - 1].id;
      push(p);
    });
    tail.set(uuid, last!);
    lastUuid = uuid;
  }
  const header = { type: "session" as const, version: 3, id: sessionId, timestamp: started, cwd, agent: "claude" };
  const updated = entries.at(-1)?.timestamp;
  return {
    meta: { ...meta, ...(cwd ? { cwd } : {}), ...(title ? { title } : {}), ...(started ? { started } : {}), ...(updated && !meta.updated ? { updated } : {}) },
    header,
    entries,
    leafId: last,
    warnings,
  };
}
