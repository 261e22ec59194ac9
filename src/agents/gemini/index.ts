// Gemini CLI 0.6x behind the AgentAdapter interface (DESIGN.md "Other agents", issue 19 item 4).
// Its data is ~/.gemini ($GEMINI_CLI_HOME/.gemini when that is set: the CLI takes it as its home):
// chats are tmp/<project>/chats/session-<date>-<id8>.jsonl (older versions rewrote whole .json
// files there), with projects.json, the .project_root markers, logs.json and settings.json.
//
// A chat file is a log of records, replayed in order (as the CLI's own loader does):
// - `{sessionId, projectHash, startTime, …}`: the conversation's metadata (and, in a whole .json
//   file, its `messages`);
// - a record with an `id`: a message; a repeated id is the same message again, and the latest wins;
// - `{"$set": {…}}`: metadata updates; `$set.messages` replaces every message so far;
// - `{"$rewindTo": id}`: drops that message and every one after it.

import path from "node:path";
import { readSettings } from "../pi/paths.js";
import type { AgentMessage, SessionEntry, Usage } from "../../model/session.js";
import { num, str } from "../jsonl.js";
import { secretValuesOf } from "../secrets.js";
import { type AgentAdapter, type FileReader, type FileRef, type RestoreCheck, type SecretFile, type SessionMeta } from "../types.js";
import { sqliteUnits } from "../units.js";
import { ENV_GEMINI_HOME, GEMINI_ROOT, locateGemini } from "./locate.js";

export { ENV_GEMINI_HOME, GEMINI_ROOT, locateGemini };


/** A chat file larger than this is not read (it is still backed up). */
const MAX_CHAT_BYTES = 512 << 20;


const SECRETS: SecretFile[] = [
  { root: GEMINI_ROOT, path: "oauth_creds.json", kind: "whole", what: "OAuth tokens of the Google account" },
  { root: GEMINI_ROOT, path: ".env", kind: "whole", what: "environment (GEMINI_API_KEY and the like)" },
  { root: GEMINI_ROOT, path: "settings.json", kind: "if-it-holds-any", what: "settings (API keys, MCP server env)" },
  { root: GEMINI_ROOT, path: "mcp-oauth-tokens.json", kind: "whole", what: "OAuth tokens of MCP servers" },
];

/** A chat: tmp/<project>/chats/session-….jsonl, or an older whole session-….json. */
export const isGeminiChat = (p: string): boolean => /^tmp\/[^/]+\/chats\/session-[^/]+\.jsonl?$/.test(p);
const isChatRef = (ref: FileRef) => ref.root === GEMINI_ROOT && isGeminiChat(ref.path);

type Rec = Record<string, unknown>;
const isObj = (v: unknown): v is Rec => !!v && typeof v === "object" && !Array.isArray(v);

export interface GeminiConversation {
  meta: Rec;
  messages: Rec[];
  warnings: string[];
}

/** Replays a chat file's records (module comment); a whole .json file is one metadata record. */
export function replayGeminiChat(text: string): GeminiConversation {
  let meta: Rec = {};
  const messages = new Map<string, Rec>();
  const warnings: string[] = [];
  const addAll = (list: unknown) => {
    if (Array.isArray(list)) for (const m of list) if (isObj(m) && typeof m.id === "string") messages.set(m.id, m);
  };
  const lines = text.trimStart().startsWith("{") && !text.includes("\n{") ? [text] : text.split("\n");
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch {
      warnings.push(`line ${i + 1}: not JSON`);
      return;
    }
    if (!isObj(rec)) return void warnings.push(`line ${i + 1}: not a record`);
    if (typeof rec.$rewindTo === "string") {
      const ids = [...messages.keys()];
      const at = ids.indexOf(rec.$rewindTo);
      for (const id of at === -1 ? ids : ids.slice(at)) messages.delete(id);
    } else if (typeof rec.id === "string") {
      // The latest line wins, in the place of the first (a Map keeps first-insertion order).
      messages.set(rec.id, rec);
    } else if (isObj(rec.$set)) {
      if (Array.isArray(rec.$set.messages)) {
        messages.clear();
        addAll(rec.$set.messages);
      }
      const { messages: _m, ...rest } = rec.$set;
      meta = { ...meta, ...rest };
    } else if (typeof rec.sessionId === "string") {
      const { messages: list, ...rest } = rec;
      meta = { ...meta, ...rest };
      addAll(list);
    } else warnings.push(`line ${i + 1}: a record of no known kind`);
  });
  return { meta, messages: [...messages.values()], warnings };
}

const partsText = (content: unknown): string =>
  typeof content === "string" ? content : Array.isArray(content) ? content.map((p) => (isObj(p) && typeof p.text === "string" ? p.text : "")).join("") : "";

function usageOf(tokens: unknown): Usage | undefined {
  if (!isObj(tokens)) return undefined;
  const input = num(tokens.input);
  const output = num(tokens.output);
  const cacheRead = num(tokens.cached);
  return { input, output, cacheRead, cacheWrite: 0, reasoning: num(tokens.thoughts), totalTokens: num(tokens.total) || input + output, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
}

/** What a tool call's recorded result says, as text: its functionResponse output, or the result as JSON. */
function resultText(result: unknown, display: unknown): string {
  const parts = Array.isArray(result) ? result : result === undefined ? [] : [result];
  const texts = parts.map((p) => {
    const fr = isObj(p) && isObj(p.functionResponse) ? p.functionResponse : undefined;
    const resp = fr && isObj(fr.response) ? fr.response : undefined;
    if (resp && typeof resp.output === "string") return resp.output;
    if (resp && typeof resp.error === "string") return resp.error;
    if (isObj(p) && typeof p.text === "string") return p.text;
    return JSON.stringify(resp ?? p);
  });
  const joined = texts.filter(Boolean).join("\n");
  return joined || (typeof display === "string" ? display : "");
}

function toEntries(conv: GeminiConversation): SessionEntry[] {
  const entries: SessionEntry[] = [];
  let prev: string | null = null;
  const push = (e: SessionEntry) => {
    entries.push(e);
    prev = e.id;
  };
  for (const m of conv.messages) {
    const id = String(m.id);
    const timestamp = str(m.timestamp) ?? "";
    const time = Date.parse(timestamp) || 0;
    // The tool results the CLI sends back are a user record of functionResponse parts: the same
    // results are already toolResult messages (from the call's `result`), so this one is kept as a record.
    const onlyResponses = Array.isArray(m.content) && m.content.length > 0 && m.content.every((p) => isObj(p) && isObj(p.functionResponse));
    if (m.type === "user" && onlyResponses) {
      push({ type: "custom", id, parentId: prev, timestamp, customType: "gemini:function-responses", data: m });
      continue;
    }
    if (m.type === "user") {
      push({ type: "message", id, parentId: prev, timestamp, message: { role: "user", content: [{ type: "text", text: partsText(m.content) }], timestamp: time } as AgentMessage, raw: m });
      continue;
    }
    if (m.type !== "gemini") {
      push({ type: "custom", id, parentId: prev, timestamp, customType: `gemini:${String(m.type)}`, data: m });
      continue;
    }
    const content: Rec[] = [];
    for (const t of Array.isArray(m.thoughts) ? m.thoughts : []) {
      if (isObj(t)) content.push({ type: "thinking", thinking: [str(t.subject), str(t.description)].filter(Boolean).join(": ") });
    }
    const text = partsText(m.content);
    if (text) content.push({ type: "text", text });
    const calls = (Array.isArray(m.toolCalls) ? m.toolCalls : []).filter(isObj);
    for (const c of calls) content.push({ type: "toolCall", id: str(c.id) ?? `${id}:${content.length}`, name: str(c.name) ?? "tool", arguments: isObj(c.args) ? c.args : {} });
    const usage = usageOf(m.tokens);
    push({
      type: "message",
      id,
      parentId: prev,
      timestamp,
      message: { role: "assistant", content, model: str(m.model), provider: "google", ...(usage ? { usage } : {}), stopReason: calls.length ? "toolUse" : "stop", timestamp: time } as AgentMessage,
      raw: m,
    });
    for (const [i, c] of calls.entries()) {
      if (c.result === undefined && c.status === undefined) continue;
      const at = str(c.timestamp) ?? timestamp;
      const callId = str(c.id) ?? `${id}:${i}`;
      push({
        type: "message",
        id: `${id}:result:${i}`,
        parentId: prev,
        timestamp: at,
        message: { role: "toolResult", toolCallId: callId, toolName: str(c.name) ?? "tool", content: [{ type: "text", text: resultText(c.result, c.resultDisplay) }], isError: c.status === "error", details: c.resultDisplay, timestamp: Date.parse(at) || time } as AgentMessage,
      });
    }
  }
  return entries;
}

async function readChat(files: FileReader, ref: FileRef): Promise<GeminiConversation> {
  return replayGeminiChat((await files.read(ref, MAX_CHAT_BYTES)).toString("utf8"));
}

/** The first prompt the user typed (not the CLI's own <session_context> message). */
function titleOf(messages: Rec[]): string | undefined {
  for (const m of messages) {
    if (m.type !== "user") continue;
    const t = partsText(m.content).trim();
    if (t && !t.startsWith("<session_context>")) return t.split("\n")[0]!.slice(0, 200);
  }
  return undefined;
}

export const geminiAdapter: AgentAdapter = {
  name: "gemini",
  title: "Gemini CLI",
  locate: locateGemini,
  secretFiles: () => SECRETS,
  secretValues: (files) => secretValuesOf(files, SECRETS),
  copyRules: () => [
    { root: GEMINI_ROOT, glob: "tmp/*/chats/*.jsonl", kind: "append-jsonl" },
    { root: GEMINI_ROOT, glob: "**/*.json", kind: "rewrite-json" },
  ],
  sessions: {
    async *list(files) {
      if (!files.roots.includes(GEMINI_ROOT)) return;
      for await (const f of files.list(GEMINI_ROOT, "tmp")) {
        if (!isGeminiChat(f.path)) continue;
        const ref = { root: f.root, path: f.path };
        let conv: GeminiConversation;
        try {
          conv = await readChat(files, ref);
        } catch {
          continue; // too large or unreadable: `read` says why
        }
        const id = str(conv.meta.sessionId) ?? path.posix.basename(f.path).replace(/\.jsonl?$/, "");
        const title = titleOf(conv.messages);
        const started = str(conv.meta.startTime);
        const updated = str(conv.meta.lastUpdated) ?? new Date(f.mtimeMs).toISOString();
        yield { agent: "gemini", id, ...(title ? { title } : {}), ...(started ? { started } : {}), updated, files: [ref], bytes: f.size } satisfies SessionMeta;
      }
    },
    async read(files, meta) {
      const conv = await readChat(files, meta.files[0]!);
      const entries = toEntries(conv);
      const projectRoot = await projectRootOf(files, meta.files[0]!);
      const cwd = projectRoot ?? "";
      return {
        meta: { ...meta, ...(cwd ? { cwd } : {}) },
        header: { type: "session", version: 3, id: meta.id, timestamp: str(conv.meta.startTime) ?? meta.started ?? "", cwd, raw: conv.meta },
        entries,
        leafId: entries.at(-1)?.id ?? null,
        warnings: conv.warnings,
      };
    },
    isSessionFile: isChatRef,
  },
  ageCleanup(loc) {
    const { file, retention } = retentionSetting(loc.dir);
    if (retention.enabled === false) return undefined;
    const given = str(retention.maxAge);
    const days = given === undefined ? undefined : retentionDays(given);
    if (days === undefined) return { days: DEFAULT_RETENTION_DAYS, setting: `general.sessionRetention.maxAge ${DEFAULT_RETENTION_DAYS}d (${given === undefined ? "not set: the default" : `"${given}" in ${file}: read as the default`})` };
    return { days, setting: `general.sessionRetention.maxAge ${given} (${file})` };
  },
  async hazards(loc) {
    const { file, retention } = retentionSetting(loc.dir);
    const name = "gemini: general.sessionRetention";
    if (retention.enabled === false) return [{ name, status: "ok", message: `general.sessionRetention.enabled is false in ${file}: Gemini CLI deletes no chats by age` }];
    const age = str(retention.maxAge) ?? "30d";
    const count = typeof retention.maxCount === "number" ? `, or beyond the newest ${retention.maxCount}` : "";
    return [
      {
        name,
        status: "warn",
        message: `general.sessionRetention is ${retention.enabled === true ? "enabled" : "on by default"}: Gemini CLI deletes chats older than ${age}${count} when it starts (google-gemini/gemini-cli #27268)`,
        fix: `set "general": {"sessionRetention": {"enabled": false}} in ${file}; pi-guard keeps what it already deleted`,
      },
    ];
  },
  restoreUnits: (selected, available) => sqliteUnits(selected, available, () => false),
  async checkRestored(files, units) {
    const out: RestoreCheck[] = [];
    for (const ref of units.flatMap((u) => u.files).filter(isChatRef)) {
      const conv = await readChat(files, ref).catch((err: Error) => err);
      const ok = !(conv instanceof Error) && typeof conv.meta.sessionId === "string";
      out.push({ name: `${ref.root}:${ref.path}`, ok, message: ok ? `session ${String((conv as GeminiConversation).meta.sessionId)} with ${(conv as GeminiConversation).messages.length} message(s): gemini --resume finds it` : "no session metadata: Gemini CLI would not list this chat" });
    }
    return out;
  },
};

/** settings.json's general.sessionRetention ({} when absent or unreadable). */
function retentionSetting(dir: string): { file: string; retention: Rec } {
  const file = path.join(dir, "settings.json");
  const general = readSettings(file).settings?.general;
  const retention = isObj(general) ? general.sessionRetention : undefined;
  return { file, retention: isObj(retention) ? retention : {} };
}

/** Days Gemini CLI keeps chats when general.sessionRetention.maxAge is not set. */
const DEFAULT_RETENTION_DAYS = 30;

/** Gemini CLI's retention period ("30d", "24h", "2w", "1m" = 30 days) in days; undefined when it is not one. */
export function retentionDays(text: string): number | undefined {
  const m = /^(\d{1,6})([hdwm])$/.exec(text.trim());
  if (!m || Number(m[1]) <= 0) return undefined;
  return Number(m[1]) * { h: 1 / 24, d: 1, w: 7, m: 30 }[m[2] as "h" | "d" | "w" | "m"];
}

/** The project dir a chat belongs to: tmp/<project>/.project_root holds it. */
async function projectRootOf(files: FileReader, chat: FileRef): Promise<string | undefined> {
  const ref = { root: chat.root, path: `${chat.path.split("/").slice(0, 2).join("/")}/.project_root` };
  if (!(await files.stat(ref))) return undefined;
  return (await files.read(ref, 64 * 1024)).toString("utf8").trim() || undefined;
}

