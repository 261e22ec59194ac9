// A pi extension for the TUI tests: registers pi-ai's scripted faux model as provider "faux", so
// the real interactive pi runs offline. The replies come from the JSON file named by
// PI_GUARD_FAUX_SCRIPT: one array of content blocks per model call, in order.
// pi's extension loader maps "@mariozechner/pi-ai" to its own copy, so the faux api lands in the
// registry pi streams from.

import { fauxAssistantMessage, type FauxContentBlock, fauxText, fauxThinking, fauxToolCall, getApiProvider, registerFauxProvider } from "@mariozechner/pi-ai";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { readFileSync } from "node:fs";

type ScriptBlock = { text: string } | { thinking: string } | { tool: string; args: Record<string, unknown> };

export default function (pi: ExtensionAPI) {
  const script = JSON.parse(readFileSync(process.env.PI_GUARD_FAUX_SCRIPT!, "utf8")) as ScriptBlock[][];
  const faux = registerFauxProvider({ provider: "faux", models: [{ id: "faux-1", name: "Faux One" }] });
  faux.setResponses(
    script.map((blocks) => fauxAssistantMessage(blocks.map((b): FauxContentBlock => ("text" in b ? fauxText(b.text) : "thinking" in b ? fauxThinking(b.thinking) : fauxToolCall(b.tool, b.args))))),
  );
  const model = faux.models[0];
  pi.registerProvider("faux", {
    name: "Faux",
    baseUrl: model.baseUrl,
    apiKey: "faux-key",
    api: faux.api,
    streamSimple: getApiProvider(faux.api)!.streamSimple,
    models: [{ id: model.id, name: model.name, reasoning: false, input: ["text"], cost: model.cost, contextWindow: model.contextWindow, maxTokens: model.maxTokens }],
  });
}
