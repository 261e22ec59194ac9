// Sessions of other agents in `sessions list/show/search/export/stats`: a real Claude Code 2.1.328
// and a real Codex CLI 0.169.0 session (their CLIs, offline, against the fake model server), each
// with a tool call, read through the agent registry's session readers into the common model.
// Listed with `--agent`, shown, searched, exported to Markdown, JSON and HTML (the page in
// Chromium), first live, then only from a snapshot after the files are gone.

import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import Database from "better-sqlite3";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { runCodex, startCodexModel } from "../helpers/agents/codex.js";
import { launchChromium, openFile } from "../helpers/browser.js";
import { expectOneLineError, initRepo, snapshot } from "../helpers/cli.js";
import { callTool, say } from "../helpers/fake-model/server.js";
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

let sb: Sandbox;
let browser: Browser;
const made: Record<"claude" | "codex", { id: string; file: string; tool: string; answer: string }> = {} as never;

beforeAll(async () => {
  sb = makeSandbox("agent-sessions");
  const claudeModel = await startClaudeModel([callTool("Bash", { command: "echo heron-from-claude", description: "say heron" }), say("The echo printed heron-from-claude.")]);
  try {
    const r = await runClaude(sb, claudeModel, "please echo a heron");
    made.claude = { id: r.sessionId, file: r.transcript, tool: "echo heron-from-claude", answer: "The echo printed heron-from-claude." };
  } finally {
    await claudeModel.close();
  }
  const codexModel = await startCodexModel([callTool("exec_command", { cmd: "echo otter-from-codex" }), say("The echo printed otter-from-codex.")]);
  try {
    const r = await runCodex(sb, codexModel, "please echo an otter");
    made.codex = { id: r.sessionId, file: r.rollout, tool: "echo otter-from-codex", answer: "The echo printed otter-from-codex." };
  } finally {
    await codexModel.close();
  }
  await initRepo(sb);
  browser = await launchChromium();
}, 300_000);
afterAll(async () => {
  await browser?.close();
  sb?.cleanup();
});

const list = async (args: string[] = []) => (await runOk(sb, ["--json", "sessions", "list", ...args])).json<Listed[]>();

/** Export one session in every format and check each shows the prompt, the tool call and the answer; the HTML in Chromium. */
async function exportsShow(agent: "claude" | "codex", label: string) {
  const s = made[agent];
  const md = (await runOk(sb, ["export", s.id, "--format", "markdown"])).stdout;
  expect(md, `${agent} markdown`).toContain(s.answer);
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
  await page.context().close();
  expect(errors).toEqual([]);
  expect(requests).toEqual([]);
  expect(text, `${agent} html`).toContain(s.answer);
  expect(text).toContain(s.tool.split(" ")[1]);
}

describe("sessions of Claude Code and Codex", () => {
  it("lists each with its agent, filters by --agent, and shows and exports them live", async () => {
    const all = await list();
    expect(all.map((r) => r.id).sort()).toEqual([made.claude.id, made.codex.id].sort()); // nothing else taken for a pi session
    for (const agent of ["claude", "codex"] as const) {
      const row = all.find((r) => r.id === made[agent].id)!;
      expect(row, agent).toMatchObject({ agent, deleted: false, live: made[agent].file });
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
      expect(index.prepare("SELECT value FROM info WHERE key = 'schema'").get()).toEqual({ value: "6" });
      const agents = Object.fromEntries((index.prepare("SELECT session_id, agent FROM docs").all() as { session_id: string; agent: string }[]).map((r) => [r.session_id, r.agent]));
      expect(agents).toEqual({ [made.claude.id]: "claude", [made.codex.id]: "codex" });
    } finally {
      index.close();
    }
    const stats = (await runOk(sb, ["--json", "stats", "--agent", "codex"])).json<{ totals: { sessions: number; tokens: number }; sessions: { id: string; agent: string }[] }>();
    expect(stats.sessions.map((r) => [r.id, r.agent])).toEqual([[made.codex.id, "codex"]]);
    expect(stats.totals.tokens).toBeGreaterThan(0);
  });

  it("lists, shows and exports them from a snapshot once their files are gone", async () => {
    await snapshot(sb);
    rmSync(made.claude.file);
    rmSync(made.codex.file);
    expect(existsSync(made.claude.file) || existsSync(made.codex.file)).toBe(false);
    for (const agent of ["claude", "codex"] as const) {
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
