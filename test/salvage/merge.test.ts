import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { salvage } from "../../src/salvage/salvage.js";
import { fauxText, fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { runCli, tempEnv } from "./cli.js";
import { formatRecall, jsonModeLog, measureRecall, rpcModeLog, type Recall } from "./log-shapes.js";
import { tempRoot } from "../helpers/tmp.js";

type Ev = Record<string, unknown>;
let root: string;
let made: PiSessionResult;
let logA: string;
let logB: string;

const total = (r: Recall) => Object.values(r.exact).reduce((a, b) => a + b, 0);
const sequence = (text: string) =>
  validateWithPi(text)
    .entries.filter((e) => e.type === "message")
    .map((e) => JSON.stringify((e as unknown as { message: Ev }).message));

beforeAll(async () => {
  root = tempRoot("merge");
  made = await makePiSession({
    agentDir: join(root, "agent"),
    cwd: join(root, "proj"),
    turns: [
      { user: "one", assistant: [[fauxText("first"), fauxToolCall("bash", { command: "echo 1" })], "done one"] },
      { user: "two", assistant: ["done two"] },
      { user: "three", assistant: [[fauxToolCall("bash", { command: "echo 3" })], "done three"] },
    ],
  });
  const text = readFileSync(made.file, "utf8");
  const header = JSON.parse(text.slice(0, text.indexOf("\n")));
  const events = made.events as unknown as Ev[];
  const starts = events.flatMap((e, i) => (e.type === "agent_start" ? [i] : []));
  // A: a json-mode log of turns one and two, whose last assistant message never ended.
  const a = events.slice(0, starts[2]).filter((e, i, all) => !(i > all.length - 6 && ["message_end", "turn_end", "agent_end"].includes(String(e.type))));
  // B: an rpc log that started during turn two and ran to the end.
  const b = events.slice(starts[1]);
  logA = join(root, "a.jsonl");
  logB = join(root, "b.log");
  writeFileSync(logA, jsonModeLog(header, a));
  writeFileSync(logB, rpcModeLog(header.id, b, []));
});

describe("merging sources of one session", () => {
  it("two logs give more than either alone, in order, richest copies kept, with provenance", async () => {
    const alone = await Promise.all(
      [logA, logB].map(async (log, i) => {
        const r = await salvage({ logs: [log], outDir: join(root, `alone-${i}`) });
        return measureRecall(made.file, readFileSync(r.written[0].path, "utf8"));
      }),
    );
    const merged = await salvage({ logs: [logA, logB], outDir: join(root, "merged") });
    expect(merged.written).toHaveLength(1);
    const text = readFileSync(merged.written[0].path, "utf8");
    const recall = measureRecall(made.file, text);
    console.log(formatRecall("log A alone", alone[0]));
    console.log(formatRecall("log B alone", alone[1]));
    console.log(formatRecall("A + B merged", recall));
    expect(total(recall)).toBeGreaterThan(Math.max(total(alone[0]), total(alone[1])));
    for (const role of Object.keys(recall.total)) expect(recall.exact[role]).toBe(recall.total[role]);
    expect(sequence(text)).toEqual(sequence(readFileSync(made.file, "utf8")));

    const s = merged.report.sessions[0];
    expect(s.sources.map((x) => x.path).sort()).toEqual([logA, logB].sort());
    expect(s.sources.every((x) => (x.messages.user ?? 0) < 3)).toBe(true);
    const provenance = validateWithPi(text).entries.at(-1) as unknown as { customType: string; data: { sources: { path: string }[] } };
    expect(provenance.customType).toBe("pi-guard/salvage");
    expect(provenance.data.sources.map((x) => x.path).sort()).toEqual([logA, logB].sort());
  });

  it("prints the fidelity report for people: per session, per source, with what is missing", async () => {
    const run = await runCli(["salvage", "--from-log", logA, "--from-log", logB, "--out", join(root, "cli")], tempEnv(root));
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/^session [0-9a-f-]{36}  \S+proj$/m);
    expect(run.stdout).toMatch(/^  recovered  3 user, 5 assistant, 2 toolResult \(\d+ entries\)$/m);
    expect(run.stdout).toMatch(/^  from log +\d+ user.*a\.jsonl$/m);
    expect(run.stdout).toMatch(/^  missing    event streams carry no entry ids/m);
    expect(run.stdout).toMatch(/^  written    .*\.jsonl$/m);
  });
});
