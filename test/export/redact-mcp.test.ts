// pi 1.x keeps MCP credentials in two new files of the agent dir: mcp.json (headers, env, args and
// OAuth client secrets of MCP servers) and mcp-auth.json (MCP OAuth tokens, client secrets, PKCE
// verifiers). pi 1.6.0 writes both itself here (test/helpers/pi1-mcp.ts), and the session is pi
// 1.6.0's, with its real bash tool printing the files. `export --redact` masks
// every secret they hold wherever a session shows it: pasted bare into a prompt, in the output of
// `cat mcp-auth.json`, base64-encoded by a tool, and in the model's answer; settings and URLs stay.

import { mkdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok } from "../helpers/cli.js";
import { makePi1Session, pi1ToolCall, type Pi1SessionResult } from "../helpers/pi1.js";
import { piMcpAdd, piMcpSaveOAuth } from "../helpers/pi1-mcp.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { leaks, searchable } from "./redact-search.js";

// Values that match no key shape: only knowing the files can mask them.
const DOCS_BEARER = "hdrT0ken.Docs.77aa19Qz"; // mcp.json headers.Authorization "Bearer …"
const DOCS_HEADER = "teamK3y.Blue.5151xxW"; // mcp.json headers.X-Team-Key
const CLIENT_SECRET = "cs.Secr3t.0auth.55Pq"; // mcp.json oauth.clientSecret
const TOOLS_ENV = "envV4lue.Tools.88zzK"; // mcp.json env.TOOLS_KEY
const TOOLS_ARG = "argT0ken.9911.MmNn"; // mcp.json args --api-key=…
const REF_ENV = "refV4lue.Env.4242Ab"; // mcp.json env.GH = "${GH_PAT}", and GH_PAT holds this
const ACCESS = "mcpAcc3ss.T0ken.xyz.123"; // mcp-auth.json tokens.access_token
const REFRESH = "mcpRefr3sh.T0ken.456Q"; // tokens.refresh_token
const ID_TOKEN = "idT0k3n.Signed.789Zz"; // tokens.id_token
const DCR_SECRET = "dcrS3cret.abc.991Kk"; // clientInformation.client_secret
const VERIFIER = "v3rifier.PKCE.abcdefghij0123456789"; // codeVerifier
const OAUTH_STATE = "st4te.Nonce.0042RrT"; // oauthState

const SECRETS: [string, string][] = [
  [DOCS_BEARER, "mcp.json Authorization bearer"],
  [DOCS_HEADER, "mcp.json X-Team-Key header"],
  [CLIENT_SECRET, "mcp.json oauth.clientSecret"],
  [TOOLS_ENV, "mcp.json env TOOLS_KEY"],
  [TOOLS_ARG, "mcp.json args --api-key="],
  [REF_ENV, "mcp.json env ${GH_PAT}"],
  [ACCESS, "mcp-auth.json access_token"],
  [REFRESH, "mcp-auth.json refresh_token"],
  [ID_TOKEN, "mcp-auth.json id_token"],
  [DCR_SECRET, "mcp-auth.json client_secret"],
  [VERIFIER, "mcp-auth.json codeVerifier"],
  [OAUTH_STATE, "mcp-auth.json oauthState"],
];
const ENV = { GH_PAT: REF_ENV };

let sb: Sandbox;
let session: Pi1SessionResult;

beforeAll(async () => {
  sb = makeSandbox("redact-mcp");
  mkdirSync(sb.agentDir, { recursive: true });
  const url = "https://mcp.example.com/mcp";
  piMcpAdd(sb.home, sb.agentDir, ["docs", "--url", url, "--header", `Authorization=Bearer ${DOCS_BEARER}`, "--header", `X-Team-Key=${DOCS_HEADER}`, "--header", "X-Team=blue", "--oauth-client-id", "my-client", "--oauth-client-secret", CLIENT_SECRET]);
  piMcpAdd(sb.home, sb.agentDir, ["tools", "--env", `TOOLS_KEY=${TOOLS_ENV}`, "--env", "GH=${GH_PAT}", "--env", "LOG_LEVEL=debug-verbose-mode", "--", "uvx", "tools-mcp", `--api-key=${TOOLS_ARG}`]);
  piMcpSaveOAuth(sb.home, sb.agentDir, "docs", {
    serverUrl: url,
    clientInformation: { client_id: "dyn-client-1", client_secret: DCR_SECRET },
    tokens: { access_token: ACCESS, token_type: "Bearer", refresh_token: REFRESH, id_token: ID_TOKEN, expires_in: 3600, scope: "docs:read" },
    tokensExpireAt: 1_893_456_000_000,
    codeVerifier: VERIFIER,
    oauthState: OAUTH_STATE,
  });
  const cwd = path.join(sb.root, "work", "mcp");
  mkdirSync(cwd, { recursive: true });
  const agent = (file: string) => path.join(sb.agentDir, file);
  session = await makePi1Session({
    agentDir: sb.agentDir,
    cwd,
    turns: [
      {
        user: `The docs server rejects ${ACCESS}; I refreshed with ${REFRESH}. The tools key is ${TOOLS_ENV} and ${REF_ENV}, the arg ${TOOLS_ARG}.`,
        assistant: [
          [pi1ToolCall("bash", { command: `cat ${agent("mcp-auth.json")} ${agent("mcp.json")}` })],
          [pi1ToolCall("bash", { command: `printf %s '${DOCS_HEADER}' | base64; echo ${ID_TOKEN}` })],
          `The client secret ${CLIENT_SECRET} and ${DCR_SECRET} look fine; verifier ${VERIFIER}, state ${OAUTH_STATE}, bearer ${DOCS_BEARER}.`,
        ],
      },
    ],
  });
}, 120_000);

afterAll(() => sb?.cleanup());

describe("export --redact masks the secrets of pi 1.x's mcp.json and mcp-auth.json", () => {
  it("pi 1.6.0 wrote the files, and the plain export really holds every secret", async () => {
    const md = (await ok(sb, ["export", session.sessionId], { env: ENV })).stdout;
    for (const [secret] of SECRETS) expect(md).toContain(secret);
    expect(md).toContain('"mcp__docs|https://mcp.example.com/mcp"'); // pi's own key in mcp-auth.json
  });

  for (const format of ["markdown", "json", "html"]) {
    it(`${format}: no secret in any encoding; settings, URLs and names intact`, async () => {
      const out = (await ok(sb, ["export", session.sessionId, "--redact", "-f", format], { env: ENV })).stdout;
      const texts = searchable(format, out);
      expect(leaks(texts, SECRETS)).toEqual([]);
      const all = texts.join("\n");
      expect(all).toContain("[REDACTED:mcp-auth.json docs]");
      expect(all).toContain("[REDACTED:mcp.json tools]");
      expect(all).toContain("[REDACTED:mcp.json tools $GH_PAT]");
      for (const plain of ["https://mcp.example.com/mcp", "debug-verbose-mode", "dyn-client-1", "docs:read", "tools-mcp"]) expect(all).toContain(plain);
    });
  }
});
