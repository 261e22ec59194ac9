// Codex CLI 0.169.0, for real and offline: its musl-static binary in the sandbox's HOME/XDG dirs,
// with CODEX_HOME at the default place ($HOME/.codex) and a config.toml whose provider `fake`
// points at the fake model server's Responses route (`wire_api = "chat"` is refused by 0.169).
// Everything that would reach outside hosts is off: analytics, apps, plugins, in-app updates,
// model discovery and the background daemon; request compression is off so that the server (and
// a test) reads plain JSON. `codex exec` runs its shell tool (`exec_command`) without asking.
// Its rollouts land in $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl, beside
// state_5.sqlite and the other databases.
//
//   const server = await startCodexModel([callTool("exec_command", {cmd: "echo hi"}), say("done")]);
//   const run = await runCodex(sb, server, "say hi");                  // run.sessionId: a uuid
//   server.setScript([say("again")]);
//   await runCodex(sb, server, "once more", { resume: run.sessionId });

import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { responsesRoute } from "../fake-model/responses.js";
import { type FakeModelServer, startFakeModel, type Turn } from "../fake-model/server.js";
import type { Sandbox } from "../tmp.js";
import { codexBin } from "../tools.js";
import { agentEnv, type AgentProcess, filesWrittenSince, jsonLines, runAgentProcess } from "./run.js";

export const CODEX_PROVIDER = "fake";
export const CODEX_MODEL = "gpt-fake";

/** A fake model server that speaks the OpenAI Responses API, with this script. */
export const startCodexModel = (script: Turn[] = []): Promise<FakeModelServer> => startFakeModel({ routes: [responsesRoute], script });

/** $CODEX_HOME, which the runner sets to Codex's default, $HOME/.codex. */
export const codexHome = (sb: Sandbox): string => path.join(sb.home, ".codex");

/** The project dir Codex runs in (one per sandbox, unless the caller names another). */
export const codexProject = (sb: Sandbox): string => sb.dir("codex-project");

/** Writes $CODEX_HOME/config.toml for this server (again on each run: the port changes). */
export function writeCodexConfig(sb: Sandbox, server: FakeModelServer): string {
  const home = codexHome(sb);
  mkdirSync(home, { recursive: true });
  const file = path.join(home, "config.toml");
  writeFileSync(
    file,
    [
      `model = "${CODEX_MODEL}"`,
      `model_provider = "${CODEX_PROVIDER}"`,
      `check_for_update_on_startup = false`,
      ``,
      `[model_providers.${CODEX_PROVIDER}]`,
      `name = "Fake"`,
      `base_url = "${server.url}/v1"`,
      `wire_api = "responses"`,
      `env_key = "FAKE_OPENAI_API_KEY"`,
      ``,
      `[analytics]`,
      `enabled = false`,
      ``,
      `[features]`,
      `apps = false`,
      `plugins = false`,
      `remote_plugin = false`,
      `in_app_updates = false`,
      `daemon_auto_start = false`,
      `enable_request_compression = false`,
      `api_key_model_discovery = false`,
      ``,
    ].join("\n"),
  );
  return file;
}

export function codexEnv(sb: Sandbox): Record<string, string> {
  return agentEnv(sb, "codex", { CODEX_HOME: codexHome(sb), FAKE_OPENAI_API_KEY: "sk-fake-codex-key-for-tests" });
}

export interface CodexRunOptions {
  /** Continue this session (`codex exec resume <uuid>`). */
  resume?: string;
  cwd?: string;
  timeoutMs?: number;
}

export interface CodexRun extends AgentProcess {
  sessionId: string;
  /** The `--json` events it printed. */
  events: Record<string, unknown>[];
  /** The agent messages it printed, joined. */
  text: string;
  /** The session's rollout (absolute). */
  rollout: string;
  /** Files under $CODEX_HOME written during the run (absolute). */
  files: string[];
}

/** The arguments of one `codex exec` turn, new or resumed. */
export function codexExecArgs(prompt: string, resume?: string): string[] {
  return ["exec", "--skip-git-repo-check", "--json", ...(resume ? ["resume", resume] : []), prompt];
}

/** One `codex exec --json prompt` (a turn, with the tool calls the script makes). */
export async function runCodex(sb: Sandbox, server: FakeModelServer, prompt: string, opts: CodexRunOptions = {}): Promise<CodexRun> {
  writeCodexConfig(sb, server);
  const started = Date.now() - 1000;
  const args = codexExecArgs(prompt, opts.resume);
  const proc = await runAgentProcess(codexBin(), args, {
    cwd: opts.cwd ?? codexProject(sb),
    env: codexEnv(sb),
    timeoutMs: opts.timeoutMs ?? 120_000,
    what: `codex ${args.join(" ")}`,
  });
  const events = jsonLines(proc.stdout);
  const fail = (why: string) => new Error(`codex ${why}\nstdout: ${proc.stdout.slice(-4000)}\nstderr: ${proc.stderr.slice(-4000)}`);
  const sessionId = events.find((e) => e.type === "thread.started")?.thread_id;
  if (typeof sessionId !== "string") throw fail("printed no thread.started event");
  if (!events.some((e) => e.type === "turn.completed")) throw fail("printed no turn.completed event");
  const text = events
    .map((e) => e.item as { type?: string; text?: string } | undefined)
    .filter((i) => i?.type === "agent_message")
    .map((i) => i!.text ?? "")
    .join("\n");
  const rollout = findRollout(codexHome(sb), sessionId);
  if (!rollout) throw fail(`wrote no rollout-*-${sessionId}.jsonl under ${codexHome(sb)}/sessions`);
  return { ...proc, sessionId, events, text, rollout, files: filesWrittenSince(codexHome(sb), started) };
}

/** Any other codex command (`codex exec resume --last …`), offline in the sandbox. */
export function codexCli(sb: Sandbox, server: FakeModelServer, args: readonly string[], opts: { cwd?: string; timeoutMs?: number; allowFail?: boolean } = {}): Promise<AgentProcess> {
  writeCodexConfig(sb, server);
  return runAgentProcess(codexBin(), args, {
    cwd: opts.cwd ?? codexProject(sb),
    env: codexEnv(sb),
    timeoutMs: opts.timeoutMs ?? 60_000,
    what: `codex ${args.join(" ")}`,
    allowFail: opts.allowFail,
  });
}

/** The rollout of a session: sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl. */
export function findRollout(home: string, sessionId: string): string | undefined {
  const walk = (d: string): string | undefined => {
    let names;
    try {
      names = readdirSync(d, { withFileTypes: true });
    } catch {
      return undefined;
    }
    for (const n of names) {
      const p = path.join(d, n.name);
      if (n.isDirectory()) {
        const found = walk(p);
        if (found) return found;
      } else if (n.isFile() && n.name.startsWith("rollout-") && n.name.endsWith(`-${sessionId}.jsonl`)) return p;
    }
    return undefined;
  };
  return walk(path.join(home, "sessions"));
}

export interface CodexListedThread {
  id: string;
  path: string;
  preview: string;
}

/**
 * The sessions codex itself lists (what its resume picker shows): `thread/list` asked of `codex
 * app-server` over stdio (the protocol of its IDE clients), for sessions of `codex exec` and the
 * TUI, newest first. `stateDbOnly` (the default) reads the threads table alone, so a thread without
 * its row is missing; without it, 0.169 first scans the rollouts and writes the rows it finds
 * missing back into state_5.sqlite ("scan-and-repair"): a listing that changes the db.
 */
export async function codexThreadList(sb: Sandbox, server: FakeModelServer, opts: { stateDbOnly?: boolean; timeoutMs?: number } = {}): Promise<CodexListedThread[]> {
  writeCodexConfig(sb, server);
  const child = spawn(codexBin(), ["app-server"], { cwd: codexProject(sb), env: codexEnv(sb), stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-4000)));
  const send = (msg: object) => child.stdin.write(`${JSON.stringify(msg)}\n`);
  try {
    return await new Promise<CodexListedThread[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`codex app-server: no thread/list answer in ${opts.timeoutMs ?? 60_000} ms\nstderr: ${stderr}`)), opts.timeoutMs ?? 60_000);
      let buf = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        buf += d;
        for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          const msg = jsonLines(line)[0] as { id?: number; result?: { data?: CodexListedThread[] }; error?: unknown } | undefined;
          if (msg?.id === 1 && !msg.error) {
            send({ method: "initialized" });
            send({ id: 2, method: "thread/list", params: { modelProviders: [], sourceKinds: ["exec", "cli"], useStateDbOnly: opts.stateDbOnly ?? true, limit: 100 } });
          } else if (msg?.id === 1 || msg?.id === 2) {
            clearTimeout(timer);
            if (msg.error || !Array.isArray(msg.result?.data)) reject(new Error(`codex app-server answered ${line}\nstderr: ${stderr}`));
            else resolve(msg.result.data);
          }
        }
      });
      child.on("error", (err) => reject(err));
      child.on("close", (code) => reject(new Error(`codex app-server exited ${code} before answering\nstderr: ${stderr}`)));
      send({ id: 1, method: "initialize", params: { clientInfo: { name: "pi-guard-test", version: "0" } } });
    });
  } finally {
    child.stdin.end();
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once("close", r));
      child.kill("SIGTERM");
      await exited;
    }
  }
}
