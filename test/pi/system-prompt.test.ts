// pi 1.x's system messages replayed the way pi replays them (src/agents/pi/system-prompt.ts): checked
// against pi 1.6.0 itself, whose compaction writes the prompt it has replayed at that point as the
// checkpoint (`systemMessage`), and against hostile values pi never writes.

import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSessionText } from "../../src/agents/pi/parse.js";
import { applySystemMessage, describeSystemChange, leadingSystemIds, systemMessageOf, systemSteps, type SystemState } from "../../src/agents/pi/system-prompt.js";
import { buildTree, pathTo } from "../../src/model/tree.js";
import type { SessionEntry, SystemMessage } from "../../src/model/session.js";
import { makePi1RichSession, type Pi1SessionResult } from "../helpers/pi1.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

const plain = (s: SystemState) => ({ sections: Object.fromEntries(s.sections), tools: [...s.tools.values()], instructions: s.instructions.join("\n\n") });
const empty = (): SystemState => ({ instructions: [], sections: new Map(), tools: new Map() });
const sys = (m: Partial<SystemMessage>): SystemMessage => ({ role: "system", content: "", timestamp: 0, ...m });

describe("system prompt replay on pi 1.6.0 sessions", () => {
  let sb: Sandbox;
  let made: Pi1SessionResult;
  let entries: SessionEntry[];

  beforeAll(async () => {
    sb = makeSandbox("pi1-system");
    made = await makePi1RichSession(sb.agentDir, sb.dir("project"));
    entries = readSessionText(readFileSync(made.file, "utf8")).entries;
  }, 120_000);
  afterAll(() => sb?.cleanup());

  it("the state replayed up to a compaction is the checkpoint pi wrote there", () => {
    const compaction = entries.find((e) => e.type === "compaction")!;
    const path = pathTo(buildTree(entries), compaction.id);
    const before = systemSteps(path.slice(0, -1));
    const last = [...before.values()].at(-1)!;
    expect(last.kind).toBe("update");
    const checkpoint = systemSteps(path).get(compaction.id)!;
    expect(checkpoint.kind).toBe("checkpoint");
    // pi's checkpoint (its own getCurrentSystemMessage) and pi-guard's replay agree in full.
    expect(plain(last.state)).toEqual(plain(checkpoint.state));
    expect([...checkpoint.state.tools.keys()]).toEqual(["read", "bash"]);
    expect([...checkpoint.state.sections.keys()]).not.toContain("plan");
  });

  it("marks the first system message of each branch as the prompt, as pi's tree does", () => {
    const tree = buildTree(entries);
    const systems = entries.filter((e) => systemMessageOf(e) && e.type === "message");
    expect([...leadingSystemIds(tree)]).toEqual([systems[0].id]);
    const fork = readSessionText(readFileSync(made.fork!.file, "utf8")).entries;
    expect([...leadingSystemIds(buildTree(fork))]).toEqual([systems[0].id]); // the fork copied it
  });
});

describe("applySystemMessage", () => {
  it("replaces, adds and removes sections by name; removes tools before adding them", () => {
    const first = applySystemMessage(empty(), sys({ content: "Base.", sections: { a: "A1", b: "B1" }, toolsAdded: [{ name: "read" }, { name: "bash" }, { name: "edit" }] }));
    const patch = sys({ content: "More.", sections: { a: "A2", b: null, c: "C1", x: null }, toolsRemoved: [{ name: "read" }, { name: "nope" }], toolsAdded: [{ name: "read", description: "v2" }, { name: "bash", description: "v2" }, { name: "write" }] });
    const next = applySystemMessage(first.state, patch);
    expect(next.sections.map((s) => [s.name, s.change])).toEqual([["a", "replaced"], ["b", "removed"], ["c", "added"], ["x", "removed-unknown"]]);
    expect(next.tools.map((t) => [t.name, t.change])).toEqual([["nope", "removed-unknown"], ["read", "redefined"], ["bash", "redefined"], ["write", "added"]]);
    // pi-ai getCurrentTools: a removed-then-added tool moves to the end; a re-added one keeps its place.
    expect([...next.state.tools.keys()]).toEqual(["bash", "edit", "read", "write"]);
    expect(plain(next.state)).toMatchObject({ sections: { a: "A2", c: "C1" }, instructions: "Base.\n\nMore." });
    expect(describeSystemChange(patch)).toBe("instructions, a, -b, c, -x, tools +read +bash +write -read -nope"); // pi's words and order
    expect(plain(first.state).sections).toEqual({ a: "A1", b: "B1" }); // the state before is not touched
  });

  it("takes hostile values as what they hold and never throws", () => {
    const hostile = [
      { sections: "not an object", toolsAdded: "nope", toolsRemoved: 7 },
      { sections: [1, 2], toolsAdded: [null, 1, { description: "no name" }, { name: 5 }] },
      { sections: { n: 5, o: { deep: true }, p: "ok" }, content: [{ type: "text", text: "t" }, { type: "image" }, null] },
    ] as unknown as Partial<SystemMessage>[];
    let state = empty();
    for (const m of hostile) state = applySystemMessage(state, sys(m)).state;
    expect(plain(state)).toEqual({ sections: { p: "ok" }, tools: [], instructions: "t" });
  });
});
