// The README's incident, with the real pi 1.6.0 (RPC mode, Node 22, faux provider): pi writes a
// real session, pi-guard snapshots the agent dir, sessions/, auth.json and models.json are
// deleted as the reifying npm install deleted them, the next snapshot is a suspected loss, the
// restore brings every byte back, and pi itself resumes the session and answers in it.
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli, initRepo, ok, snapshot } from "../helpers/cli.js";
import { makeSandbox, sha256File, treeState, fingerprint, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";
import { startRpcPi, stopPi, type RpcPi } from "../extension/pi-rpc.js";

const sandboxes: Sandbox[] = [];
const pis: RpcPi[] = [];
afterEach(async () => {
  for (const p of pis.splice(0)) await stopPi(p, "SIGKILL");
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

const sessionFiles = (sb: Sandbox): string[] =>
  existsSync(sb.sessionsDir)
    ? readdirSync(sb.sessionsDir, { recursive: true, encoding: "utf8" })
        .filter((f) => f.endsWith(".jsonl"))
        .map((f) => path.join(sb.sessionsDir, f))
    : [];

function pi(sb: Sandbox, replies: string[], args: string[] = []): RpcPi {
  const p = startRpcPi({ sb, env: sb.env, cwd: path.join(sb.home, "proj"), replies, withExtension: false, args });
  pis.push(p);
  return p;
}

const assistantTexts = (messages: any[]): string[] =>
  messages.filter((m) => m.role === "assistant").map((m) => (m.content as any[]).filter((b) => b.type === "text").map((b) => b.text).join(""));

describe("the incident: pi's agent dir wiped, restored, resumed by pi 1.6.0", () => {
  it("a real session, a snapshot, the wipe flagged as a suspected loss, a byte-identical restore, and pi continues the session", async () => {
    const sb = makeSandbox("pi-incident");
    sandboxes.push(sb);
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);

    const first = pi(sb, ["The answer is 42."]);
    first.prompt("What is the answer?");
    await first.waitEvent("agent_settled", (e) => e.type === "agent_settled");
    await stopPi(first);
    const [session] = sessionFiles(sb);
    expect(session).toBeDefined();
    expect(readFileSync(session, "utf8")).toContain("The answer is 42.");
    await snapshot(sb, ["--quiet"]);
    const before = fingerprint(treeState(sb.agentDir));
    const sessionHash = sha256File(session);

    // What the reifying `npm install --prefix` left: nothing of pi's own files.
    rmSync(sb.sessionsDir, { recursive: true, force: true });
    for (const f of ["auth.json", "models.json"]) rmSync(path.join(sb.agentDir, f), { force: true });
    const flagged = await cli(sb, ["snapshot"]);
    expect(flagged.code, flagged.stderr).toBe(1);
    expect(flagged.stderr).toMatch(/SUSPECTED LOSS/);

    // "latest" is the last whole state, not the suspected loss.
    await ok(sb, ["restore", "latest"]);
    expect(sha256File(session)).toBe(sessionHash);
    const after = fingerprint(treeState(sb.agentDir));
    for (const [file, state] of Object.entries(before)) expect(after[file], file).toEqual(state);

    // pi itself opens the restored session, sees the old answer, and goes on in it.
    const resumed = pi(sb, ["Still 42."], ["--session", session]);
    resumed.send({ type: "get_messages" });
    const got = await resumed.waitEvent("get_messages", (e) => e.type === "response" && e.command === "get_messages");
    expect(got.event.success).toBe(true);
    expect(assistantTexts(got.event.data.messages as any[])).toContain("The answer is 42.");
    resumed.prompt("And now?");
    await resumed.waitEvent("agent_settled", (e) => e.type === "agent_settled");
    await stopPi(resumed);
    const text = readFileSync(session, "utf8");
    expect(text).toContain("The answer is 42.");
    expect(text).toContain("Still 42.");
  }, 180_000);
});
