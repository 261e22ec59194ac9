// Issue 18 item 5: `salvage --from-log` on a real `pi --mode json` log of pi 1.6.0 (the CLI with
// the faux extension) gets back every message pi stored, the role:"system" message with its
// prompt sections and tool list included, in a file pi 1.6.0 loads.

import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok } from "../helpers/cli.js";
import { makePi1Session, pi1ToolCall, runPi1Json, validatePi1, type Pi1Validation } from "../helpers/pi1.js";
import { makeSandbox, type Sandbox, sessionFiles } from "../helpers/tmp.js";

const messagesOf = (v: Pi1Validation) => v.entries.filter((e) => e.type === "message").map((e) => e.message as { role: string; [k: string]: unknown });

describe("salvage --from-log: a real pi 1.6.0 --mode json log", () => {
  let sb: Sandbox;
  let original: Pi1Validation;
  let salvaged: Pi1Validation;

  beforeAll(async () => {
    sb = makeSandbox("pi1-salvage-log");
    const cwd = sb.dir("project");
    writeFileSync(path.join(cwd, "notes.txt"), "line one\nline two\n");
    const run = await runPi1Json({
      home: sb.home,
      agentDir: sb.agentDir,
      cwd,
      prompt: "what is in notes.txt, and how many files are there?",
      replies: [
        [{ type: "thinking", thinking: "Read it first." }, { type: "toolCall", name: "read", arguments: { path: "notes.txt" } }],
        [{ type: "text", text: "Two lines. Now counting." }, { type: "toolCall", name: "bash", arguments: { command: "ls | wc -l" } }],
        "It has two lines, and there is one file.",
      ],
    });
    const log = path.join(sb.root, "pi.log");
    writeFileSync(log, run.log);
    const [file] = sessionFiles(sb.sessionsDir);
    original = await validatePi1(readFileSync(file, "utf8"), { expectMessages: true });

    const out = path.join(sb.root, "salvaged");
    await ok(sb, ["salvage", "--from-log", log, "--out", out, "--json"]);
    const written = readdirSync(out, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".jsonl"));
    expect(written).toHaveLength(1);
    salvaged = await validatePi1(readFileSync(path.join(out, written[0]), "utf8"), { expectMessages: true });
  }, 120_000);

  afterAll(() => sb?.cleanup());

  it("the log's session holds a system message with sections and the tool list (what pi 1.x writes)", () => {
    const system = messagesOf(original).find((m) => m.role === "system")!;
    expect(Object.keys(system.sections as object)).toEqual(expect.arrayContaining(["preamble", "tools"]));
    expect((system.toolsAdded as Array<{ name: string }>).map((t) => t.name)).toEqual(["read", "bash", "edit", "write"]);
  });

  it("every message pi stored comes back, the system message included, exactly, and pi 1.6.0 loads the file", () => {
    const want = messagesOf(original);
    const got = messagesOf(salvaged);
    expect(got.map((m) => m.role)).toEqual(want.map((m) => m.role));
    expect(got).toEqual(want);
    expect(salvaged.header.id).toBe(original.header.id);
    // pi rebuilds the same context: the system prompt leads it.
    expect(salvaged.context.messages.map((m) => m.role)).toEqual(original.context.messages.map((m) => m.role));
    expect(salvaged.context.messages[0].role).toBe("system");
  });
});

describe("salvage --from-log: system patches in pi 1.6.0's event log", () => {
  let sb: Sandbox;
  afterAll(() => sb?.cleanup());

  it("the first system message and each patch (sections by name, null, toolsRemoved, toolsAdded) come back in order", async () => {
    sb = makeSandbox("pi1-salvage-patches");
    const made = await makePi1Session({
      agentDir: sb.agentDir,
      cwd: sb.dir("project"),
      eventLog: true,
      turns: [
        { user: "plan it", sections: { plan: "Step one." }, assistant: [[pi1ToolCall("bash", { command: "echo one" })], "planned"] },
        { user: "drop the plan, no writing", sections: { plan: null }, tools: ["read", "bash"], assistant: ["dropped"] },
        { user: "write again", tools: ["read", "bash", "write"], assistant: ["writing is back"] },
      ],
    });
    const original = await validatePi1(readFileSync(made.file, "utf8"));
    const systems = messagesOf(original).filter((m) => m.role === "system");
    expect(systems.length).toBe(3);
    expect(systems[1].sections).toMatchObject({ plan: null });
    expect((systems[1].toolsRemoved as Array<{ name: string }>).map((t) => t.name)).toEqual(["edit", "write"]);
    expect((systems[2].toolsAdded as Array<{ name: string }>).map((t) => t.name)).toEqual(["write"]);

    const log = path.join(sb.root, "events.log");
    writeFileSync(log, made.eventLog!);
    const out = path.join(sb.root, "salvaged");
    await ok(sb, ["salvage", "--from-log", log, "--out", out]);
    const [written] = readdirSync(out, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".jsonl"));
    const salvaged = await validatePi1(readFileSync(path.join(out, written), "utf8"), { expectMessages: true });
    expect(messagesOf(salvaged)).toEqual(messagesOf(original));
  }, 120_000);
});
