// The secret files of every detected agent, for `export --redact` of any session: pi's auth.json
// and Claude Code's .credentials.json and settings env, found through the registry's adapters.

import { mkdirSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { detectedAgentSecrets, secretsInFile } from "../../src/agents/secrets.js";
import { loadConfig } from "../../src/config/config.js";
import { makeSandbox, writeFileExact } from "../helpers/tmp.js";

const sb = makeSandbox("agent-secrets");
afterAll(() => sb.cleanup());

describe("secrets of every detected agent", () => {
  it("collects pi's and Claude Code's credentials, longest first, and nothing that only describes them", async () => {
    const piKey = "sk-ant-api03-pi-0123456789abcdef0123456789";
    writeFileExact(path.join(sb.agentDir, "auth.json"), JSON.stringify({ anthropic: { type: "api_key", key: piKey } }), 0o600);
    const claude = path.join(sb.home, ".claude");
    mkdirSync(claude, { recursive: true });
    const access = "sk-ant-oat01-claude-access-0123456789abcdefghij-longer";
    writeFileExact(path.join(claude, ".credentials.json"), JSON.stringify({ claudeAiOauth: { accessToken: access, refreshToken: "sk-ant-ort01-refresh-9876543210", expiresAt: 1893456000000, scopes: ["user:inference"], subscriptionType: "max" } }), 0o600);
    writeFileExact(path.join(claude, "settings.json"), JSON.stringify({ env: { ANTHROPIC_AUTH_TOKEN: "tok-from-settings-123456" }, cleanupPeriodDays: 30 }), 0o644);
    const values = (await detectedAgentSecrets(loadConfig({}, sb.env))).map((s) => s.value);
    expect(values).toEqual(expect.arrayContaining([piKey, access, "sk-ant-ort01-refresh-9876543210", "tok-from-settings-123456"]));
    expect(values).not.toContain("max");
    expect(values).not.toContain("user:inference");
    expect([...values].sort((a, b) => b.length - a.length)).toEqual(values);
  });

  it("a damaged credentials file still gives its random-looking words", () => {
    const found = secretsInFile('{"accessToken": "abc123def456ghi789jkl", ', { root: "claude", path: ".credentials.json", kind: "whole", what: "" });
    expect(found.map((s) => s.value)).toEqual(["abc123def456ghi789jkl"]);
  });
});
