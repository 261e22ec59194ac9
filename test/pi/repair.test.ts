import { readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseSessionText } from "../../src/agents/pi/parse.js";
import { repairSessionText } from "../../src/agents/pi/repair.js";
import { fauxText, fauxToolCall, makePiSession } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { copyFixtures } from "./fixtures.js";
import { tempRoot } from "../helpers/tmp.js";

/** A real multi-turn session written by pi, as lines (no trailing newline element). */
let file: string;
let lines: string[];
let ids: string[];

beforeAll(async () => {
  const root = tempRoot("repair");
  const made = await makePiSession({
    agentDir: join(root, "agent"),
    cwd: join(root, "proj"),
    turns: [
      { user: "run it", assistant: [[fauxText("running"), fauxToolCall("bash", { command: "echo repaired" })], "done"] },
      { user: "again", assistant: ["second"] },
      { user: "third", assistant: ["third answer"] },
    ],
  });
  file = made.file;
  const text = readFileSync(file, "utf8");
  lines = text.trimEnd().split("\n");
  ids = parseSessionText(text).entries.map((e) => e.id as string);
});

const idsOf = (text: string) => validateWithPi(text).entries.map((e) => e.id);

describe("repairSessionText", () => {
  it("returns a sound session unchanged", () => {
    const text = `${lines.join("\n")}\n`;
    const { text: out, report } = repairSessionText(text);
    expect(out).toBe(text);
    expect(report).toMatchObject({ changed: false, actions: [], entries: ids.length });
  });

  it("drops a torn last line", () => {
    const torn = `${lines.join("\n")}\n${lines[3].slice(0, 40)}`;
    const { text, report } = repairSessionText(torn);
    expect(idsOf(text)).toEqual(ids);
    expect(report.droppedLines).toEqual([lines.length + 1]);
    expect(report.actions.join(" ")).toMatch(/torn last line/);
  });

  it("separates the entry pi glued onto a torn line, which pi itself would lose", () => {
    const broken = [...lines.slice(0, 5), lines[5].slice(0, 60) + lines[6], ...lines.slice(7)];
    const { text, report } = repairSessionText(`${broken.join("\n")}\n`);
    const kept = ids.filter((_, i) => i !== 4); // line 6 (entry index 4) was torn
    expect(report.recoveredEntries).toBe(1);
    expect(idsOf(text)).toEqual(kept);
    // pi's parser on the damaged text misses the glued entry too.
    expect(validateWithPi(`${broken.join("\n")}\n`).entries).toHaveLength(ids.length - 2);
  });

  it("splits two complete entries that lost the newline between them", () => {
    const glued = [...lines.slice(0, 3), lines[3] + lines[4], ...lines.slice(5)];
    const { text } = repairSessionText(`${glued.join("\n")}\n`);
    expect(idsOf(text)).toEqual(ids);
    expect(text).toBe(`${lines.join("\n")}\n`);
  });

  it("synthesises a lost header from the file name, a fallback cwd and the first entry's time", () => {
    const headerless = `${lines.slice(1).join("\n")}\n`;
    const { text, report } = repairSessionText(headerless, { fileName: basename(file), fallbackCwd: "/recovered" });
    const original = JSON.parse(lines[0]);
    const { header } = validateWithPi(text);
    expect(report.headerSynthesized).toBe(true);
    expect(header).toMatchObject({ type: "session", version: 3, id: original.id, cwd: "/recovered" });
    expect(header.timestamp).toBe(JSON.parse(lines[1]).timestamp);
    expect(idsOf(text)).toEqual(ids);
  });

  it("rebuilds a torn header keeping its id, cwd and time", () => {
    const original = JSON.parse(lines[0]);
    const cut = lines[0].slice(0, lines[0].length - 3);
    const { text, report } = repairSessionText(`${[cut, ...lines.slice(1)].join("\n")}\n`, { fallbackCwd: "/unused" });
    const { header } = validateWithPi(text);
    expect(report.headerSynthesized).toBe(true);
    expect(header).toMatchObject({ id: original.id, timestamp: original.timestamp, version: 3 });
    expect(idsOf(text)).toEqual(ids);
  });

  it("recovers from a zero-filled tail followed by a later append", () => {
    const damaged = `${lines.slice(0, 6).join("\n")}\n${"\0".repeat(300)}${lines.slice(6).join("\n")}\n`;
    expect(idsOf(repairSessionText(damaged).text)).toEqual(ids);
  });

  it("is idempotent", () => {
    const torn = `${lines.slice(0, 5).join("\n")}\n${lines[5].slice(0, 30)}${lines[6]}\n${lines[7].slice(0, 10)}`;
    const once = repairSessionText(torn).text;
    const twice = repairSessionText(once);
    expect(twice.report.changed).toBe(false);
    expect(twice.text).toBe(once);
  });

  it("makes pi's legacy fixture loadable without migrating it", () => {
    const text = readFileSync(copyFixtures().get("legacy-v1-with-garbage-line.jsonl")!, "utf8");
    const { text: out, report } = repairSessionText(text);
    expect(report.droppedLines).toEqual([4]);
    expect(out.split("\n")[0]).toBe(text.split("\n")[0]);
    expect(validateWithPi(out).entries).toHaveLength(3);
  });

  it("leaves an empty file alone", () => {
    expect(repairSessionText("").report.changed).toBe(false);
  });

  it("turns random damage into something pi loads", () => {
    const text = `${lines.join("\n")}\n`;
    for (let cut = 10; cut < text.length; cut += 97) {
      const damaged = text.slice(0, cut) + text.slice(cut + 13);
      const { text: out } = repairSessionText(damaged, { fileName: basename(file) });
      expect(() => validateWithPi(out, { expectEntries: false })).not.toThrow();
    }
  });
});
