// `restore --session` and `--path` for Claude Code, with the real CLI offline: one session is
// restored by a prefix of its id, with its own folder (a large tool result Claude Code keeps in
// <uuid>/tool-results/), byte for byte, beside sessions that stay untouched, and claude --resume
// answers in it. Then what an id says across agents (pi and Claude Code share a prefix here), an
// id only another snapshot holds, a --path that brings the transcript's folder along, and a
// check that fails (a transcript whose lines name another session) making the exit non-zero.

import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claudeConfigDir, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { cli, expectOneLineError, initRepo, ok, type RestoreJson, restoreJson, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { fingerprint, listFiles, makeSandbox, type Sandbox, treeState } from "../helpers/tmp.js";

type Restored = RestoreJson & { checks: { agent: string; name: string; ok: boolean; message: string }[] };

const A = "aaaa1111-0000-4000-8000-00000000000a";
const B = "bbbb2222-0000-4000-8000-00000000000b";
const C = "cccc3333-0000-4000-8000-00000000000c";
/** A pi session whose id starts as A's does. */
const PI = "aaaa9999-0000-4000-8000-000000000099";

describe("restore --session with Claude Code sessions (real claude, offline)", () => {
  let sb: Sandbox;
  let server: FakeModelServer;
  let dir: string;
  let transcriptA: string;
  let folderA: string;
  let s1: SnapshotJson;
  /** A's transcript and folder, as the snapshot holds them. */
  let aBefore: Record<string, string>;
  /** A's files as the later snapshot s2 holds them (its transcript grew by the resume). */
  let aLater: Record<string, string>;
  const count = async () => (await ok(sb, ["snapshots", "--json"])).json<unknown[]>().length;
  const others = () => fingerprint(treeState(dir), (rel) => !rel.includes(A));
  const ofA = () => fingerprint(treeState(dir), (rel) => rel.includes(A));

  beforeAll(async () => {
    sb = makeSandbox("claude-session");
    dir = claudeConfigDir(sb);
    mkdirSync(path.join(sb.agentDir, "sessions/--proj--"), { recursive: true });
    writeFileSync(path.join(sb.agentDir, `sessions/--proj--/2026-01-02T03-04-05-000Z_${PI}.jsonl`), `{"type":"session","version":3,"id":"${PI}","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/proj"}\n`);
    // A's tool prints more than Claude Code keeps inline: it lands in A's folder, <uuid>/tool-results/.
    server = await startClaudeModel([callTool("Bash", { command: "seq 1 60000", description: "count" }), say("A counted to 60000.")]);
    const a = await runClaude(sb, server, "count please", { sessionId: A, allowedTools: "Bash(seq:*)" });
    transcriptA = a.transcript;
    folderA = transcriptA.slice(0, -".jsonl".length);
    expect(listFiles(folderA).some((f) => f.includes("/tool-results/"))).toBe(true);
    server.setScript([say("B here.")]);
    await runClaude(sb, server, "hello B", { sessionId: B });
    await initRepo(sb);
    s1 = await snapshot(sb);
    aBefore = ofA();
    expect(Object.keys(aBefore).length).toBe(2);

    rmSync(transcriptA);
    rmSync(folderA, { recursive: true });
    server.setScript([say("C here.")]);
    await runClaude(sb, server, "hello C", { sessionId: C });
  }, 300_000);
  afterAll(async () => {
    await server?.close();
    sb?.cleanup();
  });

  it("a prefix of A's id brings back A's transcript and folder byte for byte, touches nothing else, takes no pre-restore snapshot; claude --resume answers in A", async () => {
    const untouched = others();
    const before = await count();
    const r = (await ok(sb, ["restore", "latest", "--session", "aaaa1111", "--json"])).json<Restored>();
    expect(r.snapshotId).toBe(s1.snapshotId);
    expect(r.failed).toEqual([]);
    expect({ create: r.create, replace: r.replace, delete: r.delete }).toEqual({ create: 2, replace: 0, delete: 0 });
    expect(r.files.map((f) => f.path).sort()).toEqual(Object.keys(aBefore).map((p) => p).sort());
    expect(ofA()).toEqual(aBefore);
    expect(others()).toEqual(untouched);
    // It only created files: nothing was saved first, and no snapshot was taken.
    expect(r.undoSnapshot).toBeNull();
    expect(await count()).toBe(before);
    expect(r.checks).toEqual([expect.objectContaining({ agent: "claude", ok: true, message: expect.stringContaining(`session ${A}`) })]);

    server.setScript([say("Back in A: it counted to 60000.")]);
    const resumed = await runClaude(sb, server, "what did you count to?", { resume: A });
    expect(resumed.sessionId).toBe(A);
    expect(resumed.result).toBe("Back in A: it counted to 60000.");
    expect(server.turnRequests.at(-1)!.body).toContain("A counted to 60000.");
  });

  it("a prefix pi and Claude Code share is ambiguous across agents (exit 2, naming both and --agent); --agent narrows it", async () => {
    const line = expectOneLineError(await cli(sb, ["restore", "latest", "--session", "aaaa"]), 2);
    expect(line).toMatch(/session id "aaaa" is ambiguous: 2 sessions match/);
    expect(line).toContain(`claude ${A}`);
    expect(line).toContain(`pi ${PI}`);
    expect(line).toMatch(/--agent/);
    // The resume above grew A's transcript: the snapshot's copy would replace it.
    const claude = await restoreJson(sb, ["latest", "--session", "aaaa", "--agent", "claude", "--dry-run"]);
    expect({ replace: claude.replace, unchanged: claude.unchanged }).toEqual({ replace: 1, unchanged: 1 });
    const pi = await restoreJson(sb, ["latest", "--session", "aaaa", "--agent", "pi", "--dry-run"]);
    expect(pi.unchanged).toBe(1);
  });

  it("an id no snapshot holds is not found; one only a later snapshot holds names it and the command", async () => {
    expect(expectOneLineError(await cli(sb, ["restore", "latest", "--session", "ffff"]), 1)).toMatch(/no snapshot holds a session whose id starts with "ffff"/);
    const s2 = await snapshot(sb);
    aLater = ofA();
    const line = expectOneLineError(await cli(sb, ["restore", s1.snapshotId.slice(0, 8), "--session", "cccc"]), 1);
    expect(line).toContain(`does not hold session ${C}; the last snapshot that does is ${s2.snapshotId.slice(0, 8)}`);
    const command = /: pi-guard (restore .*)$/.exec(line)?.[1];
    expect(command).toBe(`restore ${s2.snapshotId.slice(0, 8)} --session ${C}`);
    expect((await restoreJson(sb, command!.split(" ").slice(1))).unchanged).toBe(1);
  });

  it("--path naming A's transcript brings its folder from the same snapshot", async () => {
    rmSync(transcriptA);
    rmSync(folderA, { recursive: true });
    const rel = path.relative(dir, transcriptA);
    const r = (await ok(sb, ["restore", "latest", "--path", rel, "--json"])).json<Restored>();
    expect(r.failed).toEqual([]);
    expect(r.create).toBe(2);
    expect(ofA()).toEqual(aLater);
    expect(r.checks).toEqual([expect.objectContaining({ agent: "claude", ok: true })]);
  });

  it("a transcript whose lines name another session fails Claude Code's check: restored, named, exit 1", async () => {
    const D = "dddd4444-0000-4000-8000-00000000000d";
    const misnamed = path.join(path.dirname(transcriptA), `${D}.jsonl`);
    copyFileSync(path.join(path.dirname(transcriptA), `${B}.jsonl`), misnamed);
    await snapshot(sb);
    rmSync(misnamed);
    const r = await cli(sb, ["restore", "latest", "--session", D, "--json"]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(`check failed: claude: ${path.relative(dir, misnamed)}: session ${D}: its lines name session ${B}`);
    const out = r.json<Restored>();
    expect(out.checks).toEqual([expect.objectContaining({ agent: "claude", ok: false })]);
    expect(out.create).toBe(1);
    expect(existsSync(misnamed)).toBe(true);
    expect(readFileSync(misnamed, "utf8")).toContain(B);
  });
});
