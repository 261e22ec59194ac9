// The redactor on its own: every known key shape in every hiding form, ordinary prose and code
// left alone, property names, image data, escapes in rendered text, and what is read from
// auth.json / models.json.

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { VIEWER_JS } from "../../src/export/html-client.js";
import { VIEWER_CSS } from "../../src/export/html-style.js";
import { makeRedactor, redactDeep, redactRendered, REDACTED } from "../../src/export/redact.js";
import { agentSecrets } from "../../src/export/secrets.js";
import { makeSandbox } from "../helpers/tmp.js";

const redact = makeRedactor([]);

// Fake keys of every shape; each must vanish wherever it sits.
const SHAPES: Record<string, string> = {
  anthropic: "sk-ant-api03-Xq3Lm9Vn2Wr8Ts4Yu6Zi1Oa5Sd0Fg7Hj3Kl-9Qw2Er8",
  openai: "sk-Tq4Bm8Nc2Vx6Zl0Kj3Hg7Fd1Sa5Pq9Wo2Ei6Ru4Ty8Ui0P",
  "openai project": "sk-proj-Rb7Nm3Lk9Jh5Gf1Ds8Az4Xc6Vb2Nm0Qw-Lk7Jh3",
  deepseek: "sk-0123456789abcdef0123456789abcdef",
  "github ghp": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
  "github gho": "gho_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",
  "github ghu": "ghu_M1n2B3v4C5x6Z7l8K9j0H1g2F3d4S5a6P7o8",
  "github ghs": "ghs_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8",
  "github ghr": "ghr_L1k2J3h4G5f6D7s8A9p0O1i2U3y4T5r6E7w8",
  "github pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789",
  "aws key id": "AKIAIOSFODNN7EXAMPLE",
  "aws session key id": "ASIAY34FZKBOKMUTVV7A",
  google: "AIzaSyD4x7Q2m9Lp3Vn8Wr1Ts5Yu0Zi6Oa2Sd9F",
  "slack bot": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
  "slack app": "xapp-1-A0123456789-1234567890123-abcdef0123456789",
  jwt: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
};

// Every place a key hides in session text: plain, after a JSON `\n`, after `%22`, glued to a
// word, as a JSON property name, inside a quoted JSON value that was escaped once more.
const HIDING: Record<string, (k: string) => string> = {
  plain: (k) => `the key is ${k} ok`,
  "after \\n": (k) => `{"log":"line\\n${k}\\nmore"}`,
  "after %22": (k) => `https://x.test/?q=%22${k}%22&z=1`,
  glued: (k) => `key_${k}`,
  "property name": (k) => JSON.stringify({ [k]: "value" }),
  "double escaped": (k) => JSON.stringify(JSON.stringify({ token: `\n${k}` })),
};

/** The part of a key that must not survive (its prefix alone is harmless). */
const body = (k: string) => k.slice(Math.max(4, k.length - 16));

describe("key shapes in every hiding place", () => {
  for (const [shape, key] of Object.entries(SHAPES)) {
    it(shape, () => {
      for (const [where, wrap] of Object.entries(HIDING)) {
        const text = wrap(key);
        for (const out of [redact(text), redact(text, { rendered: true })]) {
          expect(out, `${shape} ${where}`).not.toContain(body(key));
          expect(out, `${shape} ${where}`).toContain(REDACTED);
        }
      }
    });
  }

  it("tokens that need their context: Bearer, Authorization, aws_secret_access_key, assignments", () => {
    const cases = [
      "curl -H 'Authorization: Bearer abcDEF0123456789ghiJKL'",
      '{"headers":{"Authorization":"Basic dXNlcjpwYXNzd29yZDEyMw=="}}',
      JSON.stringify('curl -H "authorization: token 9f8e7d6c5b4a39281706f5e4"'),
      "GET /?h=Authorization%3A%20Bearer%20abcDEF0123456789ghiJKL",
      "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      '{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
      "export OPENAI_API_KEY=x9Ab7Cd5Ef3Gh1Ij",
      'DB_PASSWORD="hunter2-Correct7"',
      JSON.stringify('{"client_secret":"cs_7Yh3Jk9Lm1Np5Qr"}'),
    ];
    const secrets = ["abcDEF0123456789ghiJKL", "dXNlcjpwYXNzd29yZDEyMw==", "9f8e7d6c5b4a39281706f5e4", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "x9Ab7Cd5Ef3Gh1Ij", "hunter2-Correct7", "cs_7Yh3Jk9Lm1Np5Qr"];
    for (const text of cases) {
      const out = redact(text, { rendered: true });
      for (const s of secrets) expect(out, text).not.toContain(s);
      expect(out, text).toContain(REDACTED);
    }
  });

  it("PEM private keys: raw, JSON-escaped, PGP, and cut off", () => {
    const lines = ["MIIEowIBAAKCAQEA3x7Pq3Lm9Vn2Wr8Ts4Yu6Zi1Oa5Sd0Fg7Hj3Kl9Qw2Er8Ty4U", "Bn8Mq4Wp0Ol7Ik3Uj9Yh5Tg1Rf6Ed2Ws8Qa4Zx0Cv7Bn3Mq9Wp5Ol1Ik6Uj2Hh8Y"];
    const pem = (kind: string, end = true) => [`-----BEGIN ${kind}-----`, ...lines, "Tg4=", ...(end ? [`-----END ${kind}-----`] : [])].join("\n");
    const texts = [
      `key:\n${pem("RSA PRIVATE KEY")}\nafter`,
      JSON.stringify({ content: pem("OPENSSH PRIVATE KEY") }),
      `x ${pem("PGP PRIVATE KEY BLOCK")} y`,
      `$ head -4 id_ed25519\n${pem("PRIVATE KEY", false)}\n$ echo done`,
      JSON.stringify(`cut: ${pem("EC PRIVATE KEY", false)}`),
    ];
    for (const text of texts) {
      const out = redact(text, { rendered: true });
      for (const l of lines) expect(out, text).not.toContain(l.slice(10, 30));
      expect(out).not.toContain("Tg4=");
    }
    // Text after a cut-off key is kept.
    expect(redact(texts[3])).toMatch(/\[REDACTED\]\n\$ echo done$/);
    // A public key is not a secret.
    const pub = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----";
    expect(redact(pub)).toBe(pub);
  });
});

describe("ordinary text is left alone", () => {
  const ORDINARY = [
    "The risk-assessment-for-the-new-module-2024 is in the task-runner-configuration folder.",
    "Ask the desk-lamp-with-long-name-here team; sk-learn and mask-rcnn-resnet50-fpn-coco-2017 are model names.",
    "import { readFileSync } from 'node:fs';\nconst tokens = tokenizer.encode(text); // authorization header is required",
    "const password = getPassword();\nconst secret = process.env.SECRET;\napi_key = os.environ['API_KEY']",
    "apiKey: config.apiKey, token: string, refreshToken?: string",
    "headers['Authorization'] = `Bearer ${token}`;",
    "The bearer of bad news brings tokenization approaches to ASIA and AKIA is short.",
    "git commit -m 'fix: handle ghp_ prefix in the parser' && echo sk-",
    "SHA256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "uuid 3b241101-e2bb-4255-8caf-4136c566a962 and id 01HZX3V9K2M8Q4R7T1W5Y6Z0AB",
    '{"type":"message","id":"a1b2c3d4","parentId":null,"message":{"role":"user","content":"hi"}}',
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJRTESMBAGA1UE\n-----END CERTIFICATE-----",
  ];
  it("prose, code, hashes, ids and certificates come through byte for byte", () => {
    for (const text of ORDINARY) {
      expect(redact(text)).toBe(text);
      expect(redact(JSON.stringify(text), { rendered: true })).toBe(JSON.stringify(text));
    }
  });

  it("the HTML viewer's own script and style are not touched by the last pass", () => {
    expect(redact(VIEWER_JS, { rendered: true })).toBe(VIEWER_JS);
    expect(redact(VIEWER_CSS, { rendered: true })).toBe(VIEWER_CSS);
  });
});

describe("known values from the agent dir", () => {
  const value = "Zq/8+custom=Val\"ue7";
  const known = makeRedactor([{ value, label: "auth.json acme" }]);
  it("are masked raw, JSON-escaped, URL-encoded in either case, and base64 at any alignment", () => {
    const url = encodeURIComponent(value);
    const lowerHex = url.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
    const forms = [value, JSON.stringify(value).slice(1, -1), url, lowerHex, url.replace(/%20/g, "+")];
    for (const prefix of ["", "a", "ab"]) forms.push(Buffer.from(prefix + value + "tail").toString("base64"), Buffer.from(prefix + value).toString("base64url"));
    for (const f of forms) {
      const out = known(`before ${f} after`);
      expect(out, f).toContain("[REDACTED:auth.json acme]");
      expect(out, f).not.toContain(f);
    }
  });

  it("in image data only the exact values are masked, so key shapes in base64 cannot corrupt an image", () => {
    const data = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47]), Buffer.alloc(20, 7)]).toString("base64") + "AKIAABCDEFGHIJKLMNOP" + "AIza" + "B".repeat(36);
    const block = { type: "image", mimeType: "image/png", data };
    expect(redactDeep(block, redact)).toEqual(block);
    const withKey = { type: "image", mimeType: "image/png", data: Buffer.from(`xx${value}yy`).toString("base64") };
    expect(redactDeep(withKey, known).data).toContain("[REDACTED:auth.json acme]");
    // "image" data that is not base64 gets the full treatment.
    expect(redactDeep({ type: "image", data: `raw ${SHAPES.anthropic}` }, redact).data).toBe(`raw ${REDACTED}`);
  });

  it("a match that starts inside an escape of rendered JSON is not the value, and the JSON stays valid", () => {
    const k = makeRedactor([{ value: "trustno1-secret", label: "auth.json x" }]);
    const rendered = JSON.stringify({ path: "C:\trustno1-secret", real: "a trustno1-secret" });
    const out = redactRendered(rendered, k);
    expect(JSON.parse(out)).toEqual({ path: "C:\trustno1-secret", real: "a [REDACTED:auth.json x]" });
  });
});

describe("redactDeep: keys and values", () => {
  it("masks property names, keeps colliding ones apart, and masks values under secret-sounding names", () => {
    const args = { [SHAPES.anthropic]: 1, [SHAPES["github ghp"]]: 2, apiKey: "plainvalue99", headers: { "x-api-key": "abcdefgh123", "content-type": "application/json" }, note: "apiKey is config.apiKey" };
    expect(redactDeep({ args }, redact)).toEqual({
      args: { [REDACTED]: 1, [`${REDACTED}#2`]: 2, apiKey: REDACTED, headers: { "x-api-key": REDACTED, "content-type": "application/json" }, note: "apiKey is config.apiKey" },
    });
  });
});

describe("redactRendered on an HTML page", () => {
  it("decodes the embedded session, masks it and re-encodes it", () => {
    const payload = Buffer.from(JSON.stringify({ entries: [{ text: `x\\n${SHAPES.openai}` }] })).toString("base64");
    const page = `<title>t</title><script id="session-data" type="application/json">${payload}</script><p>${SHAPES.google}</p>`;
    const out = redactRendered(page, redact);
    const embedded = Buffer.from(/type="application\/json">([^<]*)</.exec(out)![1], "base64").toString();
    expect(JSON.parse(embedded)).toEqual({ entries: [{ text: `x\\n${REDACTED}` }] });
    expect(out).not.toContain(SHAPES.google);
  });
});

describe("agentSecrets: what auth.json and models.json give", () => {
  const sb = makeSandbox("redact-secrets");
  afterAll(() => sb.cleanup());

  it("credentials and header values, not model ids, settings or descriptive fields; env names resolved; commands not run", async () => {
    mkdirSync(sb.agentDir, { recursive: true });
    writeFileSync(
      path.join(sb.agentDir, "auth.json"),
      JSON.stringify({ anthropic: { type: "api_key", key: "plain-api-key-1" }, copilot: { type: "oauth", access: "acc.tok.123", refresh: "ref-tok-456", expires: 1, enterpriseUrl: "company.example" } }),
    );
    writeFileSync(
      path.join(sb.agentDir, "models.json"),
      JSON.stringify({
        providers: {
          acme: { baseUrl: "https://acme.example/v1", api: "openai-completions", apiKey: "ACME_KEY", headers: { Authorization: "Bearer hdr-bearer-789", "X-Org": "org-acme-team", "Content-Type": "application/json", "X-Trace": "tr4ce-7f3a9c2e1b5d" }, compat: { maxTokensField: "max_completion_tokens" }, models: [{ id: "qwen2.5-coder-32b-instruct", headers: { "X-Model-Key": "model-hdr-000" } }] },
          cmd: { apiKey: "!security find-generic-password -s acme -w" },
          unset: { apiKey: "UNSET_VARIABLE_NAME" },
          loop: { apiKey: "LOOP_A" },
        },
      }),
    );
    // LOOP_A and LOOP_B name each other: resolved once, never in a loop.
    const found = await agentSecrets(sb.agentDir, { ACME_KEY: "from-the-environment-42", LOOP_A: "LOOP_B", LOOP_B: "LOOP_A" });
    const byValue = new Map(found.map((s) => [s.value, s.label]));
    expect([...byValue.keys()].sort()).toEqual(
      ["plain-api-key-1", "acc.tok.123", "ref-tok-456", "from-the-environment-42", "Bearer hdr-bearer-789", "hdr-bearer-789", "tr4ce-7f3a9c2e1b5d", "model-hdr-000"].sort(),
    );
    expect(byValue.get("plain-api-key-1")).toBe("auth.json anthropic");
    expect(byValue.get("from-the-environment-42")).toBe("models.json acme $ACME_KEY");
  });

  it("a file that is not valid JSON still gives up its quoted strings", async () => {
    const dir = sb.dir("broken");
    writeFileSync(path.join(dir, "auth.json"), '{"anthropic": {"type": "api_key", "key": "broken-file-key-77"},,,');
    expect((await agentSecrets(dir, {})).map((s) => s.value)).toContain("broken-file-key-77");
  });
});

describe("hostile input cannot stall the redactor", () => {
  // Before the name prefix was bounded, the first of these backtracked quadratically (minutes at
  // this size); each now finishes well inside the test's default timeout.
  it("long runs of almost-matches come back unchanged", () => {
    const inputs = [
      "a_".repeat(100_000) + "password",
      "sk-" + "a-".repeat(100_000),
      "-----BEGIN PRIVATE KEY-----" + "\nAAAA".repeat(50_000) + "\n-----END PUBLIC KEY-----",
      "password" + ' "\\"'.repeat(50_000),
      "Bearer ".repeat(50_000),
      "%22".repeat(100_000) + "sk",
      "authorization: ".repeat(30_000),
    ];
    for (const text of inputs) {
      const out = redact(text, { rendered: true });
      if (!text.startsWith("-----BEGIN")) expect(out).toBe(text);
      else expect(out).not.toContain("AAAA\nAAAA"); // a cut-off key: its lines are masked
    }
  });
});

describe("MCP OAuth state by its names (pi 1.x mcp-auth.json), for tokens the file no longer holds", () => {
  it("an old mcp-auth.json printed in a session: id_token, codeVerifier, refresh and access tokens are masked, URLs stay", () => {
    const old = JSON.stringify({ "mcp__docs|https://mcp.example.com/mcp": { serverUrl: "https://mcp.example.com/mcp", tokens: { access_token: "oldAcc3ss.T0ken.1", token_type: "Bearer", refresh_token: "oldRefr3sh.T0ken.2", id_token: "oldIdT0ken.Signed.3" }, codeVerifier: "oldV3rifier.PKCE.4abcdefghij" } }, null, 2);
    const out = redact(old);
    for (const secret of ["oldAcc3ss", "oldRefr3sh", "oldIdT0ken", "oldV3rifier"]) expect(out).not.toContain(secret);
    expect(out).toContain('"serverUrl": "https://mcp.example.com/mcp"');
    expect(out).toContain('"token_type": "Bearer"');
  });
});
