// pi 1.x also reads a project's own MCP servers from `<cwd>/.pi/mcp.json` (pi's loadMcpConfig, in
// a trusted project; `pi mcp add --local` writes it). `export --redact` masks the secrets found
// there for a session whose header names that cwd, as it does for the agent dir's mcp.json. pi
// 1.6.0 writes the file and the session here.
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok } from "../helpers/cli.js";
import { makePi1Session, pi1ToolCall, type Pi1SessionResult } from "../helpers/pi1.js";
import { piMcpAdd } from "../helpers/pi1-mcp.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { leaks, searchable } from "./redact-search.js";

// Values that match no key shape: only reading the project's file can mask them.
const PROJ_BEARER = "projT0ken.Wiki.31ccQq"; // .pi/mcp.json headers.Authorization "Bearer …"
const PROJ_HEADER = "projK3y.Green.7272yyV"; // .pi/mcp.json headers.X-Proj-Key
const PROJ_ENV = "projEnvV4l.Lint.90aaR"; // .pi/mcp.json env.LINT_TOKEN
const SECRETS: [string, string][] = [
  [PROJ_BEARER, ".pi/mcp.json Authorization bearer"],
  [PROJ_HEADER, ".pi/mcp.json X-Proj-Key header"],
  [PROJ_ENV, ".pi/mcp.json env LINT_TOKEN"],
];

let sb: Sandbox;
let session: Pi1SessionResult;
let project: string;

beforeAll(async () => {
  sb = makeSandbox("redact-proj-mcp");
  mkdirSync(sb.agentDir, { recursive: true });
  project = path.join(sb.root, "work", "wiki");
  mkdirSync(project, { recursive: true });
  piMcpAdd(sb.home, sb.agentDir, ["wiki", "--local", "--url", "https://wiki.example.com/mcp", "--header", `Authorization=Bearer ${PROJ_BEARER}`, "--header", `X-Proj-Key=${PROJ_HEADER}`, "--header", "X-Team=green"], project);
  piMcpAdd(sb.home, sb.agentDir, ["lint", "--local", "--env", `LINT_TOKEN=${PROJ_ENV}`, "--env", "LOG_LEVEL=quiet-mode-please", "--", "npx", "lint-mcp"], project);
  const config = path.join(project, ".pi", "mcp.json");
  session = await makePi1Session({
    agentDir: sb.agentDir,
    cwd: project,
    turns: [
      {
        user: `The wiki server rejects ${PROJ_BEARER} and ${PROJ_HEADER}; the lint token is ${PROJ_ENV}.`,
        assistant: [[pi1ToolCall("bash", { command: `cat ${config}` })], `So ${PROJ_BEARER} is in your project config.`],
      },
    ],
  });
}, 120_000);

afterAll(() => sb?.cleanup());

describe("export --redact masks the secrets of the session's project .pi/mcp.json", () => {
  it("pi 1.6.0 wrote the project's file, and the plain export really holds every secret", async () => {
    expect(JSON.parse(readFileSync(path.join(project, ".pi", "mcp.json"), "utf8")).mcpServers).toHaveProperty("wiki");
    const md = (await ok(sb, ["export", session.sessionId])).stdout;
    for (const [secret] of SECRETS) expect(md).toContain(secret);
  });

  for (const format of ["markdown", "json", "html"]) {
    it(`${format}: no secret of <cwd>/.pi/mcp.json in the export; settings and URLs intact`, async () => {
      const out = (await ok(sb, ["export", session.sessionId, "--redact", "-f", format])).stdout;
      const texts = searchable(format, out);
      expect(leaks(texts, SECRETS)).toEqual([]);
      const all = texts.join("\n");
      expect(all).toContain("[REDACTED:project mcp.json wiki]");
      expect(all).toContain("[REDACTED:project mcp.json lint]");
      for (const plain of ["https://wiki.example.com/mcp", "quiet-mode-please", "lint-mcp", "X-Team"]) expect(all).toContain(plain);
    });
  }
});
