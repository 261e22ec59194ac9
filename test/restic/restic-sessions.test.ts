// The sessions commands on a restic repository go through the engine's catalog, as on a native
// one: a real Claude Code session beside a pi session, snapshotted into restic by the built
// pi-guard, then deleted from disk, is listed with its agent, found by search, shown and exported
// from the snapshot (restic dump, read by Claude Code's adapter). `restore --agent` and
// `status --agent` are test/restic/restic-agent.test.ts.
import { execFileSync } from "node:child_process";
import { renameSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claudeConfigDir, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { ok } from "../helpers/cli.js";
import { callTool, say } from "../helpers/fake-model/server.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";
import { PiGuard } from "../../src/library/guard.js";

const PASSWORD = "restic sessions password";
let sb: Sandbox;
let env: Record<string, string>;
let resticRepo: string;
let claudeId: string;
let transcript: string;
let snapshotId: string;

interface Listed {
  id: string;
  agent: string;
  deleted: boolean;
  lastSnapshot: { snapshotId: string } | null;
}

beforeAll(async () => {
  sb = makeSandbox("restic-sessions");
  resticRepo = path.join(sb.root, "restic-repo");
  writePiConfigFiles(sb.agentDir);
  await makePiSession({ agentDir: sb.agentDir, cwd: path.join(sb.root, "project"), turns: [{ user: "a pi question", assistant: [fauxText("a pi answer")] }] });
  const server = await startClaudeModel([callTool("Bash", { command: "echo restic-tool-ran", description: "echo" }), say("The echo printed restic-tool-ran.")]);
  const run = await runClaude(sb, server, "run the echo please").finally(() => server.close());
  claudeId = run.sessionId;
  transcript = run.transcript;
  env = { ...sb.env, PI_GUARD_REPO: `restic:${resticRepo}`, PI_GUARD_PASSWORD: PASSWORD, CLAUDE_CONFIG_DIR: claudeConfigDir(sb) };
  await ok(env, ["init"]);
  snapshotId = (await ok(env, ["snapshot", "--json"])).json<{ snapshotId: string }>().snapshotId;
  // Gone from disk: only the restic snapshot holds the transcript now.
  renameSync(transcript, path.join(sb.root, "transcript-away"));
}, 240_000);

afterAll(() => sb?.cleanup());

describe("restic engine: every agent's sessions", () => {
  it("the snapshot records each root's agent in restic tags", () => {
    const out = execFileSync("restic", ["snapshots", "--json"], { env: { PATH: process.env.PATH!, HOME: sb.home, RESTIC_REPOSITORY: resticRepo, RESTIC_PASSWORD: PASSWORD }, encoding: "utf8" });
    const tags = (JSON.parse(out) as { tags: string[] }[])[0].tags;
    expect(tags).toEqual(expect.arrayContaining(["pi-guard-agent:agent:pi", "pi-guard-agent:claude:claude"]));
  });

  it("sessions list --agent claude lists the deleted transcript from the restic snapshot, with the agent column", async () => {
    const listed = (await ok(env, ["sessions", "list", "--agent", "claude", "--json"])).json<Listed[]>();
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ id: claudeId, agent: "claude", deleted: true, lastSnapshot: { snapshotId } });
    const all = (await ok(env, ["sessions", "list", "--json"])).json<Listed[]>();
    expect(all.map((s) => s.agent).sort()).toEqual(["claude", "pi"]);
    const text = (await ok(env, ["sessions", "list"])).stdout;
    expect(text).toMatch(/AGENT/);
    expect(text).toMatch(/claude .*DELETED, in 1 snapshot/);
  });

  it("sessions search finds the tool output in it; show and export read it back with restic dump", async () => {
    const found = (await ok(env, ["sessions", "search", "restic-tool-ran", "--json"])).json<{ results: { session: { id: string } }[] }>();
    expect(found.results.map((r) => r.session.id)).toContain(claudeId);
    const shown = (await ok(env, ["sessions", "show", claudeId, "--json"])).json<{ source: string; path: unknown[] }>();
    expect(shown.source).toMatch(new RegExp(`^restic snapshot ${snapshotId.slice(0, 8)} claude `));
    expect(shown.path.length).toBeGreaterThan(0);
    const md = await ok(env, ["export", claudeId]);
    expect(md.stdout).toContain("run the echo please");
    expect(md.stdout).toContain("restic-tool-ran");
  });

  it("the library finds and exports it too: PiGuard over a restic repository uses the same engine catalog", async () => {
    const guard = await PiGuard.open({ env });
    try {
      expect(guard.engine.kind).toBe("restic");
      const found = await guard.find({ agent: "claude" });
      expect(found.map((x) => x.record.id)).toEqual([claudeId]);
      const md = await found[0].export("markdown");
      expect(md).toContain("restic-tool-ran");
    } finally {
      await guard.close();
    }
  });

});
