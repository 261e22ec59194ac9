// `sessions list` with a long session name (pi's /name, a session_info entry written by the real
// agent loop): the name is cut at its end, the table fits the terminal width, --json keeps it whole.

import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makePiSession } from "../helpers/pi-factory.js";
import { makeSandbox, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";
import { runOk } from "./cli.js";
import { fitListRows, terminalWidth } from "../../src/sessions/list-layout.js";

const NAME = "Refactor the billing export: add --month/--category flags and keep the old CSV layout working";
let sb: Sandbox;
let id: string;
let project: string;

beforeAll(async () => {
  sb = makeSandbox("list-names");
  writePiConfigFiles(sb.agentDir);
  project = path.join(sb.root, "work", "a-rather-long-project-folder-name", "billing-service");
  const made = await makePiSession({ agentDir: sb.agentDir, cwd: project, turns: [{ user: "start", assistant: ["ok"], name: NAME }] });
  id = made.sessionId;
});
afterAll(() => sb?.cleanup());

const human = async (columns: string) => (await runOk(sb, ["sessions", "list", "--live"], { COLUMNS: columns })).stdout.trimEnd().split("\n");

describe("sessions list names", () => {
  it("--json keeps the whole name", async () => {
    const rows = (await runOk(sb, ["--json", "sessions", "list", "--live"])).json<{ id: string; name: string }[]>();
    expect(rows.find((r) => r.id === id)?.name).toBe(NAME);
  });

  it.each([100, 140, 80])("cuts the name at its end and fits %i columns", async (width) => {
    const lines = await human(String(width));
    const row = lines.find((l) => l.startsWith(id.slice(0, 8)))!;
    expect(row).toBeDefined();
    // The name is read from its start: the beginning is there, the end is replaced by "…".
    expect(row).toContain(NAME.slice(0, 10));
    expect(row).not.toContain("flags and keep the old CSV layout working");
    expect(row).toMatch(/[A-Za-z:/ -]…\s/);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(width);
    // Columns that matter less give way first; these always stay.
    for (const h of ["ID", "NAME", "PROJECT", "LAST ACTIVITY", "WHERE"]) expect(lines[0]).toContain(h);
  });

  it("shows the whole name when the terminal is wide enough", async () => {
    const lines = await human("300");
    const row = lines.find((l) => l.startsWith(id.slice(0, 8)))!;
    expect(row).toContain(NAME);
    expect(row).toContain(project);
    expect(lines[0]).toContain("STARTED");
  });
});

describe("list layout", () => {
  it("takes COLUMNS, then the TTY width, then 100", () => {
    expect(terminalWidth({ COLUMNS: "132" }, { isTTY: true, columns: 80 })).toBe(132);
    expect(terminalWidth({ COLUMNS: "junk" }, { isTTY: true, columns: 80 })).toBe(80);
    expect(terminalWidth({}, { isTTY: false, columns: 80 })).toBe(100);
  });

  it("cuts names at the end and projects at the front, without splitting a character", () => {
    const rows = [
      ["ID", "NAME", "PROJECT", "X"],
      ["abcd", "🙂".repeat(30), "/home/me/projects/deep/inside/app", "y"],
    ];
    const [, row] = fitListRows(rows, 40);
    expect(row[1].endsWith("…")).toBe(true);
    expect(row[1]).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/); // no lone high surrogate
    expect(row[2].startsWith("…")).toBe(true);
    expect(row[2].endsWith("inside/app")).toBe(true);
  });
});
