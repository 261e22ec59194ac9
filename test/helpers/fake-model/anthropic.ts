// The Anthropic Messages API for the fake model server: POST /v1/messages (Claude Code calls it as
// /v1/messages?beta=true), streamed as message_start, content_block_start/delta/stop for thinking,
// text and tool_use blocks, message_delta with the stop reason and usage, message_stop; or one JSON
// message when the request does not ask for a stream. POST /v1/messages/count_tokens answers a count.

import type { ServerResponse } from "node:http";
import { chunks, FAKE_USAGE, fakeId, type RecordedRequest, type Route, type Turn } from "./server.js";

type Block = { type: "thinking"; thinking: string; signature: string } | { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

function blocksOf(turn: Turn): Block[] {
  const blocks: Block[] = [];
  if (turn.thinking) blocks.push({ type: "thinking", thinking: turn.thinking, signature: "fake-signature" });
  if (turn.text) blocks.push({ type: "text", text: turn.text });
  for (const call of turn.toolCalls ?? []) blocks.push({ type: "tool_use", id: call.id ?? fakeId("toolu_fake_"), name: call.name, input: call.args });
  return blocks;
}

const usage = () => ({
  input_tokens: FAKE_USAGE.inputTokens,
  cache_creation_input_tokens: FAKE_USAGE.cacheWriteTokens,
  cache_read_input_tokens: FAKE_USAGE.cacheReadTokens,
  output_tokens: FAKE_USAGE.outputTokens,
});

async function stream(res: ServerResponse, sse: ReturnType<Parameters<Route["handle"]>[2]["sse"]>, model: string, turn: Turn): Promise<void> {
  const blocks = blocksOf(turn);
  const id = fakeId("msg_fake_");
  await sse.send("message_start", {
    type: "message_start",
    message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage(), output_tokens: 1 } },
  });
  for (const [index, block] of blocks.entries()) {
    if (res.destroyed) return;
    if (block.type === "thinking") {
      await sse.send("content_block_start", { type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } });
      for (const piece of chunks(block.thinking)) await sse.send("content_block_delta", { type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: piece } });
      await sse.send("content_block_delta", { type: "content_block_delta", index, delta: { type: "signature_delta", signature: block.signature } });
    } else if (block.type === "text") {
      await sse.send("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } });
      for (const piece of chunks(block.text)) await sse.send("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } });
    } else {
      await sse.send("content_block_start", { type: "content_block_start", index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } });
      await sse.send("content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) } });
    }
    await sse.send("content_block_stop", { type: "content_block_stop", index });
  }
  const stopReason = blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
  await sse.send("message_delta", { type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage: usage() });
  await sse.send("message_stop", { type: "message_stop" });
  sse.end();
}

/** Claude Code's own side requests carry no tools (titles, summaries, quota probes): they never take a script turn. */
export const isAnthropicSideRequest = (req: RecordedRequest): boolean => {
  const tools = (req.json as { tools?: unknown[] } | undefined)?.tools;
  return !Array.isArray(tools) || tools.length === 0;
};

export const anthropicRoute: Route = {
  name: "anthropic",
  async handle(req, res, ctx) {
    if (req.method !== "POST") return false;
    if (req.path === "/v1/messages/count_tokens") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ input_tokens: FAKE_USAGE.inputTokens }));
      return true;
    }
    if (req.path !== "/v1/messages") return false;
    const body = (req.json ?? {}) as { model?: string; stream?: boolean };
    const model = body.model ?? "claude-fake";
    const turn = isAnthropicSideRequest(req) ? { text: "ok" } : ctx.nextTurn(req);
    if (body.stream) {
      await stream(res, ctx.sse(res, turn), model, turn);
    } else {
      const blocks = blocksOf(turn);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: fakeId("msg_fake_"),
          type: "message",
          role: "assistant",
          model,
          content: blocks,
          stop_reason: blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn",
          stop_sequence: null,
          usage: usage(),
        }),
      );
    }
    return true;
  },
};
