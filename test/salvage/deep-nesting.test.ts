// Salvage sources and repair read hostile JSON too: a tool call nested 5,000 levels deep in a pi
// event log, in an HTML export's embedded session, and in a session file to repair. The deeper
// parts are kept as raw JSON text (salvage says so), the rest is recovered, and pi loads it.

import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseSessionText } from "../../src/agents/pi/parse.js";
import { fauxText, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { appendHostileEntry, deepObject } from "../sessions/hostile.js";
import { runCli, tempEnv } from "./cli.js";
import { jsonModeLog } from "./log-shapes.js";
import { tempRoot } from "../helpers/tmp.js";

let root: string;
let made: PiSessionResult;
let headerLine: string;
let hostileLine: string;

const noCrash = (r: { exitCode: number; stderr: string }) => {
  expect(r.stderr, r.stderr.slice(0, 2000)).not.toMatch(/^\s+at /m);
  expect(r.stderr, r.stderr.slice(0, 2000)).not.toMatch(/internal error|RangeError/);
  expect(r.exitCode, r.stderr.slice(0, 2000)).toBe(0);
};

beforeAll(async () => {
  root = tempRoot("salvage-deep");
  made = await makePiSession({ agentDir: join(root, "agent"), cwd: join(root, "proj"), turns: [{ user: "describe the heron", assistant: [fauxText("The heron waits.")] }] });
  const before = readFileSync(made.file, "utf8");
  appendHostileEntry(made.file, deepObject(5_000), "deadbee5");
  headerLine = before.slice(0, before.indexOf("\n"));
  hostileLine = readFileSync(made.file, "utf8").slice(before.length).trimEnd();
});

describe("hostile nesting in salvage sources", () => {
  it("--from-log: the event holding it is salvaged with its deep part as text, and pi loads the result", async () => {
    const entry = JSON.parse(hostileLine) as { message: unknown };
    const end = JSON.stringify({ type: "message_end", message: "@MSG@" }).replace('"@MSG@"', hostileLine.slice(hostileLine.indexOf('"message":') + '"message":'.length, -1));
    expect(entry.message).toBeDefined();
    const log = join(root, "events.log");
    writeFileSync(log, `${jsonModeLog(JSON.parse(headerLine), made.events)}${end}\n`);
    const run = await runCli(["--json", "salvage", "--from-log", log, "--out", join(root, "out-log")], tempEnv(root));
    noCrash(run);
    const report = JSON.parse(run.stdout) as { sessions: { file: string; gaps: string[] }[] };
    expect(report.sessions[0].gaps.join("\n")).toMatch(/nested deeper than \d+ levels/);
    const text = readFileSync(report.sessions[0].file, "utf8");
    const pi = validateWithPi(text, { expectMessages: true });
    expect(JSON.stringify(pi.context.messages)).toContain("The heron waits.");
    expect(text).toContain("echo hostile");
  });

  it("--from-html: an embedded session holding it is salvaged the same way", async () => {
    const entries = parseSessionText(readFileSync(made.file, "utf8").replace(hostileLine, "")).entries;
    const payload = JSON.stringify({ header: JSON.parse(headerLine), entries: "@ENTRIES@", leafId: "deadbee5" }).replace(
      '"@ENTRIES@"',
      `[${[...entries.map((e) => JSON.stringify(e)), hostileLine].join(",")}]`,
    );
    const html = join(root, "export.html");
    writeFileSync(html, `<html><body><script id="session-data" type="application/json">${Buffer.from(payload).toString("base64")}</script></body></html>`);
    const run = await runCli(["--json", "salvage", "--from-html", html, "--out", join(root, "out-html")], tempEnv(root));
    noCrash(run);
    const report = JSON.parse(run.stdout) as { sessions: { file: string; gaps: string[] }[] };
    expect(report.sessions[0].gaps.join("\n")).toMatch(/nested deeper than \d+ levels/);
    validateWithPi(readFileSync(report.sessions[0].file, "utf8"), { expectMessages: true });
  });

  it("repair FILE keeps the hostile line byte for byte and repairs the rest", async () => {
    const file = join(mkdtempSync(join(root, "repair-")), "s.jsonl");
    writeFileSync(file, readFileSync(made.file, "utf8").trimEnd()); // no final newline: something to repair
    const run = await runCli(["--json", "repair", file], tempEnv(root));
    noCrash(run);
    const out = JSON.parse(run.stdout) as { output: string };
    const text = readFileSync(out.output, "utf8");
    expect(text.trimEnd().split("\n").at(-1)).toBe(hostileLine);
    validateWithPi(text, { expectMessages: true });
  });
});
