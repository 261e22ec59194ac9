// Runs inside pi 1.6.0's Node 22 (the driver and the pi extension load it), never on the tests'
// Node. pi-ai 1.x's faux provider reports token counts but always a zero cost, so totals in tests
// would compare zeros. This wraps its stream and prices each final message with pi-ai's own
// calculateCost and the model's rates, as a real provider's response would be priced.

/** Scripted replies as the tests write them: a string, content blocks, or a full message. */
export function toFauxMessage(piAi, reply) {
  if (typeof reply === "string") return piAi.fauxAssistantMessage(reply);
  if (Array.isArray(reply)) return piAi.fauxAssistantMessage(reply.map((b) => toFauxBlock(piAi, b)));
  if (reply && reply.role === "assistant") return reply;
  return piAi.fauxAssistantMessage(toFauxBlock(piAi, reply));
}

function toFauxBlock(piAi, block) {
  if (typeof block === "string") return piAi.fauxText(block);
  if (block.type === "toolCall") return piAi.fauxToolCall(block.name, block.arguments ?? {}, block.id ? { id: block.id } : undefined);
  return block;
}

/** Rates per million tokens, so a few hundred faux tokens cost a visible fraction of a cent. */
export const FAUX_COST = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };

export function pricedFaux(piAi, options = {}) {
  const core = piAi.createFauxCore({
    provider: options.provider ?? "pi1-faux",
    models: [{ id: "faux-1", name: "Faux", reasoning: true, cost: FAUX_COST, contextWindow: 128000, maxTokens: 16384 }],
    tokenSize: options.tokenSize ?? { min: 2048, max: 4096 },
    ...(options.tokensPerSecond ? { tokensPerSecond: options.tokensPerSecond } : {}),
  });
  const priced = (inner) => (model, context, streamOptions) => {
    const source = inner(model, context, streamOptions);
    const out = piAi.createAssistantMessageEventStream();
    void (async () => {
      for await (const event of source) {
        const final = event.type === "done" ? event.message : event.type === "error" ? event.error : undefined;
        if (final?.usage) piAi.calculateCost(model, final.usage);
        out.push(event);
      }
      out.end(await source.result());
    })();
    return out;
  };
  const provider = piAi.createProvider({
    id: core.provider,
    auth: { apiKey: { name: "Faux", resolve: async () => ({ auth: {} }) } },
    models: core.models,
    api: {
      stream: priced(core.stream),
      streamSimple: priced(core.streamSimple),
      fetchDeferred: core.fetchDeferred,
      cancelDeferred: core.cancelDeferred,
    },
  });
  // `provider` is pi-ai's Provider object (core.provider is its id, kept as providerId).
  return { ...core, providerId: core.provider, provider };
}
