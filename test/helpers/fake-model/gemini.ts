// The Gemini API route of the fake model server (Gemini CLI with GOOGLE_GEMINI_BASE_URL):
//   POST …/models/<m>:streamGenerateContent?alt=sse  the conversation: SSE `data:` chunks of
//        GenerateContentResponse, text parts (thought parts for thinking), functionCall parts, and
//        finishReason with usageMetadata on the last one;
//   POST …/models/<m>:generateContent                Gemini CLI's side questions (its model router's
//        classifier, the next-speaker check, summaries): they ask for JSON by schema, and get an
//        object that satisfies it, so they never take a script turn;
//   POST …/models/<m>:countTokens, GET …/models[/<m>] its probes.

import type { ServerResponse } from "node:http";
import { chunks, fakeId, FAKE_USAGE, type Route, type SseStream, type Turn } from "./server.js";

const ACTION = /\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/;

const usageMetadata = () => ({
  promptTokenCount: FAKE_USAGE.inputTokens,
  candidatesTokenCount: FAKE_USAGE.outputTokens,
  cachedContentTokenCount: FAKE_USAGE.cacheReadTokens,
  totalTokenCount: FAKE_USAGE.inputTokens + FAKE_USAGE.outputTokens,
});

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; required?: string[]; enum?: unknown[]; items?: Schema };

/** A value that satisfies a (JSON or OpenAPI-style) schema: "user" where an enum offers it (the next-speaker check). */
export function sampleFor(schema: Schema | undefined, depth = 0): unknown {
  if (!schema || depth > 8) return "ok";
  if (schema.enum?.length) return schema.enum.includes("user") ? "user" : schema.enum[0];
  const type = (Array.isArray(schema.type) ? schema.type[0] : schema.type)?.toLowerCase();
  if (type === "object" || schema.properties) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(schema.properties ?? {})) out[k] = sampleFor(v, depth + 1);
    return out;
  }
  if (type === "array") return [sampleFor(schema.items, depth + 1)];
  if (type === "number" || type === "integer") return 1;
  if (type === "boolean") return false;
  return "ok";
}

async function stream(sse: SseStream, model: string, turn: Turn): Promise<void> {
  const candidate = (p: object[], last: boolean) => ({
    candidates: [{ content: { role: "model", parts: p }, index: 0, ...(last ? { finishReason: "STOP" } : {}) }],
    ...(last ? { usageMetadata: usageMetadata() } : {}),
    modelVersion: model,
    responseId: "fake-response",
  });
  for (const piece of turn.thinking ? chunks(turn.thinking) : []) await sse.send(null, candidate([{ text: piece, thought: true }], false));
  for (const piece of turn.text ? chunks(turn.text) : []) await sse.send(null, candidate([{ text: piece }], false));
  const calls = (turn.toolCalls ?? []).map((c) => ({ functionCall: { id: c.id ?? fakeId("fc_fake_"), name: c.name, args: c.args } }));
  // The last chunk carries the calls (whole: Gemini never splits a functionCall), the finish and the usage.
  await sse.send(null, candidate(calls, true));
  sse.end();
}

function json(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

export const geminiRoute: Route = {
  name: "gemini",
  async handle(req, res, ctx) {
    if (req.method === "GET" && /\/models(\/[^/:]+)?$/.test(req.path)) {
      const one = (name: string) => ({ name: `models/${name}`, displayName: name, supportedGenerationMethods: ["generateContent", "streamGenerateContent", "countTokens"] });
      const m = /\/models\/([^/:]+)$/.exec(req.path);
      json(res, m ? one(m[1]!) : { models: [one("gemini-2.5-pro"), one("gemini-2.5-flash")] });
      return true;
    }
    const m = req.method === "POST" ? ACTION.exec(req.path) : null;
    if (!m) return false;
    const [, model, action] = m as unknown as [string, string, string];
    const body = (req.json ?? {}) as { generationConfig?: { responseJsonSchema?: Schema; responseSchema?: Schema; responseMimeType?: string } };
    if (action === "countTokens") {
      json(res, { totalTokens: FAKE_USAGE.inputTokens });
      return true;
    }
    if (action === "generateContent") {
      const cfg = body.generationConfig ?? {};
      const schema = cfg.responseJsonSchema ?? cfg.responseSchema;
      const text = schema || cfg.responseMimeType === "application/json" ? JSON.stringify(sampleFor(schema)) : "ok";
      json(res, { candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }], usageMetadata: usageMetadata(), modelVersion: model });
      return true;
    }
    const turn = ctx.nextTurn(req);
    await stream(ctx.sse(res, turn), model, turn);
    return true;
  },
};
