// `export --redact` against a session made by pi's own agent loop, where secrets hide the way
// they do in real sessions: after a JSON `\n` escape, after a URL-encoded quote, glued to a
// prefix, as a property name in tool arguments, inside a PEM block, base64-encoded by a tool, and
// as custom values from auth.json / models.json that match no known key shape. Every output
// (Markdown, JSON, HTML with its embedded base64 session) is searched in every encoding.

import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok } from "../helpers/cli.js";
import { fauxText, fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { makeSandbox, writeFileExact, type Sandbox } from "../helpers/tmp.js";
import { leaks, searchable } from "./redact-search.js";

// Key shapes, each planted in one hiding form.
const ANTH_ESCAPED = "sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z-Q7rT0uV"; // after a literal `\n`
const ANTH_GLUED = "sk-ant-api03-Gl7uEdPr3fIxK3yZ9aB2cD5eF8gH1iJ4kL"; // as key_sk-ant-…
const OPENAI_PCT = "sk-proj-Pc7tEnC0d3dQu0t3Zz9Yy8Xx7Ww6Vv5Uu4"; // after %22
const ANTH_PROP = "sk-ant-api03-Pr0pErTyNaMe9Xx8Yy7Zz6Ww5Vv4Uu3Tt"; // a JSON property name
const GITHUB = "ghp_Gh1tHuBt0kEnA1b2C3d4E5f6G7h8I9j0K1"; // that property's value
const PEM_LINES = ["MIIEpAIBAAKCAQEAx7Pq3Lm9Vn2Wr8Ts4Yu6Zi1Oa5Sd0Fg7Hj3Kl9Qw2Er8Ty4Ui", "Zx6Cv2Bn8Mq4Wp0Ol7Ik3Uj9Yh5Tg1Rf6Ed2Ws8Qa4Zx0Cv7Bn3Mq9Wp5Ol1Ik6UjHh"];
const PEM = ["-----BEGIN RSA PRIVATE KEY-----", ...PEM_LINES, "Yh2Tg==", "-----END RSA PRIVATE KEY-----"].join("\n");
// Values from the agent dir that look like nothing in particular.
const AUTH_KEY = "pgk.Custom/Key+Value=7Hq2Wm"; // auth.json api_key; special characters, so every encoding differs
const OAUTH_ACCESS = "oat.Acc3ssT0kenForTest.zzZZ99"; // auth.json oauth access, appears base64-encoded
const OAUTH_REFRESH = "rft-Refr3shT0ken-Custom-8811"; // auth.json oauth refresh
const MODELS_KEY = "mdl_Lit3ralProviderKey_42xyz"; // models.json apiKey
const MODELS_HEADER = "hdr-Team-T0ken-Value-5150"; // models.json header value
const ENV_VALUE = "envResolvedSecret-9931-abc"; // models.json apiKey names $ACME_ENV_KEY, which holds this

/** Each secret with the hiding place it was planted in, for a readable failure. */
const SECRETS: [string, string][] = [
  [ANTH_ESCAPED, "after a \\n escape"],
  [ANTH_GLUED, "glued prefix key_"],
  [OPENAI_PCT, "after %22"],
  [ANTH_PROP, "JSON property name"],
  [GITHUB, "value of that property"],
  ...PEM_LINES.map((l): [string, string] => [l, "PEM block"]),
  [AUTH_KEY, "auth.json api key"],
  [OAUTH_ACCESS, "auth.json oauth access, base64 in tool output"],
  [OAUTH_REFRESH, "auth.json oauth refresh"],
  [MODELS_KEY, "models.json apiKey"],
  [MODELS_HEADER, "models.json header"],
  [ENV_VALUE, "models.json apiKey via $ACME_ENV_KEY"],
];

// Ordinary text that must come through untouched.
const PROSE = "The risk-assessment-for-the-new-module-2024 is ready; ask the task-runner-configuration owner.";
const CODE = [
  "import { tokenize } from './lexer';",
  "const password = getPassword();",
  "const secret = process.env.SECRET;",
  "headers['Authorization'] = `Bearer ${token}`;",
  "export const MAX_TOKENS = 4096; // sk-learn and mask-rcnn-resnet50 are model names",
].join("\n");

const ENV = { ACME_ENV_KEY: ENV_VALUE };

let sb: Sandbox;
let session: PiSessionResult;

beforeAll(async () => {
  sb = makeSandbox("redact");
  writeFileExact(
    path.join(sb.agentDir, "auth.json"),
    JSON.stringify({ acme: { type: "api_key", key: AUTH_KEY }, "github-copilot": { type: "oauth", access: OAUTH_ACCESS, refresh: OAUTH_REFRESH, expires: 1893456000000 } }, null, 2),
    0o600,
  );
  writeFileExact(
    path.join(sb.agentDir, "models.json"),
    JSON.stringify(
      {
        providers: {
          acme: { baseUrl: "https://llm.acme.test/v1", api: "openai-completions", apiKey: MODELS_KEY, headers: { "X-Team-Token": MODELS_HEADER }, models: [{ id: "acme-large" }] },
          acme2: { baseUrl: "https://llm2.acme.test/v1", api: "openai-completions", apiKey: "ACME_ENV_KEY", models: [{ id: "acme-small" }] },
        },
      },
      null,
      2,
    ),
    0o644,
  );
  const cwd = path.join(sb.root, "work", "deploy");
  mkdirSync(cwd, { recursive: true });
  // A config file whose JSON text holds a key right after a `\n` escape.
  writeFileSync(path.join(cwd, "config.json"), `{"log": "started\\n${ANTH_ESCAPED}\\nok", "token_refresh": "${OAUTH_REFRESH}"}\n`);
  writeFileSync(path.join(cwd, "id_rsa"), PEM + "\n");
  writeFileSync(path.join(cwd, "normal.ts"), CODE + "\n");
  session = await makePiSession({
    agentDir: sb.agentDir,
    cwd,
    turns: [
      {
        user: `My key is ${AUTH_KEY} and the team header is ${MODELS_HEADER}. Call https://api.example.test/v1?auth=%22${OPENAI_PCT}%22&k=${encodeURIComponent(AUTH_KEY)} please. ${PROSE}`,
        assistant: [[fauxText("Reading the config."), fauxToolCall("read", { path: "config.json" }), fauxToolCall("read", { path: "normal.ts" })], `Read it. ${PROSE}`],
      },
      {
        user: "Now check the deploy key and the environment.",
        assistant: [
          [fauxToolCall("bash", { command: `echo key_${ANTH_GLUED}; echo ${MODELS_KEY} ${ENV_VALUE}; printf %s '${OAUTH_ACCESS}' | base64` }), fauxToolCall("read", { path: "id_rsa" })],
          // The model writes the key to a file and puts a token in a property name of the arguments.
          [fauxToolCall("write", { path: "copy.txt", content: `copy of the key\n${PEM}\n`, [ANTH_PROP]: GITHUB })],
          "All done.",
        ],
        name: `Deploy notes key_${ANTH_GLUED}`,
      },
    ],
  });
}, 60_000);

afterAll(() => sb?.cleanup());

describe("export --redact with secrets in every hiding place", () => {
  it("the plain export really holds every secret (else the test proves nothing)", async () => {
    const md = (await ok(sb, ["export", session.sessionId], { env: ENV })).stdout;
    for (const s of [`\\n${ANTH_ESCAPED}`, `key_${ANTH_GLUED}`, `%22${OPENAI_PCT}`, ANTH_PROP, GITHUB, ...PEM_LINES, AUTH_KEY, encodeURIComponent(AUTH_KEY), OAUTH_REFRESH, Buffer.from(OAUTH_ACCESS).toString("base64"), MODELS_KEY, MODELS_HEADER, ENV_VALUE]) {
      expect(md).toContain(s);
    }
    const json = (await ok(sb, ["export", session.sessionId, "-f", "json"], { env: ENV })).stdout;
    expect(json).toContain(`"${ANTH_PROP}":`); // a property name in the tool arguments
  });

  for (const format of ["markdown", "json", "html"]) {
    it(`${format}: no secret in any encoding, ordinary text intact`, async () => {
      const out = (await ok(sb, ["export", session.sessionId, "--redact", "-f", format], { env: ENV })).stdout;
      const texts = searchable(format, out);
      expect(leaks(texts, SECRETS)).toEqual([]);
      const all = texts.join("\n");
      // Masks say where a value came from, never what it was.
      expect(all).toContain("[REDACTED]");
      expect(all).toContain("[REDACTED:auth.json acme]");
      expect(all).toContain("[REDACTED:models.json acme]");
      // Ordinary prose and code survive byte for byte (in the decoded strings for JSON and HTML).
      const plain = format === "markdown" ? out : texts[texts.length - 1];
      expect(plain).toContain(PROSE);
      expect(plain).toContain(CODE);
      expect(plain).toContain("copy of the key");
      if (format === "html") expect(out).toMatch(/<title>Deploy notes key_\[REDACTED\]<\/title>/);
      if (format === "json") expect(JSON.parse(out).name).toBe("Deploy notes key_[REDACTED]");
    });
  }

  it("an auth.json that cannot be read stops a redacted export instead of leaking its keys", async () => {
    const auth = path.join(sb.agentDir, "auth.json");
    const saved = (await import("node:fs")).readFileSync(auth);
    rmSync(auth);
    mkdirSync(auth); // EISDIR: unreadable whatever our uid
    try {
      const r = await cli(sb, ["export", session.sessionId, "--redact"], { env: ENV });
      expect(expectOneLineError(r, 1)).toMatch(/--redact cannot read .*auth\.json/);
      expect(r.stdout).not.toContain(AUTH_KEY);
    } finally {
      rmSync(auth, { recursive: true });
      writeFileExact(auth, saved, 0o600);
    }
  });
});
