// Sessions of other agents in `sessions list/show/search/export/stats`: a real Claude Code 2.1.328,
// Codex CLI 0.169.0, Gemini CLI 0.61.0 and opencode 1.18.33 session (their CLIs, offline, against
// the fake model server), each with a tool call, read through the agent registry's session
// readers into the common model. Listed with `--agent`, shown, searched, exported to Markdown,
// JSON and HTML (the page in Chromium), first live, then only from a snapshot after each agent's
// data dir is wiped.

import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import Database from "better-sqlite3";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { codexHome, runCodex, startCodexModel } from "../helpers/agents/codex.js";
import { runGemini, startGeminiModel } from "../helpers/agents/gemini.js";
import { runOpencode, startOpencodeModel } from "../helpers/agents/opencode.js";
import { launchChromium, openFile } from "../helpers/browser.js";
import { expectOneLineError, initRepo, snapshot } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { run, runOk } from "./cli.js";

interface Listed {
  id: string;
  agent: string;
  project: string;
  deleted: boolean;
  live: string | null;
  turns: number;
  tokens: number;
  toolCalls: number;
}

const AGENTS = ["claude", "codex", "gemini", "opencode"] as const;
type Agent = (typeof AGENTS)[number];

let sb: Sandbox;
let browser: Browser;
/** Each agent's session: its id, the tool command it ran, the answer, and the data dir wiped later. */
const made: Record<Agent, { id: string; tool: string; answer: string; dataDir: string }> = {} as never;

/** Start the agent's fake model with a tool call echoing `word` and an answer, run one prompt, stop the model. */
async function make(agent: Agent, word: string, start: (turns: ReturnType<typeof say>[]) => Promise<FakeModelServer>, tool: ReturnType<typeof callTool>, runIt: (m: FakeModelServer) => Promise<string>, dataDir: string) {
  const answer = `The echo printed ${word}.`;
  const model = await start([tool, say(answer)]);
  try {
    made[agent] = { id: await runIt(model), tool: `echo ${word}`, answer, dataDir };
  } finally {
    await model.close();
  }
}

beforeAll(async () => {
  sb = makeSandbox("agent-sessions");
  await make("claude", "heron-from-claude", startClaudeModel, callTool("Bash", { command: "echo heron-from-claude", description: "say heron" }), async (m) => (await runClaude(sb, m, "please echo a heron")).sessionId, path.join(sb.home, ".claude"));
  await make("codex", "otter-from-codex", startCodexModel, callTool("exec_command", { cmd: "echo otter-from-codex" }), async (m) => (await runCodex(sb, m, "please echo an otter")).sessionId, codexHome(sb));
  await make("gemini", "gecko-from-gemini", startGeminiModel, callTool("run_shell_command", { command: "echo gecko-from-gemini", description: "say gecko" }), async (m) => (await runGemini(sb, m, "please echo a gecko")).sessionId, path.join(sb.home, ".gemini"));
  await make("opencode", "ocelot-from-opencode", startOpencodeModel, callTool("bash", { command: "echo ocelot-from-opencode", description: "say ocelot" }), async (m) => (await runOpencode(sb, m, "please echo an ocelot")).sessionId, path.join(sb.dataHome, "opencode"));
  await initRepo(sb);
  browser = await launchChromium();
}, 300_000);
afterAll(async () => {
  await browser?.close();
  sb?.cleanup();
});

const list = async (args: string[] = []) => (await runOk(sb, ["--json", "sessions", "list", ...args])).json<Listed[]>();

const TITLES: Record<Agent, string> = { claude: "Claude Code", codex: "Codex CLI", gemini: "Gemini CLI", opencode: "opencode" };

/** Export one session in every format and check each shows the prompt, the tool call and the answer; the HTML in Chromium. */
async function exportsShow(agent: Agent, label: string) {
  const s = made[agent];
  const md = (await runOk(sb, ["export", s.id, "--format", "markdown"])).stdout;
  expect(md, `${agent} markdown`).toContain(s.answer);
  // The title names the agent that wrote the session, unless the session has a name of its own.
  const heading = md.split("\n")[0];
  expect(heading, `${agent} title`).not.toMatch(/^# pi session/);
  if (heading.endsWith(s.id)) expect(heading).toBe(`# ${TITLES[agent]} session ${s.id}`);
  expect(md).toContain(s.tool);
  const json = (await runOk(sb, ["export", s.id, "--format", "json"])).json<{ entries: { type: string; message?: { role: string; content: unknown } }[] }>();
  const roles = json.entries.filter((e) => e.type === "message").map((e) => e.message!.role);
  expect(roles, `${agent} json`).toEqual(expect.arrayContaining(["user", "assistant", "toolResult"]));
  const calls = json.entries.flatMap((e) => (Array.isArray(e.message?.content) ? (e.message!.content as { type: string }[]) : [])).filter((b) => b.type === "toolCall");
  expect(JSON.stringify(calls)).toContain(s.tool.split(" ")[1]);
  const html = path.join(sb.root, `${agent}-${label}.html`);
  await runOk(sb, ["export", s.id, "--format", "html", "--output", html]);
  const { page, errors, requests } = await openFile(browser, html);
  const text = await page.locator("body").innerText();
  const title = await page.locator("#title").innerText();
  expect(title, `${agent} html title`).toBe(heading.slice(2));
  expect(await page.title()).toBe(`${title} \u2014 pi-guard export`);
  await page.context().close();
  expect(errors).toEqual([]);
  expect(requests).toEqual([]);
  expect(text, `${agent} html`).toContain(s.answer);
  expect(text).toContain(s.tool.split(" ")[1]);
}

describe("sessions of Claude Code, Codex, Gemini CLI and opencode", () => {
  it("lists each with its agent, filters by --agent, and shows and exports them live", async () => {
    const all = await list();
    expect(all.map((r) => r.id).sort()).toEqual(AGENTS.map((a) => made[a].id).sort()); // nothing else taken for a pi session
    for (const agent of AGENTS) {
      const row = all.find((r) => r.id === made[agent].id)!;
      expect(row, agent).toMatchObject({ agent, deleted: false });
      expect(row.live?.startsWith(made[agent].dataDir), agent).toBe(true);
      expect(row.turns).toBeGreaterThanOrEqual(1);
      expect(row.toolCalls).toBeGreaterThanOrEqual(1);
      expect(row.tokens).toBeGreaterThan(0);
      expect((await list(["--agent", agent])).map((r) => r.id)).toEqual([made[agent].id]);
      const shown = (await runOk(sb, ["sessions", "show", made[agent].id])).stdout;
      expect(shown).toContain(made[agent].answer);
      await exportsShow(agent, "live");
    }
    const human = (await runOk(sb, ["sessions", "list"], { COLUMNS: "200" })).stdout;
    expect(human).toMatch(/^ID\s+NAME\s+PROJECT\s+AGENT\s/m);
    expect(human).toMatch(/\sclaude\s/);
    expect(expectOneLineError(await run(sb, ["sessions", "list", "--agent", "clippy"]), 2)).toMatch(/unknown agent "clippy": known agents are pi, claude/);
  });

  it("finds them by text with --agent, rebuilding an index of the schema before the agent column, and counts them in stats per agent", async () => {
    // A search index as the previous version wrote it: schema 5, docs without an agent.
    const indexFile = path.join(sb.dataHome, "pi-guard", "search", "index.sqlite");
    mkdirSync(path.dirname(indexFile), { recursive: true });
    const old = new Database(indexFile);
    old.exec("CREATE TABLE info (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO info VALUES ('schema', '5'); CREATE TABLE docs (session_id TEXT PRIMARY KEY, version_key TEXT NOT NULL, indexed_bytes INTEGER NOT NULL, edge_hash TEXT NOT NULL);");
    old.close();
    const found = (await runOk(sb, ["--json", "sessions", "search", "heron", "--agent", "claude"])).json<{ results: { session: { id: string; agent: string } }[] }>();
    expect(found.results.map((r) => r.session)).toEqual([expect.objectContaining({ id: made.claude.id, agent: "claude" })]);
    expect((await runOk(sb, ["--json", "sessions", "search", "heron", "--agent", "codex"])).json<{ results: unknown[] }>().results).toEqual([]);
    const index = new Database(indexFile, { readonly: true });
    try {
      expect(index.prepare("SELECT value FROM info WHERE key = 'schema'").get()).toEqual({ value: "7" });
      const agents = Object.fromEntries((index.prepare("SELECT session_id, agent FROM docs").all() as { session_id: string; agent: string }[]).map((r) => [r.session_id, r.agent]));
      expect(agents).toEqual(Object.fromEntries(AGENTS.map((a) => [made[a].id, a])));
    } finally {
      index.close();
    }
    const stats = (await runOk(sb, ["--json", "stats", "--agent", "codex"])).json<{ totals: { sessions: number; tokens: number }; sessions: { id: string; agent: string }[] }>();
    expect(stats.sessions.map((r) => [r.id, r.agent])).toEqual([[made.codex.id, "codex"]]);
    expect(stats.totals.tokens).toBeGreaterThan(0);
  });

  it("lists, shows and exports them from a snapshot once their data dirs are wiped", async () => {
    await snapshot(sb);
    for (const agent of AGENTS) rmSync(made[agent].dataDir, { recursive: true });
    expect(AGENTS.some((a) => existsSync(made[a].dataDir))).toBe(false);
    for (const agent of AGENTS) {
      const row = (await list(["--agent", agent]))[0];
      expect(row, agent).toMatchObject({ id: made[agent].id, agent, deleted: true, live: null });
      expect((await list(["--agent", agent, "--deleted"])).map((r) => r.id)).toEqual([made[agent].id]);
      const shown = (await runOk(sb, ["sessions", "show", made[agent].id])).stdout;
      expect(shown).toContain(made[agent].answer);
      await exportsShow(agent, "snapshot");
      const md = await runOk(sb, ["export", made[agent].id, "--output", path.join(sb.root, `${agent}.md`), "--json"]);
      expect(md.json<{ source: string }>().source).toMatch(new RegExp(`^snapshot [0-9a-f]{8} ${agent} `));
    }
    expect(readFileSync(path.join(sb.root, "claude.md"), "utf8")).toContain(made.claude.answer);
  });
});
