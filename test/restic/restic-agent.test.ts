// `restore --agent NAME` and `status --agent NAME` on a restic repository, against the native
// engine in the same sandbox: a pi session made by pi's real agent loop and a real Claude Code
// session, snapshotted by the built pi-guard into a restic repository and a native one. Restoring
// one agent brings back that agent's files byte for byte and nothing of the other's, in place
// (with a pre-restore snapshot when it replaces) and into --target; Claude Code resumes the
// restored session; and `status --agent claude` judges healthy and suspected loss as the native
// engine does.
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claudeConfigDir, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { cli, expectOneLineError, ok, type RestoreJson } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { fingerprint, listFiles, makeSandbox, type Sandbox, treeState, writePiConfigFiles } from "../helpers/tmp.js";

const PASSWORD = "restic agent password";
let sb: Sandbox;
let server: FakeModelServer;
let native: Record<string, string>;
let restic: Record<string, string>;
let resticRepo: string;
let claudeDir: string;
let claudeId: string;
let transcript: string;
let transcriptBytes: Buffer;
let piBefore: Record<string, string>;
let claudeBefore: Record<string, string>;
const whole: { native: string; restic: string } = { native: "", restic: "" };

const restore = async (env: Record<string, string>, args: string[]) => (await ok(env, ["restore", "--json", ...args])).json<RestoreJson>();
const claudeNow = () => fingerprint(treeState(claudeDir), (rel) => rel in claudeBefore);
const resticTags = (id: string): string[] => {
  const out = execFileSync("restic", ["snapshots", "--json"], { env: { PATH: process.env.PATH!, HOME: sb.home, RESTIC_REPOSITORY: resticRepo, RESTIC_PASSWORD: PASSWORD }, encoding: "utf8" });
  return (JSON.parse(out) as { id: string; tags: string[] }[]).find((s) => s.id === id)?.tags ?? [];
};

interface StatusJson {
  healthy: boolean;
  problems: string[];
  problemKinds: { kind: string; subject?: string }[];
  agent: { name: string; dir: string; detected: boolean; guarded: boolean; why: string; lastGoodSnapshot: { id: string; roots: string[] } | null; problems: string[] };
}

/** `status --agent claude` on both engines: their judgements, with each engine's own snapshot ids named. */
async function statusBoth(): Promise<{ code: number | null; json: StatusJson }[]> {
  return Promise.all([native, restic].map(async (env) => {
    const r = await cli(env, ["status", "--agent", "claude", "--json"]);
    return { code: r.code, json: r.json<StatusJson>() };
  }));
}

/** A status as a judgement: snapshot ids and times, which differ between the engines, left out. */
const judgement = (s: { code: number | null; json: StatusJson }, wholeId: string) => {
  const last = s.json.agent.lastGoodSnapshot;
  return {
    code: s.code,
    healthy: s.json.healthy,
    problems: s.json.problems.map((p) => p.replace(/\b[0-9a-f]{8}\b/g, "<id>").replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<time>")),
    kinds: s.json.problemKinds.map((k) => `${k.kind} ${k.subject ?? ""}`),
    agent: { ...s.json.agent, lastGoodSnapshot: last && { roots: last.roots, id: last.id === wholeId ? "the whole snapshot" : last.id } },
  };
};

beforeAll(async () => {
  sb = makeSandbox("restic-agent");
  resticRepo = path.join(sb.root, "restic-repo");
  claudeDir = claudeConfigDir(sb);
  writePiConfigFiles(sb.agentDir);
  await makePiSession({ agentDir: sb.agentDir, cwd: path.join(sb.root, "project"), turns: [{ user: "a pi question", assistant: [fauxText("a pi answer")] }] });
  server = await startClaudeModel([callTool("Bash", { command: "echo agent-restore-ran", description: "echo" }), say("The echo printed agent-restore-ran.")]);
  const run = await runClaude(sb, server, "run the echo please");
  claudeId = run.sessionId;
  transcript = run.transcript;
  transcriptBytes = readFileSync(transcript);
  native = { ...sb.env, CLAUDE_CONFIG_DIR: claudeDir };
  restic = { ...native, PI_GUARD_REPO: `restic:${resticRepo}`, PI_GUARD_PASSWORD: PASSWORD };
  await ok(native, ["init"]);
  await ok(restic, ["init"]);
  whole.native = (await ok(native, ["snapshot", "--json"])).json<{ snapshotId: string }>().snapshotId;
  whole.restic = (await ok(restic, ["snapshot", "--json"])).json<{ snapshotId: string }>().snapshotId;
  piBefore = fingerprint(treeState(sb.agentDir));
  claudeBefore = fingerprint(treeState(claudeDir));
}, 300_000);

afterAll(async () => {
  await server?.close();
  sb?.cleanup();
});

describe("restic engine: restore --agent and status --agent", () => {
  it("status --agent claude is healthy on both engines, with the same judgement", async () => {
    const [n, r] = await statusBoth();
    expect(r.code, JSON.stringify(r.json.problems)).toBe(0);
    expect(r.json.agent).toMatchObject({ name: "claude", guarded: true, lastGoodSnapshot: { id: whole.restic, roots: ["claude"] }, problems: [] });
    expect(judgement(r, whole.restic)).toEqual(judgement(n, whole.native));
  });

  it("with pi and Claude Code wiped, restore --agent claude brings back Claude's files only, and claude resumes the session", async () => {
    rmSync(claudeDir, { recursive: true, force: true });
    rmSync(sb.agentDir, { recursive: true, force: true });
    const r = await restore(restic, ["latest", "--agent", "claude"]);
    expect(r).toMatchObject({ snapshotId: whole.restic, failed: [], undoSnapshot: null });
    expect(new Set(r.files.map((f) => f.root))).toEqual(new Set(["claude"]));
    expect(fingerprint(treeState(claudeDir))).toEqual(claudeBefore);
    expect(listFiles(sb.agentDir)).toEqual([]);

    server.setScript([say("Resumed from restic: the echo printed agent-restore-ran.")]);
    const resumed = await runClaude(sb, server, "what did the echo print?", { resume: claudeId });
    expect(resumed.sessionId).toBe(claudeId);
    expect(resumed.result).toBe("Resumed from restic: the echo printed agent-restore-ran.");
    // Claude Code sent the restored history to the model: the tool's output is in the request.
    expect(server.turnRequests.at(-1)!.body).toContain("agent-restore-ran");
  }, 180_000);

  it("restore --agent pi brings back pi's files and leaves Claude's as they are now", async () => {
    const claudeResumed = fingerprint(treeState(claudeDir));
    const r = await restore(restic, [whole.restic, "--agent", "pi"]);
    expect(r.failed).toEqual([]);
    expect(new Set(r.files.map((f) => f.root))).toEqual(new Set(["agent"]));
    expect(fingerprint(treeState(sb.agentDir))).toEqual(piBefore);
    expect(fingerprint(treeState(claudeDir))).toEqual(claudeResumed);
  });

  it("in place over a changed transcript: a pre-restore snapshot first, then the transcript comes back; pi's changed file stays", async () => {
    // The resume appended to the transcript; a pi file changed since the snapshot too.
    const resumedBytes = readFileSync(transcript);
    expect(resumedBytes.equals(transcriptBytes)).toBe(false);
    const piFile = path.join(sb.agentDir, "settings.json");
    appendFileSync(piFile, "\n");
    const piChanged = readFileSync(piFile);
    const r = await restore(restic, [whole.restic, "--agent", "claude"]);
    expect(r.failed).toEqual([]);
    expect(r.files.find((f) => f.path.endsWith(`${claudeId}.jsonl`))).toMatchObject({ root: "claude", action: "replace" });
    expect(r.undoSnapshot).toMatch(/^[0-9a-f]{64}$/);
    expect(resticTags(r.undoSnapshot!)).toContain("pre-restore");
    expect(readFileSync(transcript).equals(transcriptBytes)).toBe(true);
    expect(claudeNow()).toEqual(claudeBefore);
    expect(readFileSync(piFile).equals(piChanged)).toBe(true);
    // The pre-restore snapshot holds what was replaced: the resumed transcript.
    const back = path.join(sb.root, "undo-out");
    await restore(restic, [r.undoSnapshot!, "--agent", "claude", "--target", back]);
    expect(readFileSync(path.join(back, ".claude", path.relative(claudeDir, transcript))).equals(resumedBytes)).toBe(true);
    writeFileSync(piFile, readFileSync(piFile).subarray(0, -1));
  });

  it("--target: Claude's root in .claude/, byte-identical, and nothing of pi's", async () => {
    const out = path.join(sb.root, "target-out");
    const r = await restore(restic, [whole.restic, "--agent", "claude", "--target", out]);
    expect(r).toMatchObject({ failed: [], undoSnapshot: null });
    expect(fingerprint(treeState(path.join(out, ".claude")))).toEqual(claudeBefore);
    expect(listFiles(out).filter((f) => !f.startsWith(path.join(out, ".claude") + path.sep))).toEqual([]);
    // One Claude session: --agent with --path, the glob relative to Claude's root.
    const one = path.join(sb.root, "target-one");
    const rel = path.relative(claudeDir, transcript);
    const r1 = await restore(restic, [whole.restic, "--agent", "claude", "--path", `projects/*/${claudeId}.jsonl`, "--target", one]);
    expect(r1.files.map((f) => f.path)).toEqual([rel]);
    expect(listFiles(one)).toEqual([path.join(one, ".claude", rel)]);
    expect(readFileSync(path.join(one, ".claude", rel)).equals(transcriptBytes)).toBe(true);
  });

  it("an agent the snapshot lacks and an unknown agent are one-line errors, as on a native repository, and change nothing", async () => {
    const before = readFileSync(transcript);
    const errors = [];
    for (const [env, id] of [[native, whole.native], [restic, whole.restic]] as const) {
      const line = expectOneLineError(await cli(env, ["restore", "latest", "--agent", "gemini"]), 1);
      expect(line).toContain(`snapshot ${id.slice(0, 8)} holds nothing of agent gemini`);
      errors.push(line.replace(id.slice(0, 8), "<id>"));
      expect(expectOneLineError(await cli(env, ["restore", "latest", "--agent", "nope"]), 2)).toContain('unknown agent "nope"');
      expect(expectOneLineError(await cli(env, ["status", "--agent", "nope"]), 2)).toContain('unknown agent "nope"');
    }
    expect(errors[1]).toBe(errors[0]);
    expect(readFileSync(transcript).equals(before)).toBe(true);
  });

  it("status --agent claude after Claude's transcripts vanished: a suspected loss on both engines, judged the same", async () => {
    for (const f of listFiles(path.join(claudeDir, "projects")).filter((x) => x.endsWith(".jsonl"))) unlinkSync(f);
    expect(existsSync(transcript)).toBe(false);
    for (const env of [native, restic]) {
      const taken = await cli(env, ["snapshot", "--json"]);
      expect(taken.code, taken.stderr).toBe(1);
      expect(taken.stderr).toMatch(/SUSPECTED LOSS/);
    }
    const [n, r] = await statusBoth();
    expect(r.code).toBe(1);
    expect(r.json.healthy).toBe(false);
    expect(r.json.problemKinds.map((k) => k.kind)).toContain("suspect-loss");
    // Claude's last good snapshot is the whole one, not the suspect-loss one.
    expect(r.json.agent.lastGoodSnapshot?.id).toBe(whole.restic);
    expect(judgement(r, whole.restic)).toEqual(judgement(n, whole.native));
  });

  it("a whole restore puts back a wiped ~/.claude as well, where Claude Code looks, as a native restore does", async () => {
    for (const [env, id] of [[native, whole.native], [restic, whole.restic]] as const) {
      rmSync(claudeDir, { recursive: true, force: true });
      const r = await restore(env, [id]);
      expect(r.failed).toEqual([]);
      expect(r.files.filter((f) => f.root === "claude").length).toBe(Object.keys(claudeBefore).length);
      expect(fingerprint(treeState(claudeDir))).toEqual(claudeBefore);
    }
  });

  it("Claude Code not guarded by the config: what a restore replaces in its folder is in the pre-restore snapshot too, on both engines", async () => {
    const configFile = path.join(sb.configHome, "pi-guard", "config.json");
    mkdirSync(path.dirname(configFile), { recursive: true });
    writeFileSync(configFile, JSON.stringify({ agents: ["pi"] }));
    try {
      for (const [env, id, name] of [[native, whole.native, "native"], [restic, whole.restic, "restic"]] as const) {
        appendFileSync(transcript, `${JSON.stringify({ type: "note", engine: name })}\n`);
        const changed = readFileSync(transcript);
        const r = await restore(env, [id, "--agent", "claude"]);
        expect(r.failed).toEqual([]);
        expect(r.undoSnapshot).toBeTruthy();
        expect(readFileSync(transcript).equals(transcriptBytes)).toBe(true);
        const back = path.join(sb.root, `undo-unguarded-${name}`);
        await restore(env, [r.undoSnapshot!, "--agent", "claude", "--target", back]);
        expect(readFileSync(path.join(back, ".claude", path.relative(claudeDir, transcript))).equals(changed)).toBe(true);
        // The native restore's journal: its undo puts the changed transcript back into the unguarded folder.
        if (env === native) {
          await ok(env, ["restore", "--undo", "latest", "--json"]);
          expect(readFileSync(transcript).equals(changed)).toBe(true);
          writeFileSync(transcript, transcriptBytes);
        }
      }
    } finally {
      rmSync(configFile);
    }
  });
});
