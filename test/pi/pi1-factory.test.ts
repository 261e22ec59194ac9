// The pi 1.6.0 test helpers (test/helpers/pi1.ts) make what they promise: sessions written by
// pi 1.6.0's real agent loop holding every 1.x entry kind, accepted by pi 1.6.0's own parser,
// read by pi-guard without loss, and backed up and restored byte for byte; a real `pi --mode json`
// log and pi's own HTML page through the faux extension.

import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSessionText } from "../../src/agents/pi/parse.js";
import { sessionDirName } from "../../src/agents/pi/writer.js";
import { initRepo, restoreJson, snapshot } from "../helpers/cli.js";
import { exportPi1Html, makePi1RichSession, type Pi1SessionResult, type Pi1Validation, runPi1Json, spawnPi1Json, validatePi1 } from "../helpers/pi1.js";
import { fingerprint, makeSandbox, type Sandbox, sessionFiles, treeState } from "../helpers/tmp.js";

type Entry = Pi1Validation["entries"][number];
const msg = (e: Entry) => e.message as { role: string; sections?: Record<string, string | null>; toolsAdded?: Array<{ name: string }>; toolsRemoved?: Array<{ name: string }>; content?: unknown };

describe("makePi1Session: pi 1.6.0's real agent loop with the faux model", () => {
  let sb: Sandbox;
  let cwd: string;
  let made: Pi1SessionResult;
  let text: string;
  let pi: Pi1Validation;

  beforeAll(async () => {
    sb = makeSandbox("pi1-factory");
    cwd = sb.dir("project");
    made = await makePi1RichSession(sb.agentDir, cwd);
    text = readFileSync(made.file, "utf8");
    pi = await validatePi1(text, { expectMessages: true });
  }, 120_000);

  afterAll(() => sb?.cleanup());

  it("puts the files where pi puts them, under the sandbox agent dir, named by the custom --session-id", () => {
    expect(path.dirname(made.file)).toBe(path.join(sb.agentDir, "sessions", sessionDirName(cwd)));
    expect(path.basename(made.file)).toMatch(/_ledger-july\.jsonl$/);
    expect(made.sessionId).toBe("ledger-july");
    expect(sessionFiles(sb.sessionsDir)).toEqual([made.file, made.fork!.file].sort());
    expect(existsSync(path.join(homedir(), ".pi", "agent", "sessions", sessionDirName(cwd)))).toBe(false);
  });

  it("holds every entry kind pi 1.x adds, written by pi", () => {
    const entries = pi.entries;
    const systems = entries.filter((e) => e.type === "message" && msg(e).role === "system").map(msg);
    expect(systems.length).toBeGreaterThanOrEqual(3);
    // The first request stores every section and the whole tool loadout.
    expect(Object.keys(systems[0].sections!)).toEqual(expect.arrayContaining(["preamble", "tools", "plan"]));
    expect(systems[0].toolsAdded!.map((t) => t.name)).toEqual(["read", "bash", "edit", "write"]);
    // A later patch: sections by name, the removed one as null, the removed tools listed.
    const patch = systems[1];
    expect(patch.sections!.plan).toBeNull();
    expect(patch.sections!.preamble).toBeUndefined();
    expect(patch.toolsRemoved!.map((t) => t.name)).toEqual(["edit", "write"]);

    const usage = entries.find((e) => e.type === "usage")!;
    expect(usage).toMatchObject({ kind: "cache_warm", provider: "pi1-faux", model: "faux-1" });
    expect((usage.usage as { totalTokens: number }).totalTokens).toBeGreaterThan(0);
    expect((usage.usage as { cost: { total: number } }).cost.total).toBeGreaterThan(0);

    const edit = entries.find((e) => e.type === "context_edit")!;
    expect(edit.targetId).toBe(made.turnMessageIds[0]);
    expect(JSON.stringify(edit.replacement)).toContain("It has two lines (edited).");

    const compaction = entries.find((e) => e.type === "compaction")!;
    expect(msg({ ...compaction, message: compaction.systemMessage } as Entry).role).toBe("system");
    expect((compaction.usage as { totalTokens: number }).totalTokens).toBeGreaterThan(0);

    const summary = entries.find((e) => e.type === "branch_summary")!;
    expect(summary.parentId).toBe(made.turnLeafIds[0]);
    expect((summary.usage as { totalTokens: number }).totalTokens).toBeGreaterThan(0);

    expect(entries.find((e) => e.type === "label")).toMatchObject({ targetId: made.turnMessageIds[0], label: "read-done" });
    expect(entries.find((e) => e.type === "session_info")).toMatchObject({ name: "Ledger for July" });
    expect(text).toContain('"type":"thinking"');
    expect(text).toContain('"thinkingLevel":"medium"');
    const results = entries.filter((e) => e.type === "message" && msg(e).role === "toolResult");
    expect(JSON.stringify(results)).toContain("line one");
    expect(JSON.stringify(results)).toMatch(/"text":"1\\n"/);
  });

  it("validates with pi 1.6.0: the leaf is the branch, whose context has the system prompt and the summary", () => {
    expect(pi.parsedLines).toBe(text.trimEnd().split("\n").length);
    expect(pi.leafId).toBe(made.turnLeafIds[3]);
    const roles = pi.context.messages.map((m) => m.role);
    expect(roles[0]).toBe("system");
    expect(roles).toContain("branchSummary");
    expect(JSON.stringify(pi.context.messages)).toContain("Alternative answer.");
    expect(JSON.stringify(pi.context.messages)).not.toContain("One file.");
    // pi's totals over the file are the ones the live session reported.
    expect(pi.stats.tokens).toEqual(made.stats.tokens);
    expect(pi.stats.cost).toBeCloseTo(made.stats.cost, 12);
  });

  it("forks like pi's /fork: parentSession set, the parent's ids kept, pi accepts it", async () => {
    const fork = made.fork!;
    const forkText = readFileSync(fork.file, "utf8");
    const v = await validatePi1(forkText, { expectMessages: true });
    expect(v.header.parentSession).toBe(made.file);
    const parentIds = new Set(pi.entries.map((e) => e.id));
    expect(v.entries.filter((e) => parentIds.has(e.id)).length).toBeGreaterThan(5);
    expect(JSON.stringify(v.context.messages)).toContain("Forked reply.");
  });

  it("pi-guard's parser reads every line and keeps pi's entry ids and unknown kinds", () => {
    const ours = readSessionText(text);
    expect(ours.issues).toEqual([]);
    expect(ours.entries.map((e) => e.id)).toEqual(pi.entries.map((e) => e.id));
    expect(ours.entries.map((e) => e.type)).toEqual(pi.entries.map((e) => e.type));
  });

  it("pi-guard's snapshot and restore of the pi 1.6.0 agent dir is byte-identical", async () => {
    await initRepo(sb);
    const snap = (await snapshot(sb)).snapshotId;
    const original = fingerprint(treeState(sb.agentDir));
    const target = path.join(sb.root, "restored");
    await restoreJson(sb, [snap, "--target", target]);
    expect(fingerprint(treeState(target))).toEqual(original);
    expect(Object.keys(original).filter((f) => f.endsWith(".jsonl")).length).toBe(2);
  });
});

describe("the faux extension drives the real pi 1.6.0 CLI offline", () => {
  let sb: Sandbox;
  afterAll(() => sb?.cleanup());

  it("pi --mode json writes a real event log and a session; pi --export writes pi's own page", async () => {
    sb = makeSandbox("pi1-cli");
    const cwd = sb.dir("project");
    const run = await runPi1Json({
      home: sb.home,
      agentDir: sb.agentDir,
      cwd,
      prompt: "say hello",
      args: ["--session-id", "cli-run"],
      replies: [[{ type: "thinking", thinking: "Let me run it." }, { type: "toolCall", name: "bash", arguments: { command: "echo hello" } }], "All done: hello."],
    });
    expect(run.sessionId).toBe("cli-run");
    const events = run.log.trimEnd().split("\n").map((l) => JSON.parse(l) as { type: string; message?: { role: string } });
    const types = new Set(events.map((e) => e.type));
    for (const t of ["agent_start", "turn_start", "message_start", "message_update", "message_end", "tool_execution_end", "turn_end", "agent_end"]) expect(types, t).toContain(t);
    const ended = events.filter((e) => e.type === "message_end").map((e) => e.message!.role);
    expect(ended).toEqual(["system", "user", "assistant", "toolResult", "assistant"]);

    const [file] = sessionFiles(sb.sessionsDir);
    expect(path.basename(file)).toMatch(/_cli-run\.jsonl$/);
    const v = await validatePi1(readFileSync(file, "utf8"), { expectMessages: true });
    expect(JSON.stringify(v.context.messages)).toContain("All done: hello.");

    const page = await exportPi1Html({ home: sb.home, agentDir: sb.agentDir, cwd, sessionFile: file, out: path.join(sb.root, "pi.html") });
    const html = readFileSync(page, "utf8");
    const data = /<script id="session-data" type="application\/json">([^<]+)<\/script>/.exec(html);
    expect(data).not.toBeNull();
    expect(Buffer.from(data![1], "base64").toString("utf8")).toContain("All done: hello.");
  }, 120_000);
});

describe("spawnPi1Json: a slow faux stream to kill mid-answer", () => {
  let sb: Sandbox;
  afterAll(() => sb?.cleanup());

  it("streams the answer in deltas and dies by kill -9 before pi persists it", async () => {
    sb = makeSandbox("pi1-kill");
    const answer = "word ".repeat(2000);
    const { child, cleanup } = spawnPi1Json({ home: sb.home, agentDir: sb.agentDir, cwd: sb.dir("project"), prompt: "write a lot", replies: [answer], tokensPerSecond: 200 });
    try {
      let out = "";
      await new Promise<void>((resolve, reject) => {
        child.on("close", () => reject(new Error(`pi exited before streaming: ${out.slice(0, 300)}`)));
        child.stdout!.setEncoding("utf8").on("data", (d: string) => {
          out += d;
          if ((out.match(/"type":"text_delta"/g) ?? []).length >= 3) resolve();
        });
      });
      const closed = new Promise<NodeJS.Signals | null>((resolve) => child.on("close", (_code, signal) => resolve(signal)));
      child.kill("SIGKILL");
      expect(await closed).toBe("SIGKILL");
      // pi wrote the prompt (the file exists from the first user message) but not the answer.
      const [file] = sessionFiles(sb.sessionsDir);
      const v = await validatePi1(readFileSync(file, "utf8"));
      const roles = v.entries.filter((e) => e.type === "message").map((e) => (e.message as { role: string }).role);
      expect(roles).toEqual(["system", "user"]);
    } finally {
      cleanup();
    }
  }, 120_000);
});
