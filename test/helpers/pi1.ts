// pi 1.6.0 for tests, the way test/helpers/pi-factory.ts and pi-validate.ts give 0.73.1: sessions
// written by pi's real agent loop with a scripted faux model, pi's own HTML export and JSON event
// log, and validation with pi's in-memory parser. pi 1.x needs Node 22, so all of it runs in a
// child process (test/helpers/pi1-driver.mjs, pi1-faux-extension.mjs) on pi1Node(); nothing here
// imports pi. The child gets only the agent dir and a temp HOME: never the real ~/.pi.

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { sessionDirName } from "../../src/agents/pi/writer.js";
import { pi1Dir, pi1Node } from "./tools.js";
import { tempRoot } from "./tmp.js";

const run = promisify(execFile);
const HERE = import.meta.dirname;
export const PI1_DRIVER = path.join(HERE, "pi1-driver.mjs");
export const PI1_FAUX_EXTENSION = path.join(HERE, "pi1-faux-extension.mjs");
/** The provider and model the faux extension and the factory register. */
export const PI1_FAUX_PROVIDER = "pi1-faux";
export const PI1_FAUX_MODEL = "faux-1";

export type Pi1Block =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string }
  | { type: "toolCall"; name: string; arguments: Record<string, unknown>; id?: string };
/** One scripted model reply: plain text, one block, or several. */
export type Pi1Reply = string | Pi1Block | Pi1Block[];

export const pi1Text = (text: string): Pi1Block => ({ type: "text", text });
export const pi1Thinking = (thinking: string): Pi1Block => ({ type: "thinking", thinking });
export const pi1ToolCall = (name: string, args: Record<string, unknown>): Pi1Block => ({ type: "toolCall", name, arguments: args });

export interface Pi1Turn {
  user: string;
  /** The model's replies, one per model call; a reply with tool calls makes pi run them and call again. */
  assistant: Pi1Reply[];
  /** Before this turn, set pi's active tools (setActiveToolsByName): the next system message patches the tool list (toolsAdded/toolsRemoved). */
  tools?: string[];
  /** Before this turn, add or change custom prompt sections (null removes one): pi persists a system message patching them by name. */
  sections?: Record<string, string | null>;
  /** Before this turn, move pi's leaf to the end of turn N (navigateTree). */
  branchFromTurn?: number;
  /** With branchFromTurn: pi summarizes the abandoned branch with this faux reply (a branch_summary carrying usage). */
  branchSummary?: Pi1Reply;
  /**
   * During this turn, an extension's agent_before_settle hook hands pi these context edits of
   * earlier turns' last messages, in pi's shape: `{content}` replaces the content, null omits it.
   */
  contextEdits?: Array<{ turn: number; replacement: { content: string | Pi1Block[] } | null }>;
  /** After this turn, a `type:"usage"` entry: one real faux request and SessionManager.appendUsage, as pi's CacheWarmer does. */
  usage?: { kind: string; note?: string };
  /** After this turn, pi's manual compaction (session.compact), summarized by this faux reply. */
  compact?: Pi1Reply;
  /** After this turn, label its last message (pi's /label). */
  label?: string;
  /** After this turn, name the session (pi's /name). */
  name?: string;
}

export interface MakePi1SessionOptions {
  agentDir: string;
  /** The project dir; tools run here. Created if missing. */
  cwd: string;
  turns: Pi1Turn[];
  /** pi's --session-id: the caller's own id (default: pi's UUIDv7). */
  sessionId?: string;
  thinkingLevel?: "off" | "minimal" | "low" | "medium" | "high";
  /** After all turns, pi's /fork (createBranchedSession): a new file holding the path up to the end of `atTurn`. */
  fork?: { atTurn: number; turns: Pi1Turn[] };
  /** Also return the event log `pi --mode json` would print for the run (pi's own toJsonEvent of each session event). */
  eventLog?: boolean;
}

/** pi 1.6.0's AgentSession.getSessionStats(), as pi computes it. */
export interface Pi1SessionStats {
  sessionId: string;
  userMessages: number;
  assistantMessages: number;
  toolCalls: number;
  toolResults: number;
  totalMessages: number;
  tokens: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
  cost: number;
}

export interface Pi1SessionResult {
  file: string;
  sessionId: string;
  /** pi's leaf after each turn (after its usage, compaction, label and name entries). */
  turnLeafIds: string[];
  /** The last message entry of each turn. */
  turnMessageIds: string[];
  /** Session events pi emitted, counted by type. */
  events: Record<string, number>;
  stats: Pi1SessionStats;
  /** With the eventLog option: the header line, then one JSON event per line. */
  eventLog?: string;
  fork?: Pi1SessionResult;
}

async function driver<T>(request: Record<string, unknown>, home: string): Promise<T> {
  const dir = tempRoot("pi1");
  try {
    const req = path.join(dir, "request.json");
    const res = path.join(dir, "result.json");
    writeFileSync(req, JSON.stringify({ ...request, piDir: pi1Dir() }));
    await run(pi1Node(), [PI1_DRIVER, req, res], { env: pi1Env(home), maxBuffer: 64 << 20, timeout: 120_000 });
    const out = JSON.parse(readFileSync(res, "utf8")) as { ok: boolean; value?: T; error?: string };
    if (!out.ok) throw new Error(`pi 1.6.0 driver failed: ${out.error}`);
    return out.value as T;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The environment pi 1.6.0 runs in: PATH, a HOME of the caller's choosing, offline. */
export function pi1Env(home: string, agentDir?: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    TMPDIR: os.tmpdir(),
    PI_OFFLINE: "1",
    PI_TELEMETRY: "0",
    NO_COLOR: "1",
    ...(agentDir ? { PI_CODING_AGENT_DIR: agentDir } : {}),
    ...extra,
  };
}

/**
 * Run a scripted conversation through pi 1.6.0's agent loop; pi writes the session file under
 * `<agentDir>/sessions/--<cwd>--/`. Credentials and models.json of the run live in a temp folder,
 * not in the agent dir. About a second per call (Node 22 start and pi's import).
 */
export async function makePi1Session(options: MakePi1SessionOptions): Promise<Pi1SessionResult> {
  mkdirSync(options.agentDir, { recursive: true });
  const runtimeDir = tempRoot("pi1-home");
  try {
    const sessionDir = path.join(options.agentDir, "sessions", sessionDirName(options.cwd));
    return await driver<Pi1SessionResult>({ op: "session", options: { ...options, sessionDir, runtimeDir } }, runtimeDir);
  } finally {
    rmSync(runtimeDir, { recursive: true, force: true });
  }
}

export interface Pi1Validation {
  header: { type: "session"; version: number; id: string; cwd?: string; [k: string]: unknown };
  /** Entries after pi's migration (header excluded). */
  entries: Array<{ type: string; id: string; parentId: string | null; [k: string]: unknown }>;
  /** pi's buildSessionContext: the messages pi would send, system messages included. */
  context: { messages: Array<{ role: string; [k: string]: unknown }>; [k: string]: unknown };
  /** The entries of the leaf's path whose context edit pi applies (its buildSessionProjection), by id. */
  contextEdited: Record<string, "replaced" | "omitted">;
  /** Lines pi's parser kept, header included. */
  parsedLines: number;
  leafId: string | null;
  /** pi's own totals over these entries (AgentSession.getSessionStats on an in-memory manager). */
  stats: Pi1SessionStats;
}

/** Check session text with pi 1.6.0's in-memory code (parseSessionEntries, migrateSessionEntries, buildSessionContext); throws when pi would not load it. */
export async function validatePi1(text: string, options: { expectEntries?: boolean; expectMessages?: boolean } = {}): Promise<Pi1Validation> {
  const home = tempRoot("pi1-home");
  try {
    const out = await driver<({ ok: true } & Pi1Validation) | { ok: false; why: string }>({ op: "validate", text }, home);
    if (!out.ok) throw new Error(`pi 1.6.0 would not load this session: ${out.why}`);
    if ((options.expectEntries ?? true) && out.entries.length === 0) throw new Error("pi 1.6.0 would not load this session: no entries after the header");
    if (options.expectMessages && out.context.messages.length === 0) throw new Error("pi 1.6.0 would not load this session: the context has no messages");
    return out;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

export interface Pi1CliOptions {
  /** HOME for pi (its agent dir defaults to agentDir when given). */
  home: string;
  agentDir?: string;
  /** The working directory pi runs in (created if missing). */
  cwd: string;
}

function piCli(): string {
  return path.join(pi1Dir(), "node_modules", ".bin", "pi");
}

// pi reads a piped stdin as part of the prompt and waits for its end: close it.
function runPi(args: string[], cwd: string, env: Record<string, string>) {
  const p = run(pi1Node(), args, { cwd, env, maxBuffer: 256 << 20, timeout: 120_000 });
  p.child.stdin?.end();
  return p;
}

export interface Pi1JsonRun {
  /** stdout: pi's `--mode json` event log, header line first. */
  log: string;
  stderr: string;
  /** The header's session id (the session file, unless --no-session, is named after it). */
  sessionId: string;
}

export interface Pi1JsonOptions extends Pi1CliOptions {
  prompt: string;
  /** The faux model's replies, one per model call, in order. */
  replies: Pi1Reply[];
  /** Arguments before the prompt (e.g. ["--session-id", "x"] or ["--no-session"]). */
  args?: string[];
  /** More extensions for pi to load (`-e`), after the faux one: e.g. pi-guard's own. */
  extensions?: string[];
  /** Extra environment for pi (e.g. pi-guard's XDG dirs for its extension). */
  env?: Record<string, string>;
  /** Characters per streamed chunk are 4x these (default 2-4 tokens: many message_update events). */
  tokenSize?: { min: number; max: number };
  /** Stream this slowly (a long answer to kill mid-stream); default: as fast as possible. */
  tokensPerSecond?: number;
}

/**
 * Start the real `pi --mode json` CLI of 1.6.0 with the faux extension, for a caller that needs
 * the process itself (to kill it mid-stream). stdin is closed; call cleanup() once it has exited.
 */
export function spawnPi1Json(options: Pi1JsonOptions): { child: ChildProcess; cleanup(): void } {
  mkdirSync(options.cwd, { recursive: true });
  const dir = tempRoot("pi1-script");
  const script = path.join(dir, "script.json");
  writeFileSync(script, JSON.stringify({ replies: options.replies, tokenSize: options.tokenSize ?? { min: 2, max: 4 }, tokensPerSecond: options.tokensPerSecond }));
  const extensions = [PI1_FAUX_EXTENSION, ...(options.extensions ?? [])].flatMap((e) => ["-e", e]);
  const args = [piCli(), ...extensions, "--provider", PI1_FAUX_PROVIDER, "--model", PI1_FAUX_MODEL, "--mode", "json", ...(options.args ?? []), options.prompt];
  const child = spawn(pi1Node(), args, { cwd: options.cwd, env: pi1Env(options.home, options.agentDir, { ...options.env, PI1_FAUX_SCRIPT: script }), stdio: ["ignore", "pipe", "pipe"] });
  return { child, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Run `pi --mode json` (spawnPi1Json) to its end; a non-zero exit rejects with its stderr. */
export async function runPi1Json(options: Pi1JsonOptions): Promise<Pi1JsonRun> {
  const { child, cleanup } = spawnPi1Json(options);
  try {
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve, reject) => child.on("error", reject).on("close", resolve));
    if (code !== 0) throw new Error(`pi --mode json exited ${code}: ${stderr.trim().split("\n").slice(-3).join(" | ")}`);
    const header = JSON.parse(stdout.slice(0, stdout.indexOf("\n"))) as { type?: string; id?: string };
    if (header.type !== "session" || typeof header.id !== "string") throw new Error(`pi --mode json did not start with a session header: ${stdout.slice(0, 200)}`);
    return { log: stdout, stderr, sessionId: header.id };
  } finally {
    cleanup();
  }
}

/** pi 1.6.0's own HTML page of a session file (`pi --export in out`); returns the page's path. */
export async function exportPi1Html(options: Pi1CliOptions & { sessionFile: string; out: string }): Promise<string> {
  mkdirSync(options.cwd, { recursive: true });
  await runPi([piCli(), "--export", options.sessionFile, options.out], options.cwd, pi1Env(options.home, options.agentDir));
  return options.out;
}

/**
 * One pi 1.6.0 session holding every entry kind pi 1.x adds, plus a fork, for tests that need
 * "a real 1.x session": system messages (the first with every section and toolsAdded, a patch
 * with toolsRemoved and a section patched to null), a cache_warm usage entry, a context edit, a
 * compaction carrying systemMessage and usage, a branch with a branch_summary carrying usage,
 * a label, a name, thinking, tool calls and results, and the caller's --session-id.
 * `cwd` gets a notes.txt the first turn reads.
 */
export async function makePi1RichSession(agentDir: string, cwd: string, sessionId = "ledger-july"): Promise<Pi1SessionResult> {
  mkdirSync(cwd, { recursive: true });
  writeFileSync(path.join(cwd, "notes.txt"), "line one\nline two\n");
  return makePi1Session({
    agentDir,
    cwd,
    sessionId,
    thinkingLevel: "medium",
    turns: [
      {
        user: "What is in notes.txt?",
        sections: { plan: "Read first, then answer." },
        assistant: [[pi1Thinking("I should read it."), pi1ToolCall("read", { path: "notes.txt" })], "It has two lines."],
        usage: { kind: "cache_warm" },
        label: "read-done",
      },
      {
        user: "Count the files",
        tools: ["read", "bash"],
        sections: { plan: null },
        assistant: [[pi1Text("Counting."), pi1ToolCall("bash", { command: "ls | wc -l" })], "One file."],
        contextEdits: [{ turn: 0, replacement: { content: "It has two lines (edited)." } }],
        name: "Ledger for July",
      },
      { user: "Summarize so far", assistant: ["So far: one file with two lines."], compact: "The user read notes.txt and counted files." },
      { user: "Try another way", branchFromTurn: 0, branchSummary: "Abandoned: counting and compaction.", assistant: ["Alternative answer."] },
    ],
    fork: { atTurn: 1, turns: [{ user: "Continue in the fork", assistant: ["Forked reply."] }] },
  });
}
