// Real pi sessions for tests: pi's own agent loop (createAgentSession) with the scripted faux
// model from pi-ai, real built-in tools running in a temp cwd, and pi's SessionManager writing
// the JSONL. Everything lives under a caller-given temp agent dir, never the real ~/.pi.

import {
  type AssistantMessage,
  fauxAssistantMessage,
  type FauxContentBlock,
  type FauxProviderRegistration,
  registerFauxProvider,
} from "@mariozechner/pi-ai";
import {
  type AgentSession,
  type AgentSessionEvent,
  AuthStorage,
  createAgentSession,
  DefaultResourceLoader,
  ModelRegistry,
  SessionManager,
  SettingsManager,
} from "@mariozechner/pi-coding-agent";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { sessionDirName } from "../../src/agents/pi/writer.js";

export { fauxAssistantMessage, fauxText, fauxThinking, fauxToolCall } from "@mariozechner/pi-ai";

/** One scripted model reply: plain text, content blocks, or a full faux message. */
export type FauxReply = string | FauxContentBlock | FauxContentBlock[] | AssistantMessage;

export interface PiTurn {
  user: string;
  /**
   * The model's replies for this prompt, one per model call. A reply with tool calls makes pi run
   * the tools and call the model again, so end with a reply that has no tool call.
   */
  assistant: FauxReply[];
  /** Before this turn, move pi's leaf to the end of turn N (0-based): an in-place branch. */
  branchFromTurn?: number;
  /** After this turn, label its last entry (pi's /label). */
  label?: string;
  /** After this turn, name the session (pi's /name, a session_info entry). */
  name?: string;
}

export interface MakePiSessionOptions {
  /** A temp agent dir; the file lands in <agentDir>/sessions/--<cwd>--/. */
  agentDir: string;
  /** The project dir; tools run here. Created if missing. */
  cwd: string;
  turns: PiTurn[];
  /** pi's thinking level (default "off"; the faux model supports reasoning, so all levels work). */
  thinkingLevel?: "off" | "minimal" | "low" | "medium" | "high";
  /** Keep the event stream (default true). Switch off for multi-MB sessions to save memory. */
  captureEvents?: boolean;
  /** After all turns, fork like pi's /fork: a new file holding the path up to the end of `atTurn`. */
  fork?: { atTurn: number; turns: PiTurn[] };
  /** Awaited after each turn, with the session file pi writes (tests that watch a live session). */
  afterTurn?: (index: number, file: string | undefined) => Promise<void>;
}

export interface PiSessionResult {
  file: string;
  sessionId: string;
  events: AgentSessionEvent[];
  /** pi's leaf entry id after each turn. */
  turnLeafIds: string[];
  fork?: PiSessionResult;
}

function toMessage(reply: FauxReply): AssistantMessage {
  if (typeof reply === "object" && !Array.isArray(reply) && "role" in reply) return reply;
  return fauxAssistantMessage(reply);
}

/** Settings that keep runs deterministic and offline: no retries, no auto compaction. */
function testSettings(): SettingsManager {
  return SettingsManager.inMemory({ retry: { enabled: false }, compaction: { enabled: false } });
}

async function openAgentSession(options: MakePiSessionOptions, faux: FauxProviderRegistration, sessionManager?: SessionManager) {
  const authStorage = AuthStorage.inMemory();
  // The faux provider needs no key, but pi refuses to prompt a provider without configured auth.
  authStorage.setRuntimeApiKey(faux.models[0].provider, "faux-key");
  const settingsManager = testSettings();
  // No extensions, skills or context files: keep the user's ~/.agents and AGENTS.md out of tests.
  const resourceLoader = new DefaultResourceLoader({
    cwd: options.cwd,
    agentDir: options.agentDir,
    settingsManager,
    noExtensions: true,
    noSkills: true,
    noPromptTemplates: true,
    noThemes: true,
    noContextFiles: true,
    systemPrompt: "You are a test assistant.",
  });
  await resourceLoader.reload();
  const { session } = await createAgentSession({
    cwd: options.cwd,
    agentDir: options.agentDir,
    authStorage,
    modelRegistry: ModelRegistry.inMemory(authStorage),
    model: faux.getModel(),
    thinkingLevel: options.thinkingLevel ?? "off",
    tools: ["read", "bash", "edit", "write"],
    resourceLoader,
    settingsManager,
    ...(sessionManager ? { sessionManager } : {}),
  });
  return session;
}

async function runTurns(
  session: AgentSession,
  faux: FauxProviderRegistration,
  turns: PiTurn[],
  leafIds: string[],
  afterTurn?: MakePiSessionOptions["afterTurn"],
): Promise<void> {
  for (const [index, turn] of turns.entries()) {
    if (turn.branchFromTurn !== undefined) {
      const target = leafIds[turn.branchFromTurn];
      if (!target) throw new Error(`turn ${index}: branchFromTurn ${turn.branchFromTurn} has not run yet`);
      await session.navigateTree(target, { summarize: false });
    }
    faux.setResponses(turn.assistant.map(toMessage));
    await session.prompt(turn.user);
    if (faux.getPendingResponseCount() !== 0) {
      throw new Error(`turn ${index}: ${faux.getPendingResponseCount()} scripted replies were not used (a reply without tool calls ends the turn)`);
    }
    const last = session.messages[session.messages.length - 1] as { role?: string; stopReason?: string; errorMessage?: string };
    if (last?.role === "assistant" && last.stopReason === "error") {
      throw new Error(`turn ${index}: the model call failed: ${last.errorMessage} (script fewer tool calls or more replies)`);
    }
    const sm = session.sessionManager;
    if (turn.label) sm.appendLabelChange(sm.getLeafId()!, turn.label);
    if (turn.name) sm.appendSessionInfo(turn.name);
    leafIds.push(sm.getLeafId()!);
    await afterTurn?.(index, session.sessionFile);
  }
}

/**
 * Run a scripted conversation through pi and return the session file pi wrote. The faux
 * provider is registered for this call only. Runs take milliseconds per turn.
 */
export async function makePiSession(options: MakePiSessionOptions): Promise<PiSessionResult> {
  mkdirSync(options.cwd, { recursive: true });
  mkdirSync(options.agentDir, { recursive: true });
  // Big chunks: pi's loop still streams deltas, but multi-MB replies do not become 100k events.
  const faux = registerFauxProvider({
    models: [{ id: "faux-1", name: "Faux", reasoning: true }],
    tokenSize: { min: 2048, max: 4096 },
  });
  const session = await openAgentSession(options, faux);
  try {
    const result = await drive(session, faux, options.turns, options.captureEvents ?? true, options.afterTurn);
    if (options.fork) {
      const target = result.turnLeafIds[options.fork.atTurn];
      if (!target) throw new Error(`fork.atTurn ${options.fork.atTurn} has not run`);
      // pi's /fork: the live manager copies the path into a new file whose header names the
      // parent, keeping entry ids. Nothing reopens the parent file.
      const sm = session.sessionManager;
      sm.createBranchedSession(target);
      const forked = await openAgentSession(options, faux, sm);
      try {
        result.fork = await drive(forked, faux, options.fork.turns, options.captureEvents ?? true);
      } finally {
        forked.dispose();
      }
    }
    return result;
  } finally {
    session.dispose();
    faux.unregister();
  }
}

async function drive(
  session: AgentSession,
  faux: FauxProviderRegistration,
  turns: PiTurn[],
  capture: boolean,
  afterTurn?: MakePiSessionOptions["afterTurn"],
): Promise<PiSessionResult> {
  const events: AgentSessionEvent[] = [];
  const unsubscribe = capture ? session.subscribe((e) => events.push(e)) : () => {};
  const turnLeafIds: string[] = [];
  try {
    await runTurns(session, faux, turns, turnLeafIds, afterTurn);
  } finally {
    unsubscribe();
  }
  const file = session.sessionFile;
  if (!file) throw new Error("pi did not create a session file");
  return { file, sessionId: session.sessionId, events, turnLeafIds };
}

export interface ForkPiSessionOptions {
  agentDir: string;
  /** The project dir of the fork (may differ from the parent's). */
  cwd: string;
  /** The parent session file. pi only reads it. */
  parentFile: string;
  turns: PiTurn[];
  captureEvents?: boolean;
}

/**
 * Fork a whole session the way `pi --fork <file>` does (SessionManager.forkFrom): a new file in
 * the fork's project folder with `parentSession` set and every parent entry copied with its id.
 */
export async function forkPiSession(options: ForkPiSessionOptions): Promise<PiSessionResult> {
  mkdirSync(options.cwd, { recursive: true });
  // Pass the dir explicitly: forkFrom's default would resolve the real ~/.pi from the environment.
  const sessionDir = join(options.agentDir, "sessions", sessionDirName(options.cwd));
  const manager = SessionManager.forkFrom(options.parentFile, options.cwd, sessionDir);
  const faux = registerFauxProvider({ models: [{ id: "faux-1", name: "Faux", reasoning: true }], tokenSize: { min: 2048, max: 4096 } });
  const session = await openAgentSession({ ...options, turns: options.turns }, faux, manager);
  try {
    return await drive(session, faux, options.turns, options.captureEvents ?? true);
  } finally {
    session.dispose();
    faux.unregister();
  }
}

/** A long text of `bytes` characters, for multi-MB sessions. */
export function bigText(bytes: number, seed = "pi-guard "): string {
  return seed.repeat(Math.ceil(bytes / seed.length)).slice(0, bytes);
}
