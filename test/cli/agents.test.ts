// Detection and defaults (issue 19 item 6) with two real agents: a pi session made by pi's own
// agent loop, and a Claude Code session made by the real `claude` against the fake model server.
// `pi-guard agents` lists both, snapshots guard both and record each root's agent, the config's
// `agents` switches one off, and restore/status/doctor take --agent.

import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { openRepository } from "../../src/engine.js";
import { SnapshotReader } from "../../src/restore/snapshot-reader.js";
import { claudeConfigDir, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { cli, expectOneLineError, initRepo, ok, snapshot } from "../helpers/cli.js";
import { callTool, say } from "../helpers/fake-model/server.js";
import { makePiSession } from "../helpers/pi-factory.js";
import { fingerprint, makeSandbox, treeState, type Sandbox } from "../helpers/tmp.js";

interface AgentJson {
  name: string;
  dir: string;
  foundBy: string;
  via?: string;
  detected: boolean;
  guarded: boolean;
  why: string;
  roots: { name: string; path: string }[];
  bytes: number;
  files: number;
  sessions: number;
}

let sb: Sandbox;
let claudeSession: string;
let piSession: string;
const agents = async (env: Record<string, string> = {}) => (await ok(sb, ["agents", "--json"], { env })).json<AgentJson[]>();
const byName = (list: AgentJson[], name: string) => list.find((a) => a.name === name)!;
const writeConfig = (value: unknown) => {
  mkdirSync(path.join(sb.configHome, "pi-guard"), { recursive: true });
  writeFileSync(path.join(sb.configHome, "pi-guard", "config.json"), JSON.stringify(value));
};
const loadManifest = async (id: string) => (await openRepository(loadConfig({}, sb.env))).loadSnapshot(id);

beforeAll(async () => {
  sb = makeSandbox("agents");
  const pi = await makePiSession({ agentDir: sb.agentDir, cwd: path.join(sb.root, "work", "pi"), turns: [{ user: "hello pi", assistant: ["hello back"] }] });
  piSession = pi.sessionId;
  const server = await startClaudeModel([callTool("Bash", { command: "echo guarded", description: "say it" }), say("It printed guarded.")]);
  try {
    claudeSession = (await runClaude(sb, server, "run echo guarded")).sessionId;
  } finally {
    await server.close();
  }
  await initRepo(sb);
}, 240_000);
afterAll(() => sb?.cleanup());

describe("pi-guard agents", () => {
  it("lists pi and Claude Code: where, how each was found, size, sessions, guarded", async () => {
    const list = await agents();
    const pi = byName(list, "pi");
    expect(pi).toMatchObject({ dir: sb.agentDir, foundBy: "env", via: "PI_CODING_AGENT_DIR", detected: true, guarded: true, sessions: 1 });
    expect(pi.bytes).toBeGreaterThan(0);
    const claude = byName(list, "claude");
    expect(claude).toMatchObject({ dir: claudeConfigDir(sb), foundBy: "default", detected: true, guarded: true, why: "detected", sessions: 1 });
    expect(claude.bytes).toBeGreaterThan(0);
    // Claude Code's own variable moves it, and says so.
    const moved = (await agents({ CLAUDE_CONFIG_DIR: path.join(sb.root, "elsewhere") })).find((a) => a.name === "claude")!;
    expect(moved).toMatchObject({ dir: path.join(sb.root, "elsewhere"), foundBy: "env", via: "CLAUDE_CONFIG_DIR", detected: false, guarded: false, sessions: 0 });
    const text = (await ok(sb, ["agents"])).stdout;
    expect(text).toMatch(/^AGENT\s+GUARDED\s+SESSIONS\s+SIZE\s+WHERE\s+FOUND BY/m);
    expect(text).toMatch(new RegExp(`^claude\\s+yes\\s+1\\s+.*${claudeConfigDir(sb).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s+default`, "m"));
    expect((await ok(sb, ["agents", "--help"])).stdout).toContain("$ pi-guard agents --json");
    expect(expectOneLineError(await cli(sb, ["agents", "--agent", "nope"]), 2)).toContain('unknown agent "nope"');
  });

  it("a snapshot takes every detected agent and records which agent each root belongs to", async () => {
    const s = await snapshot(sb);
    const manifest = await loadManifest(s.snapshotId);
    expect(manifest.roots).toEqual([
      { name: "agent", path: sb.agentDir },
      { name: "claude", path: claudeConfigDir(sb) },
      { name: "pi-guard-meta", path: path.join(sb.dataHome, "pi-guard", "meta") },
    ]);
    expect(manifest.agents).toEqual({ agent: "pi", claude: "claude" });
    const reader = await SnapshotReader.open(await openRepository(loadConfig({}, sb.env)));
    const files: { root: string; path: string }[] = [];
    try {
      for await (const n of reader.files(manifest)) files.push(n);
    } finally {
      await reader.close();
    }
    expect(files.some((f) => f.root === "claude" && f.path.endsWith(`${claudeSession}.jsonl`))).toBe(true);
  });

  it("the config's agents decides: per-agent enabled, or a list", async () => {
    writeConfig({ agents: { claude: { enabled: false } } });
    try {
      expect(byName(await agents(), "claude")).toMatchObject({ detected: true, guarded: false, why: "agents.claude.enabled is false" });
      writeConfig({ agents: ["pi"] });
      expect(byName(await agents(), "claude")).toMatchObject({ guarded: false, why: "not listed in the config's agents" });
      // Claude Code's files leave the snapshots: the loss guard names that until it is accepted.
      const refused = await cli(sb, ["snapshot", "--json"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/SUSPECTED LOSS.*claude:/);
      const s = await snapshot(sb, ["--accept-loss"]);
      const manifest = await loadManifest(s.snapshotId);
      expect(manifest.roots.map((r) => r.name)).toEqual(["agent", "pi-guard-meta"]);
      expect(manifest.agents).toEqual({ agent: "pi" });
      writeConfig({ agents: ["pi", "cursor"] });
      expect(expectOneLineError(await cli(sb, ["agents"]), 2)).toMatch(/config file .*config\.json: agents/);
    } finally {
      rmSync(path.join(sb.configHome, "pi-guard", "config.json"), { force: true });
    }
  });

  it("restore --agent claude brings back Claude Code's data only; status and doctor take --agent", async () => {
    const whole = await snapshot(sb);
    const claudeBefore = fingerprint(treeState(claudeConfigDir(sb)));
    rmSync(claudeConfigDir(sb), { recursive: true, force: true });
    const piFile = path.join(sb.agentDir, "settings.json");
    writeFileSync(piFile, '{"theme":"light"}\n');
    const piBefore = readFileSync(piFile, "utf8");
    const r = (await ok(sb, ["restore", whole.snapshotId, "--agent", "claude", "--json"])).json<{ failed: unknown[]; files: { root: string }[] }>();
    expect(r.failed).toEqual([]);
    expect(new Set(r.files.map((f) => f.root))).toEqual(new Set(["claude"]));
    expect(fingerprint(treeState(claudeConfigDir(sb)))).toEqual(claudeBefore);
    // pi's file, changed since the snapshot, was not touched.
    expect(readFileSync(piFile, "utf8")).toBe(piBefore);
    expect(expectOneLineError(await cli(sb, ["restore", "latest", "--agent", "nope"]), 2)).toContain('unknown agent "nope"');

    const status = await cli(sb, ["status", "--agent", "claude", "--json"]);
    const agent = status.json<{ agent: { name: string; guarded: boolean; lastGoodSnapshot: { id: string; roots: string[] } } }>().agent;
    expect(agent).toMatchObject({ name: "claude", guarded: true, lastGoodSnapshot: { roots: ["claude"] } });

    const doctor = (await cli(sb, ["doctor", "--agent", "claude", "--json"])).json<{ checks: { name: string; status: string }[] }>();
    const names = doctor.checks.map((c) => c.name);
    expect(names).toContain("claude: cleanupPeriodDays");
    expect(names).toContain("claude dir");
    // pi's own checks are not among an other agent's.
    expect(names).not.toContain("agent dir");
    expect(names).not.toContain("npm project");
    expect(existsSync(path.join(sb.agentDir, "sessions"))).toBe(true);
    expect(piSession).toBeTruthy();
  });
});
