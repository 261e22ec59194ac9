// The OpenAI Responses API for the fake model server: POST /v1/responses (Codex CLI's only wire API
// for a custom provider), streamed as response.created, then per output item output_item.added, its
// deltas (reasoning summary text, output_text, function_call arguments) and output_item.done, then
// response.completed with usage. Codex ends a turn only on response.completed.

import type { ServerResponse } from "node:http";
import { chunks, FAKE_USAGE, fakeId, type Route, type SseStream, type Turn } from "./server.js";

type Item =
  | { type: "reasoning"; id: string; summary: { type: "summary_text"; text: string }[] }
  | { type: "message"; id: string; role: "assistant"; status: "completed"; content: { type: "output_text"; text: string; annotations: [] }[] }
  | { type: "function_call"; id: string; call_id: string; name: string; arguments: string; status: "completed" };

function itemsOf(turn: Turn): Item[] {
  const items: Item[] = [];
  if (turn.thinking) items.push({ type: "reasoning", id: fakeId("rs_fake_"), summary: [{ type: "summary_text", text: turn.thinking }] });
  if (turn.text) items.push({ type: "message", id: fakeId("msg_fake_"), role: "assistant", status: "completed", content: [{ type: "output_text", text: turn.text, annotations: [] }] });
  for (const call of turn.toolCalls ?? []) {
    items.push({ type: "function_call", id: fakeId("fc_fake_"), call_id: call.id ?? fakeId("call_fake_"), name: call.name, arguments: JSON.stringify(call.args), status: "completed" });
  }
  return items;
}

const usage = () => ({
  input_tokens: FAKE_USAGE.inputTokens,
  input_tokens_details: { cached_tokens: FAKE_USAGE.cacheReadTokens },
  output_tokens: FAKE_USAGE.outputTokens,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: FAKE_USAGE.inputTokens + FAKE_USAGE.outputTokens,
});

async function streamItem(sse: SseStream, item: Item, output_index: number, next: () => number): Promise<void> {
  const seq = () => ({ sequence_number: next() });
  const item_id = item.id;
  if (item.type === "reasoning") {
    await sse.send("response.output_item.added", { type: "response.output_item.added", ...seq(), output_index, item: { ...item, summary: [] } });
    const text = item.summary[0].text;
    await sse.send("response.reasoning_summary_part.added", { type: "response.reasoning_summary_part.added", ...seq(), item_id, output_index, summary_index: 0, part: { type: "summary_text", text: "" } });
    for (const delta of chunks(text)) await sse.send("response.reasoning_summary_text.delta", { type: "response.reasoning_summary_text.delta", ...seq(), item_id, output_index, summary_index: 0, delta });
    await sse.send("response.reasoning_summary_text.done", { type: "response.reasoning_summary_text.done", ...seq(), item_id, output_index, summary_index: 0, text });
  } else if (item.type === "message") {
    await sse.send("response.output_item.added", { type: "response.output_item.added", ...seq(), output_index, item: { ...item, status: "in_progress", content: [] } });
    const part = { type: "output_text", text: "", annotations: [] };
    await sse.send("response.content_part.added", { type: "response.content_part.added", ...seq(), item_id, output_index, content_index: 0, part });
    const text = item.content[0].text;
    for (const delta of chunks(text)) await sse.send("response.output_text.delta", { type: "response.output_text.delta", ...seq(), item_id, output_index, content_index: 0, delta });
    await sse.send("response.output_text.done", { type: "response.output_text.done", ...seq(), item_id, output_index, content_index: 0, text });
    await sse.send("response.content_part.done", { type: "response.content_part.done", ...seq(), item_id, output_index, content_index: 0, part: { ...part, text } });
  } else {
    await sse.send("response.output_item.added", { type: "response.output_item.added", ...seq(), output_index, item: { ...item, arguments: "", status: "in_progress" } });
    await sse.send("response.function_call_arguments.delta", { type: "response.function_call_arguments.delta", ...seq(), item_id, output_index, delta: item.arguments });
    await sse.send("response.function_call_arguments.done", { type: "response.function_call_arguments.done", ...seq(), item_id, output_index, arguments: item.arguments });
  }
  await sse.send("response.output_item.done", { type: "response.output_item.done", ...seq(), output_index, item });
}

async function stream(res: ServerResponse, sse: SseStream, model: string, turn: Turn): Promise<void> {
  let n = 0;
  const next = () => n++;
  const id = fakeId("resp_fake_");
  const created_at = Math.floor(Date.now() / 1000);
  const base = { id, object: "response", created_at, model };
  await sse.send("response.created", { type: "response.created", sequence_number: next(), response: { ...base, status: "in_progress", output: [] } });
  await sse.send("response.in_progress", { type: "response.in_progress", sequence_number: next(), response: { ...base, status: "in_progress", output: [] } });
  const items = itemsOf(turn);
  for (const [i, item] of items.entries()) {
    if (res.destroyed) return;
    await streamItem(sse, item, i, next);
  }
  await sse.send("response.completed", { type: "response.completed", sequence_number: next(), response: { ...base, status: "completed", output: items, usage: usage() } });
  sse.end();
}

export const responsesRoute: Route = {
  name: "responses",
  async handle(req, res, ctx) {
    if (req.method !== "POST" || req.path !== "/v1/responses") return false;
    const body = (req.json ?? {}) as { model?: string; stream?: boolean };
    const model = body.model ?? "gpt-fake";
    const turn = ctx.nextTurn(req);
    if (body.stream === false) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: fakeId("resp_fake_"), object: "response", created_at: Math.floor(Date.now() / 1000), model, status: "completed", output: itemsOf(turn), usage: usage() }));
    } else {
      await stream(res, ctx.sse(res, turn), model, turn);
    }
    return true;
  },
};
