// Gemini CLI 0.61.0, for real and offline: its bundled JS on the Node the tests run on, in the
// sandbox's HOME (so its data is $HOME/.gemini, the sandbox's), with GOOGLE_GEMINI_BASE_URL at the
// fake model server's Gemini route, an API key, and `security.auth.selectedType = "gemini-api-key"`.
// The project dir is trusted through GEMINI_CLI_TRUST_WORKSPACE (headless runs refuse an untrusted
// one), the model is fixed with -m (no router requests), and `--approval-mode yolo` lets the
// script's tool calls run with nobody to ask.
//
//   const server = await startGeminiModel([callTool("run_shell_command", {command: "echo hi"}), say("done")]);
//   const run = await runGemini(sb, server, "say hi");               // run.sessionId: a uuid
//   server.setScript([say("again")]);
//   await runGemini(sb, server, "once more", { resume: run.sessionId });
//
// `gemini --list-sessions` is not read-only (it appends a summary to the chat file): tests that
// compare bytes must not call it between the snapshot and the comparison.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { geminiRoute } from "../fake-model/gemini.js";
import { type FakeModelServer, startFakeModel, type Turn } from "../fake-model/server.js";
import type { Sandbox } from "../tmp.js";
import { geminiCliJs } from "../tools.js";
import { agentEnv, type AgentProcess, filesWrittenSince, runAgentProcess } from "./run.js";

export const GEMINI_MODEL = "gemini-2.5-pro";

export const startGeminiModel = (script: Turn[] = []): Promise<FakeModelServer> => startFakeModel({ routes: [geminiRoute], script });

/** $HOME/.gemini: settings.json, projects.json, tmp/<project>/chats/. */
export const geminiDataDir = (sb: Sandbox): string => path.join(sb.home, ".gemini");

/** Writes settings.json for offline runs, keeping any keys a test put there first. */
export function writeGeminiSettings(sb: Sandbox, extra: Record<string, unknown> = {}): string {
  const dir = geminiDataDir(sb);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "settings.json");
  let current: Record<string, unknown> = {};
  try {
    current = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch {
    // none yet
  }
  const settings = {
    ...current,
    security: { auth: { selectedType: "gemini-api-key" } },
    general: { ...((current.general as object) ?? {}), disableAutoUpdate: true, disableUpdateNag: true },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    ...extra,
  };
  writeFileSync(file, JSON.stringify(settings, null, 2));
  return file;
}

export function geminiEnv(sb: Sandbox, server: FakeModelServer): Record<string, string> {
  return agentEnv(sb, "gemini", {
    GOOGLE_GEMINI_BASE_URL: server.url,
    GEMINI_API_KEY: "fake-gemini-key",
    GEMINI_CLI_TRUST_WORKSPACE: "true",
  });
}

export const geminiProject = (sb: Sandbox): string => sb.dir("gemini-project");

export interface GeminiRunOptions {
  /** Continue this session (`--resume <id>`). */
  resume?: string;
  cwd?: string;
  timeoutMs?: number;
}

export interface GeminiRun extends AgentProcess {
  sessionId: string;
  /** The final answer (`--output-format json`'s `response`). */
  text: string;
  /** Files under $HOME/.gemini written during the run (absolute). */
  files: string[];
}

/** One `gemini -p prompt --output-format json` (a turn, with whatever tool calls the script makes). */
export async function runGemini(sb: Sandbox, server: FakeModelServer, prompt: string, opts: GeminiRunOptions = {}): Promise<GeminiRun> {
  writeGeminiSettings(sb);
  const started = Date.now() - 1000;
  const args = [geminiCliJs(), "-m", GEMINI_MODEL, "--approval-mode", "yolo", "--output-format", "json", ...(opts.resume ? ["--resume", opts.resume] : []), "-p", prompt];
  const proc = await runAgentProcess(process.execPath, args, {
    cwd: opts.cwd ?? geminiProject(sb),
    env: geminiEnv(sb, server),
    timeoutMs: opts.timeoutMs ?? 120_000,
    what: `gemini ${args.slice(1).join(" ")}`,
  });
  const start = proc.stdout.indexOf("{");
  let out: { session_id?: unknown; response?: unknown } = {};
  try {
    out = JSON.parse(proc.stdout.slice(start)) as typeof out;
  } catch {
    // reported below
  }
  if (typeof out.session_id !== "string") throw new Error(`gemini printed no session_id\nstdout: ${proc.stdout.slice(-4000)}\nstderr: ${proc.stderr.slice(-4000)}`);
  return { ...proc, sessionId: out.session_id, text: typeof out.response === "string" ? out.response : "", files: filesWrittenSince(geminiDataDir(sb), started) };
}

/** Any other gemini command, offline in the sandbox. */
export function geminiCli(sb: Sandbox, server: FakeModelServer, args: readonly string[], opts: { cwd?: string; timeoutMs?: number; allowFail?: boolean } = {}): Promise<AgentProcess> {
  writeGeminiSettings(sb);
  return runAgentProcess(process.execPath, [geminiCliJs(), ...args], {
    cwd: opts.cwd ?? geminiProject(sb),
    env: geminiEnv(sb, server),
    timeoutMs: opts.timeoutMs ?? 60_000,
    what: `gemini ${args.join(" ")}`,
    allowFail: opts.allowFail,
  });
}
