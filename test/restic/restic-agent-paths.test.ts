// Every other `--agent` path, on a restic repository and a native one side by side: the same pi
// session (pi's real agent loop) and the same real Claude Code session, snapshotted by the built
// pi-guard into both; then Claude's transcript is gone from disk, so only the snapshots hold it.
// sessions list/search, stats and doctor with `--agent` must say the same on both engines (what
// names a snapshot or a repository aside).
import { renameSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claudeConfigDir, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { cli, ok } from "../helpers/cli.js";
import { callTool, say } from "../helpers/fake-model/server.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

const PASSWORD = "restic agent paths password";
let sb: Sandbox;
let native: Record<string, string>;
let restic: Record<string, string>;
let claudeId: string;
const ids: string[] = [];

/** What names a snapshot (ids, times) or a repository differs between the engines by nature. */
const neutral = (v: unknown): unknown =>
  JSON.parse(
    JSON.stringify(v)
      .replaceAll(`restic:${path.join(sb.root, "restic-repo")}`, "<repo>")
      .replaceAll(sb.repo, "<repo>")
      .replaceAll(path.join(sb.root, "xdg-data-restic"), sb.dataHome)
      .replace(/\b[0-9a-f]{64}\b/g, "<id>")
      .replace(/\b[0-9a-f]{8}\b/g, "<id>")
      .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<time>"),
  );

/** `pi-guard args --json` on both engines: [native, restic], each exit code with its output. */
async function both(args: string[]): Promise<{ code: number | null; json: unknown }[]> {
  return Promise.all(
    [native, restic].map(async (env) => {
      const r = await cli(env, [...args, "--json"]);
      return { code: r.code, json: r.json() };
    }),
  );
}

beforeAll(async () => {
  sb = makeSandbox("restic-agent-paths");
  writePiConfigFiles(sb.agentDir);
  await makePiSession({ agentDir: sb.agentDir, cwd: path.join(sb.root, "project"), turns: [{ user: "a pi question about paths", assistant: [fauxText("a pi answer")] }] });
  const server = await startClaudeModel([callTool("Bash", { command: "echo paths-tool-ran", description: "echo" }), say("The echo printed paths-tool-ran.")]);
  const run = await runClaude(sb, server, "run the echo please").finally(() => server.close());
  claudeId = run.sessionId;
  native = { ...sb.env, CLAUDE_CONFIG_DIR: claudeConfigDir(sb) };
  // A data dir of its own: the search index there ranks by every session it holds (BM25).
  restic = { ...native, PI_GUARD_REPO: `restic:${path.join(sb.root, "restic-repo")}`, PI_GUARD_PASSWORD: PASSWORD, XDG_DATA_HOME: path.join(sb.root, "xdg-data-restic") };
  for (const env of [native, restic]) {
    await ok(env, ["init"]);
    ids.push((await ok(env, ["snapshot", "--json"])).json<{ snapshotId: string }>().snapshotId);
  }
  renameSync(run.transcript, path.join(sb.root, "transcript-away"));
}, 240_000);

afterAll(() => sb?.cleanup());

describe("every --agent path says the same on restic as on native", () => {
  it("sessions list --agent: claude's deleted session from the snapshot, pi's live one", async () => {
    for (const agent of ["claude", "pi"]) {
      const [n, r] = await both(["sessions", "list", "--agent", agent]);
      expect(r.code).toBe(0);
      expect(neutral(r)).toEqual(neutral(n));
    }
    const [, r] = await both(["sessions", "list", "--agent", "claude"]);
    expect(r.json).toMatchObject([{ id: claudeId, agent: "claude", deleted: true }]);
  });

  it("sessions search --agent finds the tool output in Claude's snapshot copy only with --agent claude", async () => {
    const [n, r] = await both(["sessions", "search", "paths-tool-ran", "--agent", "claude"]);
    expect(r.code).toBe(0);
    const hits = (x: unknown) => (x as { results: { session: unknown; [k: string]: unknown }[] }).results;
    expect(hits(r.json).length).toBeGreaterThan(0);
    expect(neutral(hits(r.json))).toEqual(neutral(hits(n.json)));
    const [, none] = await both(["sessions", "search", "paths-tool-ran", "--agent", "pi"]);
    expect(hits(none.json)).toEqual([]);
  });

  it("stats --agent", async () => {
    for (const agent of ["claude", "pi"]) {
      const [n, r] = await both(["stats", "--agent", agent]);
      expect(r.code).toBe(0);
      expect(neutral(r)).toEqual(neutral(n));
    }
  });

  it("doctor --agent: the same checks with the same verdicts", async () => {
    // How each repository is opened is each engine's own (a key file and its copies; a restic password).
    const repositoryChecks = new Set(["credentials", "credential copy", "last snapshot"]);
    for (const agent of ["claude", "pi"]) {
      const [n, r] = await both(["doctor", "--agent", agent]);
      const verdicts = (x: { code: number | null; json: unknown }) => ({
        code: x.code,
        checks: (x.json as { checks: { name: string; status: string; message: string }[] }).checks.filter((c) => !repositoryChecks.has(c.name)).map((c) => [c.name, c.status, c.message]),
      });
      expect(neutral(verdicts(r))).toEqual(neutral(verdicts(n)));
    }
  });
});
