// `restore --session` for Gemini CLI, with the real CLI offline: a chat (with a shell tool call) is
// deleted after a snapshot and another begins; a prefix of the deleted chat's id brings back that
// chat alone, byte for byte, beside chats that stay untouched, and gemini --resume answers in it.

import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { geminiDataDir, runGemini, startGeminiModel } from "../helpers/agents/gemini.js";
import { cli, initRepo, ok, type RestoreJson, snapshot } from "../helpers/cli.js";
import { callTool, type FakeModelServer, say } from "../helpers/fake-model/server.js";
import { fingerprint, makeSandbox, type Sandbox, treeState } from "../helpers/tmp.js";

type Restored = RestoreJson & { checks: { agent: string; name: string; ok: boolean; message: string }[] };

/** The shortest prefix of `id`, from 8 characters, that none of `others` starts with. */
const uniquePrefix = (id: string, others: string[]): string => {
  for (let n = 8; n < id.length; n++) if (!others.some((o) => o.startsWith(id.slice(0, n)))) return id.slice(0, n);
  return id;
};

describe("restore --session with Gemini CLI chats (real gemini, offline)", () => {
  let sb: Sandbox | undefined;
  let server: FakeModelServer | undefined;
  afterAll(async () => {
    await server?.close();
    sb?.cleanup();
  });

  it("a prefix of A's id brings back A's chat byte for byte, touches nothing else, takes no pre-restore snapshot; gemini --resume answers in A", async () => {
    sb = makeSandbox("gemini-session");
    const dir = geminiDataDir(sb);
    server = await startGeminiModel([callTool("run_shell_command", { command: "echo tool-said-hello", description: "Print a greeting" }), say("The tool printed it.")]);
    const a = await runGemini(sb, server, "please run echo");
    server.setScript([say("B here.")]);
    const b = await runGemini(sb, server, "hello B");
    const chatOf = (id: string) => Object.keys(fingerprint(treeState(dir))).find((p) => /^tmp\/[^/]+\/chats\/session-.*\.jsonl$/.test(p) && readFileSync(path.join(dir, p), "utf8").includes(id));
    const chatA = chatOf(a.sessionId)!;
    expect(chatA).toBeDefined();
    expect(chatOf(b.sessionId)).not.toBe(chatA);
    const bytesA = readFileSync(path.join(dir, chatA));

    await initRepo(sb);
    const s1 = await snapshot(sb);
    rmSync(path.join(dir, chatA));
    server.setScript([say("C here.")]);
    const c = await runGemini(sb, server, "hello C");
    const untouched = fingerprint(treeState(dir));
    const count = async () => (await ok(sb!, ["snapshots", "--json"])).json<unknown[]>().length;
    const before = await count();

    const prefix = uniquePrefix(a.sessionId, [b.sessionId, c.sessionId]);
    const r = (await ok(sb, ["restore", "latest", "--session", prefix, "--json"])).json<Restored>();
    expect(r.snapshotId).toBe(s1.snapshotId);
    expect(r.failed).toEqual([]);
    expect(r.files.map((f) => `${f.action} ${f.path}`)).toEqual([`create ${chatA}`]);
    expect(readFileSync(path.join(dir, chatA)).equals(bytesA)).toBe(true);
    expect(fingerprint(treeState(dir), (p) => p !== chatA)).toEqual(untouched);
    expect(r.undoSnapshot).toBeNull();
    expect(await count()).toBe(before);
    expect(r.checks).toEqual([expect.objectContaining({ agent: "gemini", ok: true, message: expect.stringContaining(a.sessionId) })]);
    // The text output says the checks passed.
    expect((await cli(sb, ["restore", "latest", "--session", prefix, "--dry-run"])).stdout).toMatch(/^checks: 1 passed/m);

    server.setScript([say("Back in A, same chat.")]);
    const resumed = await runGemini(sb, server, "are you still there?", { resume: a.sessionId });
    expect(resumed.sessionId).toBe(a.sessionId);
    expect(resumed.text).toContain("Back in A, same chat.");
    const history = JSON.stringify((server.turnRequests.at(-1)!.json as { contents: unknown[] }).contents);
    expect(history).toContain("please run echo");
    expect(history).toContain("tool-said-hello");
  }, 300_000);
});
