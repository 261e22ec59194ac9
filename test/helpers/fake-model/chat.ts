// The OpenAI Chat Completions route of the fake model server (opencode's "@ai-sdk/openai-compatible"
// provider speaks it): POST /v1/chat/completions. A streamed request gets `chat.completion.chunk`
// SSE events, a role chunk, reasoning and content deltas, tool_calls deltas (name first, then the
// arguments in pieces, as real servers send them), a finish chunk, a usage chunk with no choices,
// then `data: [DONE]`. A request with `stream: false` gets one `chat.completion` object.
//
// opencode asks for a session title in a request of its own ("You are a title generator"): that one
// never takes a script turn, so the script holds only the turns of the conversation itself.

import type { ServerResponse } from "node:http";
import { chunks, fakeId, FAKE_USAGE, type RecordedRequest, type Route, type SseStream, type Turn } from "./server.js";

export const CHAT_TITLE = "Fake session title";

interface ChatBody {
  model?: string;
  stream?: boolean;
  messages?: { role?: string; content?: unknown }[];
}

const text = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((p) => (p && typeof p === "object" && typeof (p as { text?: unknown }).text === "string" ? (p as { text: string }).text : "")).join("")
      : "";

/** opencode's title request: its system message names the task. */
export function isChatTitleRequest(req: RecordedRequest): boolean {
  const body = req.json as ChatBody | undefined;
  const system = body?.messages?.find((m) => m.role === "system");
  return system !== undefined && /title generator/i.test(text(system.content));
}

const usage = () => ({
  prompt_tokens: FAKE_USAGE.inputTokens,
  completion_tokens: FAKE_USAGE.outputTokens,
  total_tokens: FAKE_USAGE.inputTokens + FAKE_USAGE.outputTokens,
  prompt_tokens_details: { cached_tokens: FAKE_USAGE.cacheReadTokens },
});

async function stream(sse: SseStream, model: string, turn: Turn): Promise<void> {
  const id = fakeId("chatcmpl-fake-");
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: object, finish: string | null = null) =>
    sse.send(null, { id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finish }] });
  await chunk({ role: "assistant", content: "" });
  for (const piece of turn.thinking ? chunks(turn.thinking) : []) await chunk({ reasoning_content: piece });
  for (const piece of turn.text ? chunks(turn.text) : []) await chunk({ content: piece });
  const calls = turn.toolCalls ?? [];
  for (const [index, call] of calls.entries()) {
    const args = JSON.stringify(call.args);
    await chunk({ tool_calls: [{ index, id: call.id ?? fakeId("call_fake_"), type: "function", function: { name: call.name, arguments: "" } }] });
    // Two pieces: the client must join them, as it must for any real server.
    const half = Math.ceil(args.length / 2);
    for (const piece of [args.slice(0, half), args.slice(half)]) await chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
  }
  await chunk({}, calls.length ? "tool_calls" : "stop");
  await sse.send(null, { id, object: "chat.completion.chunk", created, model, choices: [], usage: usage() });
  await sse.raw("data: [DONE]\n\n");
  sse.end();
}

function whole(res: ServerResponse, model: string, turn: Turn): void {
  const calls = turn.toolCalls ?? [];
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      id: fakeId("chatcmpl-fake-"),
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [
        {
          index: 0,
          finish_reason: calls.length ? "tool_calls" : "stop",
          message: {
            role: "assistant",
            content: turn.text ?? null,
            ...(turn.thinking ? { reasoning_content: turn.thinking } : {}),
            ...(calls.length
              ? { tool_calls: calls.map((c) => ({ id: c.id ?? fakeId("call_fake_"), type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } })) }
              : {}),
          },
        },
      ],
      usage: usage(),
    }),
  );
}

export const chatRoute: Route = {
  name: "chat",
  async handle(req, res, ctx) {
    if (req.method !== "POST" || !/\/chat\/completions$/.test(req.path)) return false;
    const body = (req.json ?? {}) as ChatBody;
    const model = typeof body.model === "string" ? body.model : "fake-model";
    const turn = isChatTitleRequest(req) ? { text: CHAT_TITLE } : ctx.nextTurn(req);
    if (body.stream === false || body.stream === undefined) whole(res, model, turn);
    else await stream(ctx.sse(res, turn), model, turn);
    return true;
  },
};
