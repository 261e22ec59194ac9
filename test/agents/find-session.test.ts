// The session resolver `restore --session` uses, over a FileReader of files in memory (the same
// reader kind the restic engine builds): the agents' own readers name the sessions; a whole id
// wins over longer ids it prefixes; case does not matter; a prefix several agents share is an
// error naming each with its agent; an id read from a hostile file reaches no terminal raw.

import { describe, expect, it } from "vitest";
import { listedFiles } from "../../src/agents/files.js";
import { resolveSession } from "../../src/agents/find-session.js";
import { findAgent } from "../../src/agents/registry.js";
import type { AgentAdapter, FileInfo } from "../../src/agents/types.js";

const pi = findAgent("pi")!;
const claude = findAgent("claude")!;

function reader(files: Record<string, string>) {
  const infos: FileInfo[] = Object.entries(files).map(([key, text]) => {
    const [root, p] = key.split(":");
    return { root, path: p, size: Buffer.byteLength(text), mtimeMs: 0 };
  });
  return listedFiles("memory", [...new Set(infos.map((i) => i.root))], infos, async function* (ref) {
    yield Buffer.from(files[`${ref.root}:${ref.path}`]);
  });
}

const piFile = (id: string) => ({ [`agent:sessions/--p--/2026-01-02T03-04-05-000Z_${id}.jsonl`]: `{"type":"session","version":3,"id":"${id}","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/p"}\n` });
const claudeFile = (id: string) => ({ [`claude:projects/-p/${id}.jsonl`]: `{"type":"user","sessionId":"${id}","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"hi"},"timestamp":"2026-01-02T03:04:05.000Z","cwd":"/p"}\n` });
const agents: AgentAdapter[] = [pi, claude];

describe("resolveSession", () => {
  const files = reader({ ...piFile("abcd0001-aaaa"), ...piFile("abcd0001-aaaa-2"), ...claudeFile("abcd0002-bbbb"), ...claudeFile("ffff0003-cccc") });

  it("finds a session by a unique prefix, in any case, with its agent and files", async () => {
    const found = await resolveSession(files, "FFFF", agents);
    expect(found?.adapter.name).toBe("claude");
    expect(found?.meta.files).toEqual([{ root: "claude", path: "projects/-p/ffff0003-cccc.jsonl" }]);
  });

  it("a whole id wins over a longer id it is a prefix of", async () => {
    expect((await resolveSession(files, "abcd0001-aaaa", agents))?.meta.id).toBe("abcd0001-aaaa");
  });

  it("a prefix sessions of two agents share is ambiguous, naming each with its agent and --agent; one agent narrows it", async () => {
    await expect(resolveSession(files, "abcd", agents)).rejects.toThrow(
      'session id "abcd" is ambiguous: 3 sessions match (claude abcd0002-bbbb, pi abcd0001-aaaa, pi abcd0001-aaaa-2); type more characters, or name the agent with --agent (claude, pi)',
    );
    expect((await resolveSession(files, "abcd", [claude]))?.meta.id).toBe("abcd0002-bbbb");
  });

  it("an id nothing holds is undefined; an id with control characters is shown without them", async () => {
    expect(await resolveSession(files, "9999", agents)).toBeUndefined();
    const hostile = reader({ ...piFile("zz\\u001b[2Jone"), ...piFile("zz\\u001b[2Jtwo") });
    const err = await resolveSession(hostile, "zz", [pi]).catch((e: Error) => e);
    expect((err as Error).message).toContain("zz?[2Jone");
    expect((err as Error).message).not.toContain("\u001b");
  });
});
