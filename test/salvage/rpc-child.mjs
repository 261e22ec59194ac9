// pi's real RPC mode (`pi --mode rpc`: runRpcMode over an AgentSessionRuntime, as pi's main.js
// starts it) with the scripted faux model instead of a network provider. Commands arrive as JSON
// lines on stdin; events and responses go to stdout exactly as pi writes them.
// argv: <agentDir> <cwd> <replies.json: the model's replies, in order, across every prompt>

import { readFileSync } from "node:fs";
import { fauxAssistantMessage, fauxToolCall, registerFauxProvider } from "@mariozechner/pi-ai";
import {
  AuthStorage,
  createAgentSessionFromServices,
  createAgentSessionRuntime,
  createAgentSessionServices,
  ModelRegistry,
  runRpcMode,
  SessionManager,
  SettingsManager,
} from "@mariozechner/pi-coding-agent";

const [agentDir, cwd, repliesFile] = process.argv.slice(2);
const replies = JSON.parse(readFileSync(repliesFile, "utf8"));
const faux = registerFauxProvider({ models: [{ id: "faux-1", name: "Faux", reasoning: false }] });
// A reply is text, or {tool, args} for one tool call.
faux.setResponses(replies.map((r) => (typeof r === "string" ? fauxAssistantMessage(r) : fauxAssistantMessage([fauxToolCall(r.tool, r.args)]))));

const authStorage = AuthStorage.inMemory();
authStorage.setRuntimeApiKey(faux.models[0].provider, "faux-key");
const settingsManager = SettingsManager.inMemory({ retry: { enabled: false }, compaction: { enabled: false } });
const modelRegistry = ModelRegistry.inMemory(authStorage);

const createRuntime = async ({ cwd, agentDir, sessionManager, sessionStartEvent }) => {
  const services = await createAgentSessionServices({
    cwd,
    agentDir,
    authStorage,
    settingsManager,
    modelRegistry,
    resourceLoaderOptions: { noExtensions: true, noSkills: true, noPromptTemplates: true, noThemes: true, noContextFiles: true, systemPrompt: "You are a test assistant." },
  });
  const created = await createAgentSessionFromServices({ services, sessionManager, sessionStartEvent, model: faux.getModel(), tools: ["read", "bash"] });
  return { ...created, services, diagnostics: services.diagnostics };
};

// The caller sets PI_CODING_AGENT_DIR to a temp dir, so pi files the session where it always does.
const runtime = await createAgentSessionRuntime(createRuntime, { cwd, agentDir, sessionManager: SessionManager.create(cwd) });
await runRpcMode(runtime);
