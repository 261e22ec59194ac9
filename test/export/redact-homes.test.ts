// `export --redact` and home directories whose user name has a space: macOS `/Users/First Last/…`,
// Linux `/home/first last/…` and Windows `C:\Users\First Last\…`, planted in a session made by
// pi's own agent loop (the user's words, a bash command and its output, a file pi's read tool
// returned, the model's answer). Each must become ~ whole in Markdown, JSON and HTML, inside tool
// output and JSON-escaped strings included, never "~ Last/…".

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok } from "../helpers/cli.js";
import { fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { searchable } from "./redact-search.js";

const MAC = "/Users/Zelda Quimby/notes/plan.md";
const LINUX = "/home/zelda quimby/work/todo.txt";
const WINDOWS = "C:\\Users\\Zelda Quimby\\Documents\\plan.txt";
const WINDOWS_SLASHED = "C:/Users/Zelda Quimby/Desktop";
const PATHS = [MAC, LINUX, WINDOWS, WINDOWS_SLASHED];
/** The paths as --redact must write them. */
const MASKED = ["~/notes/plan.md", "~/work/todo.txt", "~\\Documents\\plan.txt", "~/Desktop"];
/** Any piece of the user's name left over is a leak. */
const NAME = /zelda|quimby/i;

let sb: Sandbox;
let session: PiSessionResult;

beforeAll(async () => {
  sb = makeSandbox("redact-homes");
  const cwd = path.join(sb.root, "work", "homes");
  mkdirSync(cwd, { recursive: true });
  // A file that names the homes, as a config or a log would: its read output is tool output.
  writeFileSync(path.join(cwd, "paths.txt"), `${PATHS.join("\n")}\nhome: /Users/Zelda Quimby\n`);
  const quoted = PATHS.map((p) => `'${p}'`).join(" ");
  session = await makePiSession({
    agentDir: sb.agentDir,
    cwd,
    turns: [
      {
        user: `My notes are in ${MAC}, the todo list in ${LINUX} and on Windows in ${WINDOWS} (and ${WINDOWS_SLASHED}).`,
        assistant: [
          [fauxToolCall("bash", { command: `printf '%s\\n' ${quoted}` }), fauxToolCall("read", { path: "paths.txt" })],
          `Found them: ${PATHS.join(", ")}.`,
        ],
      },
    ],
  });
}, 60_000);

afterAll(() => sb?.cleanup());

describe("export --redact: home directories with a space in the user name", () => {
  it("the plain export really holds every path, JSON-escaped ones included (else the test proves nothing)", async () => {
    const md = (await ok(sb, ["export", session.sessionId])).stdout;
    for (const p of PATHS) expect(md).toContain(p);
    const json = (await ok(sb, ["export", session.sessionId, "-f", "json"])).stdout;
    expect(json).toContain(JSON.stringify(WINDOWS).slice(1, -1)); // C:\\Users\\Zelda Quimby\\…
  });

  for (const format of ["markdown", "json", "html"]) {
    it(`${format}: each home is ~ whole, no part of the user's name is left`, async () => {
      const out = (await ok(sb, ["export", session.sessionId, "--redact", "-f", format])).stdout;
      const texts = searchable(format, out);
      const left = texts.flatMap((t) => t.split("\n").filter((line) => NAME.test(line)));
      expect(left).toEqual([]);
      // In the decoded strings (the JSON export's, the page's embedded session) the paths read as ~.
      const plain = format === "markdown" ? out : texts[texts.length - 1];
      for (const m of MASKED) expect(plain).toContain(m);
      expect(plain).toContain("home: ~\n");
    });
  }
});
