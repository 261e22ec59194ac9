// Claude Code 2.1.328, for real and offline: its native binary in the sandbox's HOME/XDG dirs, with
// CLAUDE_CONFIG_DIR at the default place ($HOME/.claude), pointed at the fake model server's
// Anthropic Messages route by ANTHROPIC_BASE_URL. Without the three "no traffic" variables it
// tries outside hosts and hangs. Its transcripts land in
// $CLAUDE_CONFIG_DIR/projects/<cwd, every non-alphanumeric → ->/<session uuid>.jsonl.
//
//   const server = await startClaudeModel([callTool("Bash", {command: "echo hi", description: "say hi"}), say("done")]);
//   const run = await runClaude(sb, server, "say hi");                 // run.sessionId: a uuid
//   server.setScript([say("again")]);
//   await runClaude(sb, server, "once more", { resume: run.sessionId });

import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { anthropicRoute } from "../fake-model/anthropic.js";
import { type FakeModelServer, startFakeModel, type Turn } from "../fake-model/server.js";
import type { Sandbox } from "../tmp.js";
import { claudeBin } from "../tools.js";
import { agentEnv, type AgentProcess, filesWrittenSince, jsonLines, runAgentProcess } from "./run.js";

/** A fake model server that speaks the Anthropic Messages API, with this script. */
export const startClaudeModel = (script: Turn[] = []): Promise<FakeModelServer> => startFakeModel({ routes: [anthropicRoute], script });

/** $CLAUDE_CONFIG_DIR, which the runner sets to Claude Code's default, $HOME/.claude. */
export const claudeConfigDir = (sb: Sandbox): string => path.join(sb.home, ".claude");

/** The project dir Claude Code runs in (one per sandbox, unless the caller names another). */
export const claudeProject = (sb: Sandbox): string => sb.dir("claude-project");

/** Claude Code's folder name for a project dir: every character but [A-Za-z0-9] becomes "-". */
export const claudeProjectKey = (cwd: string): string => cwd.replace(/[^A-Za-z0-9]/g, "-");

export function claudeEnv(sb: Sandbox, server: FakeModelServer): Record<string, string> {
  return agentEnv(sb, "claude", {
    CLAUDE_CONFIG_DIR: claudeConfigDir(sb),
    ANTHROPIC_BASE_URL: server.url,
    ANTHROPIC_API_KEY: "sk-ant-fake-key-for-tests",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
  });
}

export interface ClaudeRunOptions {
  /** Continue this session (`--resume <uuid>`). */
  resume?: string;
  /** Start the session with this id (`--session-id <uuid>`). */
  sessionId?: string;
  cwd?: string;
  timeoutMs?: number;
  /** Tools allowed without asking; `Bash(echo:*)` by default. */
  allowedTools?: string;
}

export interface ClaudeRun extends AgentProcess {
  sessionId: string;
  /** The stream-json events it printed. */
  events: Record<string, unknown>[];
  /** The final answer (the `result` event's text). */
  result: string;
  /** The session's transcript (absolute). */
  transcript: string;
  /** Files under $CLAUDE_CONFIG_DIR written during the run (absolute). */
  files: string[];
}

/** One `claude -p prompt --output-format stream-json --verbose` (a turn, with the tool calls the script makes). */
export async function runClaude(sb: Sandbox, server: FakeModelServer, prompt: string, opts: ClaudeRunOptions = {}): Promise<ClaudeRun> {
  const started = Date.now() - 1000;
  const args = [
    "-p",
    prompt,
    "--output-format",
    "stream-json",
    "--verbose",
    "--allowedTools",
    opts.allowedTools ?? "Bash(echo:*)",
    ...(opts.resume ? ["--resume", opts.resume] : []),
    ...(opts.sessionId ? ["--session-id", opts.sessionId] : []),
  ];
  const proc = await runAgentProcess(claudeBin(), args, {
    cwd: opts.cwd ?? claudeProject(sb),
    env: claudeEnv(sb, server),
    timeoutMs: opts.timeoutMs ?? 120_000,
    what: `claude ${args.join(" ")}`,
  });
  const events = jsonLines(proc.stdout);
  const done = events.find((e) => e.type === "result");
  const sessionId = typeof done?.session_id === "string" ? done.session_id : undefined;
  const fail = (why: string) => new Error(`claude ${why}\nstdout: ${proc.stdout.slice(-4000)}\nstderr: ${proc.stderr.slice(-4000)}`);
  if (!done || !sessionId) throw fail("printed no result event with a session_id");
  if (done.is_error === true) throw fail(`ended in an error: ${String(done.result ?? done.subtype)}`);
  const transcript = findTranscript(claudeConfigDir(sb), sessionId);
  if (!transcript) throw fail(`wrote no transcript ${sessionId}.jsonl under ${claudeConfigDir(sb)}/projects`);
  return { ...proc, sessionId, events, result: String(done.result ?? ""), transcript, files: filesWrittenSince(claudeConfigDir(sb), started) };
}

/** The transcript of a session: projects/<project key>/<uuid>.jsonl, in whichever project it ran. */
export function findTranscript(configDir: string, sessionId: string): string | undefined {
  const projects = path.join(configDir, "projects");
  let dirs: string[];
  try {
    dirs = readdirSync(projects);
  } catch {
    return undefined;
  }
  for (const d of dirs) {
    if (statSync(path.join(projects, d, `${sessionId}.jsonl`), { throwIfNoEntry: false })?.isFile()) return path.join(projects, d, `${sessionId}.jsonl`);
  }
  return undefined;
}
