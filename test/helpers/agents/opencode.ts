// opencode 1.18.33, for real and offline: its native binary, in the sandbox's HOME/XDG dirs, with
// a provider in $XDG_CONFIG_HOME/opencode/opencode.json that points the bundled
// "@ai-sdk/openai-compatible" provider at the fake model server's Chat Completions route.
// Its data lands in $XDG_DATA_HOME/opencode (opencode.db with -wal/-shm, log/), the sandbox's own.
//
//   const server = await startOpencodeModel([callTool("bash", {command: "echo hi", description: "say hi"}), say("done")]);
//   const run = await runOpencode(sb, server, "say hi");              // run.sessionId: "ses_…"
//   server.setScript([say("again")]);
//   await runOpencode(sb, server, "once more", { session: run.sessionId });

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { chatRoute } from "../fake-model/chat.js";
import { type FakeModelServer, startFakeModel, type Turn } from "../fake-model/server.js";
import type { Sandbox } from "../tmp.js";
import { opencodeBin } from "../tools.js";
import { agentEnv, type AgentProcess, filesWrittenSince, jsonLines, runAgentProcess } from "./run.js";

export const OPENCODE_PROVIDER = "fake";
export const OPENCODE_MODEL = "fake-model";

/** A fake model server that speaks Chat Completions, with this script. */
export const startOpencodeModel = (script: Turn[] = []): Promise<FakeModelServer> => startFakeModel({ routes: [chatRoute], script });

/** $XDG_DATA_HOME/opencode: the db, its side files, log/. */
export const opencodeDataDir = (sb: Sandbox): string => path.join(sb.dataHome, "opencode");
export const opencodeDb = (sb: Sandbox): string => path.join(opencodeDataDir(sb), "opencode.db");

/** Writes the sandbox's opencode.json for this server (again on each run: the port changes). */
export function writeOpencodeConfig(sb: Sandbox, server: FakeModelServer): string {
  const dir = path.join(sb.configHome, "opencode");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "opencode.json");
  const config = {
    $schema: "https://opencode.ai/config.json",
    provider: {
      [OPENCODE_PROVIDER]: {
        npm: "@ai-sdk/openai-compatible",
        name: "Fake",
        options: { baseURL: `${server.url}/v1`, apiKey: "sk-fake-opencode" },
        models: { [OPENCODE_MODEL]: { name: "Fake model" } },
      },
    },
    model: `${OPENCODE_PROVIDER}/${OPENCODE_MODEL}`,
    small_model: `${OPENCODE_PROVIDER}/${OPENCODE_MODEL}`,
    autoupdate: false,
    share: "disabled",
    // Offline here, every tool the script calls runs without asking (there is nobody to ask).
    permission: { bash: "allow", edit: "allow", read: "allow", external_directory: "allow" },
  };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

export function opencodeEnv(sb: Sandbox): Record<string, string> {
  return agentEnv(sb, "opencode", { OPENCODE_DISABLE_MODELS_FETCH: "1", OPENCODE_DISABLE_AUTOUPDATE: "1", OPENCODE_DISABLE_SHARE: "1" });
}

/** The project dir opencode runs in (one per sandbox, unless the caller names another). */
export const opencodeProject = (sb: Sandbox): string => sb.dir("opencode-project");

export interface OpencodeRunOptions {
  /** Continue this session (`--session ses_…`). */
  session?: string;
  cwd?: string;
  timeoutMs?: number;
}

export interface OpencodeRun extends AgentProcess {
  sessionId: string;
  /** opencode's `--format json` events. */
  events: Record<string, unknown>[];
  /** The text parts it printed, joined. */
  text: string;
  /** Files under its data dir written during the run (absolute). */
  files: string[];
}

/** One `opencode run --format json -- prompt` (a turn, with whatever tool calls the script makes). */
export async function runOpencode(sb: Sandbox, server: FakeModelServer, prompt: string, opts: OpencodeRunOptions = {}): Promise<OpencodeRun> {
  writeOpencodeConfig(sb, server);
  const started = Date.now() - 1000;
  const args = ["run", "--format", "json", ...(opts.session ? ["--session", opts.session] : []), "--", prompt];
  const proc = await runAgentProcess(opencodeBin(), args, {
    cwd: opts.cwd ?? opencodeProject(sb),
    env: opencodeEnv(sb),
    timeoutMs: opts.timeoutMs ?? 120_000,
    what: `opencode ${args.join(" ")}`,
  });
  const events = jsonLines(proc.stdout);
  const sessionId = events.map((e) => e.sessionID).find((s): s is string => typeof s === "string");
  if (!sessionId) throw new Error(`opencode run printed no sessionID\nstdout: ${proc.stdout.slice(-4000)}\nstderr: ${proc.stderr.slice(-4000)}`);
  const text = events
    .filter((e) => e.type === "text")
    .map((e) => String((e.part as { text?: unknown } | undefined)?.text ?? ""))
    .join("");
  return { ...proc, sessionId, events, text, files: filesWrittenSince(opencodeDataDir(sb), started) };
}

/** Any other opencode command (`session list --format json`, `export ses_…`), offline in the sandbox. */
export function opencodeCli(sb: Sandbox, args: readonly string[], opts: { cwd?: string; timeoutMs?: number; allowFail?: boolean } = {}): Promise<AgentProcess> {
  return runAgentProcess(opencodeBin(), args, {
    cwd: opts.cwd ?? opencodeProject(sb),
    env: opencodeEnv(sb),
    timeoutMs: opts.timeoutMs ?? 60_000,
    what: `opencode ${args.join(" ")}`,
    allowFail: opts.allowFail,
  });
}

/** The ids `opencode session list` shows: what opencode itself lists. */
export const opencodeSessions = async (sb: Sandbox): Promise<string[]> => (JSON.parse((await opencodeCli(sb, ["session", "list", "--format", "json"])).stdout) as { id: string }[]).map((s) => s.id);
