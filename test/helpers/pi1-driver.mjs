// The child process behind test/helpers/pi1.ts: runs on Node 22 against pi 1.6.0 (never on the
// tests' Node 20, never a dependency of the project). argv: <request.json> <result.json>.
// The request names pi's install folder and either a scenario to run through pi's real agent loop
// (createAgentSession + the faux provider, pi's SessionManager writing the file) or text to
// validate with pi's in-memory parser. Every entry in a session file is written by pi's own code.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { pricedFaux, toFauxMessage } from "./pi1-faux.mjs";

const [requestFile, resultFile] = process.argv.slice(2);
const request = JSON.parse(readFileSync(requestFile, "utf8"));
const mod = (name, entry) => import(pathToFileURL(path.join(request.piDir, "node_modules", "@earendil-works", name, "dist", entry)).href);
const piAi = await mod("pi-ai", "index.js");
const pi = await mod("pi-coding-agent", "index.js");
// What `pi --mode json` prints per event (print-mode.js); not exported by the package index.
const { toJsonEvent } = await mod("pi-coding-agent", "modes/json-event.js");

async function main() {
  if (request.op === "validate") return validate(request.text);
  if (request.op === "session") return makeSession(request.options);
  throw new Error(`unknown op ${request.op}`);
}

// What test/helpers/pi-validate.ts does with 0.73.1, with 1.6.0's exports.
function validate(text) {
  const parsed = pi.parseSessionEntries(text);
  const first = parsed[0];
  if (!first || first.type !== "session" || typeof first.id !== "string") return { ok: false, why: "the first line is not a session header with a string id" };
  pi.migrateSessionEntries(parsed);
  const header = parsed[0];
  if (header.version !== 3) return { ok: false, why: `migration left version ${String(header.version)}` };
  const entries = parsed.filter((e) => e.type !== "session");
  const ids = new Set();
  for (const e of entries) {
    if (typeof e.id !== "string" || !e.id) return { ok: false, why: `an entry of type ${e.type} has no id` };
    if (ids.has(e.id)) return { ok: false, why: `duplicate entry id ${e.id}` };
    ids.add(e.id);
  }
  let context;
  try {
    context = pi.buildSessionContext(entries);
  } catch (err) {
    return { ok: false, why: `buildSessionContext threw: ${err.message}` };
  }
  // pi's own session totals over the same entries (AgentSession.getSessionStats uses the same sum).
  // pi's own session totals (AgentSession.getSessionStats, agent-session.js) over these entries,
  // called on an in-memory manager: no file is opened.
  const sessionManager = pi.SessionManager.inMemory(header.cwd ?? "/", { id: header.id }, parsed);
  const stats = pi.AgentSession.prototype.getSessionStats.call({ sessionManager, sessionFile: undefined, sessionId: header.id, getContextUsage: () => undefined });
  // The entries whose context edit pi applies on the leaf's path: pi's projection of an entry
  // differs from the entry's own messages (omitted: none left). Compactions are left out: pi drops
  // an older one kept in range without any edit.
  const contextEdited = {};
  for (const { sourceEntry, messages } of pi.buildSessionProjection(entries).entries) {
    if (sourceEntry.type === "compaction") continue;
    const own = pi.sessionEntryToContextMessages(sourceEntry);
    if (JSON.stringify(own) !== JSON.stringify(messages)) contextEdited[sourceEntry.id] = messages.length ? "replaced" : "omitted";
  }
  return { ok: true, header, entries, context, contextEdited, parsedLines: parsed.length, leafId: sessionManager.getLeafId(), stats };
}

async function makeSession(o) {
  mkdirSync(o.cwd, { recursive: true });
  mkdirSync(o.sessionDir, { recursive: true });
  mkdirSync(o.runtimeDir, { recursive: true });
  const faux = pricedFaux(piAi);
  // Credentials and models.json outside the agent dir: the tests snapshot that dir byte for byte.
  const modelRuntime = await pi.ModelRuntime.create({
    authPath: path.join(o.runtimeDir, "auth.json"),
    modelsPath: null,
    modelsStorePath: path.join(o.runtimeDir, "models-store.json"),
    refreshOnCreate: false,
  });
  modelRuntime.registerNativeProvider(faux.provider);
  const model = modelRuntime.getModel(faux.providerId, "faux-1");
  if (!model) throw new Error("the faux model is not registered");

  // Per-turn prompt sections and context edits go through an inline extension: pi's own hooks
  // (before_agent_start's mutable systemPromptOptions, agent_before_settle's boundary drafts).
  const hooks = { sections: {}, edits: [], errors: [] };
  const hookExtension = (api) => {
    api.on("before_agent_start", (event) => {
      // pi keeps these options between runs; an empty section is left out of the prompt, and the
      // next system message then patches it to null.
      const sections = { ...event.systemPromptOptions.sections };
      for (const [name, text] of Object.entries(hooks.sections)) sections[name] = text ?? "";
      event.systemPromptOptions.sections = sections;
    });
    api.on("agent_before_settle", () => (hooks.edits.length ? { entries: hooks.edits.splice(0) } : undefined));
  };

  const open = async (sessionManager) => {
    const settingsManager = pi.SettingsManager.inMemory({ retry: { enabled: false }, compaction: { enabled: false, keepRecentTokens: 1 }, cacheWarming: "off" });
    const resourceLoader = new pi.DefaultResourceLoader({
      cwd: o.cwd,
      agentDir: o.agentDir,
      settingsManager,
      extensionFactories: [hookExtension],
      noExtensions: true,
      noSkills: true,
      noPromptTemplates: true,
      noThemes: true,
      noContextFiles: true,
    });
    await resourceLoader.reload();
    const { session } = await pi.createAgentSession({
      cwd: o.cwd,
      agentDir: o.agentDir,
      modelRuntime,
      model,
      thinkingLevel: o.thinkingLevel ?? "off",
      tools: ["read", "bash", "edit", "write"],
      resourceLoader,
      settingsManager,
      sessionManager,
    });
    await session.bindExtensions?.({});
    // A boundary draft pi refuses is reported here, not thrown: make it fail the scenario.
    session.extensionRunner.onError((e) => hooks.errors.push(`${e.event}: ${e.error}`));
    return session;
  };

  const drive = async (session, turns) => {
    const turnLeafIds = [];
    // The last message of each turn (before any usage, compaction, label or name entry): what a
    // context edit may target.
    const turnMessageIds = [];
    const events = {};
    // With eventLog: the lines `pi --mode json` would print for this run, header first.
    const log = o.eventLog ? [JSON.stringify(session.sessionManager.getHeader())] : undefined;
    const unsubscribe = session.subscribe((e) => {
      events[e.type] = (events[e.type] ?? 0) + 1;
      log?.push(JSON.stringify(toJsonEvent(e)));
    });
    const sm = session.sessionManager;
    try {
      for (const [index, turn] of turns.entries()) {
        const where = `turn ${index}`;
        if (turn.tools) session.setActiveToolsByName(turn.tools);
        for (const [name, text] of Object.entries(turn.sections ?? {})) {
          hooks.sections[name] = text;
        }
        if (turn.branchFromTurn !== undefined) {
          const target = turnLeafIds[turn.branchFromTurn];
          if (!target) throw new Error(`${where}: branchFromTurn ${turn.branchFromTurn} has not run yet`);
          if (turn.branchSummary !== undefined) faux.setResponses([toFauxMessage(piAi, turn.branchSummary)]);
          await session.navigateTree(target, { summarize: turn.branchSummary !== undefined });
        }
        for (const edit of turn.contextEdits ?? []) {
          const targetId = turnMessageIds[edit.turn];
          if (!targetId) throw new Error(`${where}: contextEdit names turn ${edit.turn}, which has not run`);
          hooks.edits.push({ type: "context_edit", targetId, replacement: edit.replacement });
        }
        faux.setResponses(turn.assistant.map((r) => toFauxMessage(piAi, r)));
        await session.prompt(turn.user);
        if (faux.getPendingResponseCount() !== 0) throw new Error(`${where}: ${faux.getPendingResponseCount()} scripted replies were not used (a reply without tool calls ends the turn)`);
        if (hooks.errors.length) throw new Error(`${where}: pi reported ${hooks.errors.join("; ")}`);
        for (const edit of turn.contextEdits ?? []) {
          const targetId = turnMessageIds[edit.turn];
          if (!sm.getEntries().some((e) => e.type === "context_edit" && e.targetId === targetId)) throw new Error(`${where}: pi did not write the context edit of turn ${edit.turn}`);
        }
        const last = session.messages[session.messages.length - 1];
        if (last?.role === "assistant" && last.stopReason === "error") throw new Error(`${where}: the model call failed: ${last.errorMessage}`);
        turnMessageIds.push(sm.getBranch().findLast((e) => e.type === "message").id);
        if (turn.usage) {
          // What pi's CacheWarmer does when its timer fires (cache-warmer.js): one real request to
          // the model, then SessionManager.appendUsage with the response's usage. The warmer's
          // own timer waits for the prompt cache to near expiry (minutes), so the test makes the
          // request itself instead of waiting.
          faux.setResponses([toFauxMessage(piAi, turn.usage.reply ?? ".")]);
          const messages = session.messages.filter((m) => m.role === "user" || m.role === "assistant" || m.role === "toolResult");
          const reply = await modelRuntime.completeSimple(model, { messages }, { sessionId: session.sessionId, maxTokens: 1 });
          if (reply.stopReason === "error") throw new Error(`${where}: the usage request failed: ${reply.errorMessage}`);
          sm.appendUsage(turn.usage.kind, reply.provider, reply.responseModel ?? reply.model, reply.usage, turn.usage.note);
        }
        if (turn.compact !== undefined) {
          // pi asks for the history summary, and for a split turn's prefix summary too.
          faux.setResponses([turn.compact, turn.compact].map((r) => toFauxMessage(piAi, r)));
          await session.compact();
          faux.setResponses([]);
        }
        if (turn.label) sm.appendLabelChange(turnMessageIds[index], turn.label);
        if (turn.name) sm.appendSessionInfo(turn.name);
        turnLeafIds.push(sm.getLeafId());
      }
    } finally {
      unsubscribe();
    }
    if (!session.sessionFile) throw new Error("pi did not create a session file");
    const result = { file: session.sessionFile, sessionId: session.sessionId, turnLeafIds, turnMessageIds, events, stats: session.getSessionStats() };
    return log ? { ...result, eventLog: `${log.join("\n")}\n` } : result;
  };

  const session = await open(pi.SessionManager.create(o.cwd, o.sessionDir, o.sessionId ? { id: o.sessionId } : undefined));
  try {
    const result = await drive(session, o.turns);
    if (o.fork) {
      const target = result.turnLeafIds[o.fork.atTurn];
      if (!target) throw new Error(`fork.atTurn ${o.fork.atTurn} has not run`);
      // pi's /fork: the live manager copies the path into a new file whose header names the parent.
      const sm = session.sessionManager;
      sm.createBranchedSession(target);
      const forked = await open(sm);
      try {
        result.fork = await drive(forked, o.fork.turns);
      } finally {
        forked.dispose();
      }
    }
    return result;
  } finally {
    session.dispose();
  }
}

try {
  writeFileSync(resultFile, JSON.stringify({ ok: true, value: await main() }));
} catch (err) {
  writeFileSync(resultFile, JSON.stringify({ ok: false, error: String(err?.stack ?? err) }));
}
// pi may keep timers (cache warming, extension runtime); the work is done and written.
process.exit(0);
