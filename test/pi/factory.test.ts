import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseSessionFile, parseSessionText, readSessionText } from "../../src/agents/pi/parse.js";
import { sessionStats } from "../../src/model/stats.js";
import { branchPoints, buildTree, labels, sessionName } from "../../src/model/tree.js";
import { sessionDirName } from "../../src/agents/pi/writer.js";
import { bigText, fauxText, fauxThinking, fauxToolCall, forkPiSession, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { tempRoot } from "../helpers/tmp.js";

describe("makePiSession: real pi sessions with the faux model", () => {
  let root: string;
  let agentDir: string;
  let cwd: string;
  let made: PiSessionResult;

  beforeAll(async () => {
    root = tempRoot("factory");
    agentDir = join(root, "agent");
    cwd = join(root, "project");
    mkdirSync(cwd, { recursive: true });
    writeFileSync(join(cwd, "notes.txt"), "line one\nline two\n");
    made = await makePiSession({
      agentDir,
      cwd,
      thinkingLevel: "medium",
      turns: [
        {
          user: "What is in notes.txt?",
          assistant: [[fauxThinking("I should read it."), fauxToolCall("read", { path: "notes.txt" })], "It has two lines."],
          label: "read-done",
        },
        { user: "Count files", assistant: [[fauxText("Counting."), fauxToolCall("bash", { command: "ls | wc -l" })], "One file."], name: "Factory test" },
        { user: "Try another way", assistant: ["Alternative answer."], branchFromTurn: 0 },
      ],
      fork: { atTurn: 1, turns: [{ user: "Continue in the fork", assistant: ["Forked reply."] }] },
    });
  });

  it("puts the file where pi puts it, under the temp agent dir", () => {
    expect(dirname(made.file)).toBe(join(agentDir, "sessions", sessionDirName(cwd)));
    expect(existsSync(join(homedir(), ".pi", "agent", "sessions", sessionDirName(cwd)))).toBe(false);
  });

  it("writes a session pi validates, with real tool results, thinking, label, name and a branch", () => {
    const text = readFileSync(made.file, "utf8");
    const { header, entries, context } = validateWithPi(text, { expectMessages: true });
    expect(header.id).toBe(made.sessionId);
    expect(header.cwd).toBe(cwd);
    const toolResults = entries.filter((e) => e.type === "message" && e.message.role === "toolResult");
    expect(JSON.stringify(toolResults)).toContain("line one");
    expect(JSON.stringify(toolResults)).toMatch(/"text":"1\\n"/);
    expect(text).toContain('"type":"thinking"');
    // The leaf is the branch from turn 0, so the context skips turn 1.
    expect(JSON.stringify(context.messages)).toContain("Alternative answer.");
    expect(JSON.stringify(context.messages)).not.toContain("One file.");

    const ours = readSessionText(text);
    expect(ours.issues).toEqual([]);
    expect(ours.entries.map((e) => e.id)).toEqual(entries.map((e) => e.id));
    expect(sessionName(ours.entries)).toBe("Factory test");
    expect([...labels(ours.entries).values()]).toEqual(["read-done"]);
    expect(branchPoints(buildTree(ours.entries)).map((e) => e.id)).toEqual([made.turnLeafIds[0]]);
    expect(sessionStats(ours.entries)).toMatchObject({ userMessages: 3, assistantMessages: 5, toolResults: 2, toolCalls: 2, turns: 3 });
  });

  it("captures pi's event stream", () => {
    const types = new Set(made.events.map((e) => e.type));
    for (const t of ["agent_start", "turn_start", "message_start", "message_update", "message_end", "tool_execution_start", "tool_execution_end", "turn_end", "agent_end"]) {
      expect(types, t).toContain(t);
    }
    const ends = made.events.filter((e) => e.type === "message_end");
    expect(ends.length).toBe(3 + 5 + 2);
  });

  it("forks like pi's /fork: parentSession set, parent ids kept", () => {
    const fork = made.fork!;
    expect(fork.file).not.toBe(made.file);
    const text = readFileSync(fork.file, "utf8");
    const { header, entries } = validateWithPi(text, { expectMessages: true });
    expect(header.parentSession).toBe(made.file);
    const parentIds = new Set(parseSessionText(readFileSync(made.file)).entries.map((e) => e.id));
    const shared = entries.filter((e) => parentIds.has(e.id));
    expect(shared.length).toBeGreaterThan(5);
    expect(text).toContain("Forked reply.");
  });

  it("forks a whole file like `pi --fork`, without touching the parent", async () => {
    const before = statSync(made.file);
    const beforeText = readFileSync(made.file, "utf8");
    const other = join(root, "other-project");
    const fork = await forkPiSession({ agentDir, cwd: other, parentFile: made.file, turns: [{ user: "More", assistant: ["Sure."] }] });
    expect(dirname(fork.file)).toBe(join(agentDir, "sessions", sessionDirName(other)));
    const { header, entries } = validateWithPi(readFileSync(fork.file, "utf8"));
    expect(header).toMatchObject({ parentSession: made.file, cwd: other });
    const parentEntries = parseSessionText(beforeText).entries;
    expect(entries.slice(0, parentEntries.length).map((e) => e.id)).toEqual(parentEntries.map((e) => e.id));
    expect(readFileSync(made.file, "utf8")).toBe(beforeText);
    expect(statSync(made.file).mtimeMs).toBe(before.mtimeMs);
  });
});

describe("makePiSession at scale", () => {
  it("makes a multi-MB session in a few seconds that parses the same streamed and in memory", async () => {
    const root = tempRoot("big");
    const chunk = bigText(200_000);
    const turns = Array.from({ length: 12 }, (_, i) => ({
      user: `turn ${i}`,
      assistant: [[fauxToolCall("bash", { command: `printf 'out ${i}'` })], chunk],
    }));
    const started = Date.now();
    const { file } = await makePiSession({ agentDir: join(root, "agent"), cwd: join(root, "p"), turns, captureEvents: false });
    const elapsed = Date.now() - started;
    expect(statSync(file).size).toBeGreaterThan(2_000_000);
    expect(elapsed).toBeLessThan(60_000);
    const streamed = await parseSessionFile(file);
    const inMemory = parseSessionText(readFileSync(file));
    expect(streamed.issues).toEqual([]);
    expect(streamed.entries.length).toBe(inMemory.entries.length);
    expect(validateWithPi(readFileSync(file, "utf8")).entries.length).toBe(streamed.entries.length);
  });
});
