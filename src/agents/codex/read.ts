// Codex CLI rollouts into the common session model. A rollout
// (sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl) is append-only JSONL of envelopes
// `{timestamp, type, payload}`: `session_meta` first (id, cwd, cli_version), then `response_item`s
// (the Responses API items the model saw and said), `event_msg`s (what the UI showed, including
// `token_count`), `turn_context`, `token_usage_record` and others. Codex has no branches: a fork is
// a new rollout, so entries form one chain.
// - A user `message` is a user message; one that only carries Codex's injected context
//   (<environment_context>, <user_instructions>, AGENTS.md) and `developer` messages become
//   `codex:context` custom entries, so they neither title the session nor read as prompts.
// - Consecutive assistant items of one response (reasoning, message, function_call,
//   custom_tool_call, local_shell_call) form one assistant message: thinking, text, toolCalls.
// - `function_call_output` / `custom_tool_call_output` become toolResult messages.
// - Usage: a `token_usage_record`'s usage, else a `token_count` event's last_token_usage, goes to
//   the assistant message of that response, once.
// - Every other envelope becomes a `codex:<type>` (or `codex:event_msg:<payload type>`) custom entry.

import type { AssistantMessage, SessionEntry, TextContent, ToolResultMessage, Usage, UserMessage } from "../../model/session.js";
import { isoToMs, num, parseJsonLines, str, titleOf } from "../jsonl.js";
import type { AgentSession, SessionMeta } from "../types.js";

type Rec = Record<string, unknown>;

const CONTEXT_PREFIXES = ["<environment_context>", "<user_instructions>", "<permissions instructions>", "# AGENTS.md", "<INSTRUCTIONS>", "<skills_instructions>", "<user_shell_command>", "<turn_aborted>"];

export function codexUsage(u: Rec | undefined): Usage | undefined {
  if (!u || typeof u !== "object") return undefined;
  const cached = num(u.cached_input_tokens);
  // Responses' input_tokens include the cached part; the model counts them apart.
  const input = Math.max(0, num(u.input_tokens) - cached);
  const output = num(u.output_tokens);
  const cacheWrite = num(u.cache_write_input_tokens);
  const reasoning = num(u.reasoning_output_tokens);
  return {
    input,
    output,
    cacheRead: cached,
    cacheWrite,
    totalTokens: num(u.total_tokens) || input + cached + output,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    ...(reasoning ? { reasoning } : {}),
  };
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return (content as Rec[])
    .map((b) => (typeof b?.text === "string" ? b.text : ""))
    .filter(Boolean)
    .join("\n");
}

function userContent(content: unknown): UserMessage["content"] {
  if (typeof content === "string") return content;
  const out: (TextContent | { type: "image"; data: string; mimeType: string })[] = [];
  for (const b of (Array.isArray(content) ? content : []) as Rec[]) {
    if ((b?.type === "input_text" || b?.type === "text") && typeof b.text === "string") out.push({ type: "text", text: b.text });
    else if (b?.type === "input_image" && typeof b.image_url === "string") {
      const m = /^data:([^;]+);base64,(.*)$/s.exec(b.image_url);
      if (m) out.push({ type: "image", mimeType: m[1], data: m[2] });
    }
  }
  return out;
}

const isContext = (text: string) => CONTEXT_PREFIXES.some((p) => text.trimStart().startsWith(p));

function parseArgs(s: unknown): Record<string, unknown> {
  if (typeof s !== "string") return s && typeof s === "object" ? (s as Record<string, unknown>) : {};
  try {
    const v: unknown = JSON.parse(s);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return { raw: s };
  }
}

function outputText(output: unknown): { text: string; isError: boolean } {
  if (typeof output === "string") return { text: output, isError: false };
  const o = output as Rec | undefined;
  if (o && typeof o === "object") return { text: typeof o.content === "string" ? o.content : textOf(o.content), isError: o.success === false };
  return { text: "", isError: false };
}

/** The session's prompt for a title: the first user message that is not injected context. */
export function codexPrompt(env: Rec): string | undefined {
  const p = env.payload as Rec | undefined;
  if (env.type !== "response_item" || p?.type !== "message" || p.role !== "user") return undefined;
  const text = textOf(p.content);
  return text && !isContext(text) ? text : undefined;
}

/** What a listing shows, from the head of a rollout. */
export function codexMetaFromHead(text: string, partial: boolean, meta: SessionMeta): SessionMeta {
  const out = { ...meta };
  for (const { value: env } of parseJsonLines(text, [], partial)) {
    const p = env.payload as Rec | undefined;
    if (env.type === "session_meta" && p) {
      if (typeof p.id === "string") out.id = p.id;
      if (typeof p.cwd === "string") out.cwd = p.cwd;
      if (typeof p.timestamp === "string") out.started = p.timestamp;
    }
    if (!out.title) {
      const prompt = codexPrompt(env);
      if (prompt) out.title = titleOf(prompt);
    }
    if (out.title && out.cwd) break;
  }
  return out;
}

const ASSISTANT_ITEMS = new Set(["reasoning", "function_call", "custom_tool_call", "local_shell_call"]);

export function readCodexRollout(text: string, meta: SessionMeta): AgentSession {
  const warnings: string[] = [];
  const entries: SessionEntry[] = [];
  const toolNames = new Map<string, string>();
  let header = { type: "session" as const, version: 3, id: meta.id, timestamp: meta.started ?? "", cwd: meta.cwd ?? "", agent: "codex" } as AgentSession["header"];
  let title: string | undefined;
  let last: string | null = null;
  /** The assistant message of the response being read, open to more items until something else arrives. */
  let open: AssistantMessage | undefined;
  /** The latest assistant message without usage: the next usage record is its response's. */
  let unpriced: AssistantMessage | undefined;

  const push = (e: SessionEntry) => {
    e.parentId = last;
    entries.push(e);
    last = e.id;
  };
  const custom = (id: string, timestamp: string, customType: string, data: unknown) => push({ type: "custom", id, parentId: null, timestamp, customType, data });

  for (const { line, value: env } of parseJsonLines(text, warnings)) {
    const id = `l${line}`;
    const timestamp = str(env.timestamp) ?? header.timestamp;
    const ms = isoToMs(timestamp);
    const p = (env.payload ?? {}) as Rec;
    const ptype = str(p.type);
    if (env.type === "session_meta") {
      const { base_instructions: _omit, ...rest } = p;
      header = { ...header, id: str(p.id) ?? header.id, timestamp: str(p.timestamp) ?? timestamp, cwd: str(p.cwd) ?? header.cwd, raw: rest };
      custom(id, timestamp, "codex:session_meta", p);
      continue;
    }
    if (env.type === "response_item" && ptype) {
      if (ptype === "message" && p.role === "assistant") {
        if (!open) {
          open = { role: "assistant", content: [], api: "openai-responses", provider: "openai", timestamp: ms, raw: [] as unknown[] };
          push({ type: "message", id, parentId: null, timestamp, message: open });
          unpriced = open;
        }
        open.content.push({ type: "text", text: textOf(p.content) });
        (open.raw as unknown[]).push(p);
        open.stopReason = "stop";
        continue;
      }
      if (ASSISTANT_ITEMS.has(ptype)) {
        if (!open) {
          open = { role: "assistant", content: [], api: "openai-responses", provider: "openai", timestamp: ms, raw: [] as unknown[] };
          push({ type: "message", id, parentId: null, timestamp, message: open });
          unpriced = open;
        }
        (open.raw as unknown[]).push(p);
        if (ptype === "reasoning") {
          const summary = Array.isArray(p.summary) ? (p.summary as Rec[]).map((s) => str(s?.text) ?? "").join("\n") : "";
          open.content.push({ type: "thinking", thinking: summary, ...(typeof p.encrypted_content === "string" ? { thinkingSignature: p.encrypted_content } : {}) });
        } else {
          const callId = str(p.call_id) ?? str(p.id) ?? id;
          const name = str(p.name) ?? (ptype === "local_shell_call" ? "local_shell" : ptype);
          toolNames.set(callId, name);
          const args = ptype === "function_call" ? parseArgs(p.arguments) : ptype === "custom_tool_call" ? { input: p.input } : { action: p.action };
          open.content.push({ type: "toolCall", id: callId, name, arguments: args });
          open.stopReason = "toolUse";
        }
        continue;
      }
      open = undefined;
      if (ptype === "message") {
        const body = textOf(p.content);
        if (p.role !== "user" || isContext(body)) {
          custom(id, timestamp, "codex:context", p);
          continue;
        }
        if (!title) title = titleOf(body);
        push({ type: "message", id, parentId: null, timestamp, message: { role: "user", content: userContent(p.content), timestamp: ms, raw: p } satisfies UserMessage });
        continue;
      }
      if (ptype === "function_call_output" || ptype === "custom_tool_call_output") {
        const callId = str(p.call_id) ?? "";
        const out = outputText(p.output);
        const msg: ToolResultMessage = { role: "toolResult", toolCallId: callId, toolName: toolNames.get(callId) ?? "", content: [{ type: "text", text: out.text }], isError: out.isError, timestamp: ms, raw: p };
        push({ type: "message", id, parentId: null, timestamp, message: msg });
        continue;
      }
      custom(id, timestamp, `codex:${ptype}`, p);
      continue;
    }
    // Usage closes the response it belongs to; a record and an event can both carry it: count one.
    if (env.type === "token_usage_record" || (env.type === "event_msg" && ptype === "token_count")) {
      const u = env.type === "token_usage_record" ? (p.usage as Rec | undefined) : ((p.info as Rec | undefined)?.last_token_usage as Rec | undefined);
      const usage = codexUsage(u);
      if (usage && unpriced && !unpriced.usage) unpriced.usage = usage;
      if (env.type === "token_usage_record" || usage) unpriced = undefined;
      open = undefined;
      custom(id, timestamp, env.type === "event_msg" ? `codex:event_msg:${ptype}` : `codex:${String(env.type)}`, p);
      continue;
    }
    if (env.type === "turn_context" && typeof p.model === "string" && open) open.model = p.model;
    custom(id, timestamp, env.type === "event_msg" ? `codex:event_msg:${ptype ?? "?"}` : `codex:${String(env.type)}`, p);
  }
  // The model a response came from: the turn_context before it names it.
  let model: string | undefined;
  for (const e of entries) {
    if (e.type === "custom" && e.customType === "codex:turn_context") model = str((e.data as Rec).model) ?? model;
    if (e.type === "message" && (e.message as AssistantMessage).role === "assistant" && model) (e.message as AssistantMessage).model ??= model;
  }
  const updated = entries.at(-1)?.timestamp;
  return {
    meta: { ...meta, id: header.id, ...(header.cwd ? { cwd: header.cwd } : {}), ...(title ? { title } : {}), ...(header.timestamp ? { started: header.timestamp } : {}), ...(updated && !meta.updated ? { updated } : {}) },
    header,
    entries,
    leafId: last,
    warnings,
  };
}
