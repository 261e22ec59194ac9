// `doctor` knows the files pi keeps in the agent dir, pi 1.x's new ones included (mcp.json,
// mcp-auth.json, trust.json, crashes.json, models-store.json), as it knows auth.json: what each
// is, whether the last snapshot holds it, and whether others can read the ones with credentials.
// pi 1.6.0 writes every one of them itself (test/helpers/pi1-mcp.ts).

import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, initRepo, ok, snapshot } from "../helpers/cli.js";
import { piMcpAdd, piMcpSaveOAuth, piWriteStateFiles } from "../helpers/pi1-mcp.js";
import { makeSandbox, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";

interface DoctorJson {
  ok: boolean;
  checks: { name: string; status: "ok" | "warn" | "error"; message: string; fix?: string }[];
}

const MCP_HEADER = "hdrK3y.Docs.77aa19Qz";
const MCP_TOKEN = "mcpAcc3ss.T0ken.xyz.123";
const NEW_FILES = ["mcp.json", "mcp-auth.json", "trust.json", "crashes.json", "models-store.json"];

let sb: Sandbox;
const doctor = async () => (await cli(sb, ["doctor", "--json"])).json<DoctorJson>();
const check = (r: DoctorJson, name: string) => r.checks.find((c) => c.name === name);

beforeAll(async () => {
  sb = makeSandbox("doctor-files");
  writePiConfigFiles(sb.agentDir);
  mkdirSync(sb.sessionsDir, { recursive: true });
  piMcpAdd(sb.home, sb.agentDir, ["docs", "--url", "https://mcp.example.com/mcp", "--header", `X-Api-Key=${MCP_HEADER}`]);
  piMcpSaveOAuth(sb.home, sb.agentDir, "docs", { serverUrl: "https://mcp.example.com/mcp", tokens: { access_token: MCP_TOKEN, token_type: "Bearer" } });
  await initRepo(sb);
}, 60_000);

afterAll(() => sb?.cleanup());

describe("doctor and pi's agent dir files", () => {
  it("names each present file with what it is, its mode and whether the last snapshot holds it; warns about a readable mcp.json with credentials", async () => {
    const snap = await snapshot(sb);
    const short = snap.snapshotId.slice(0, 8);
    // pi wrote mcp.json 0644 and mcp-auth.json 0600 itself.
    expect(statSync(path.join(sb.agentDir, "mcp.json")).mode & 0o777).toBe(0o644);
    expect(statSync(path.join(sb.agentDir, "mcp-auth.json")).mode & 0o777).toBe(0o600);
    const r = await doctor();
    expect(check(r, "auth.json")).toMatchObject({ status: "ok" });
    expect(check(r, "auth.json")!.message).toContain(`API keys and OAuth tokens of model providers; holds credentials, mode 600; in snapshot ${short}`);
    expect(check(r, "mcp-auth.json")).toMatchObject({ status: "ok" });
    expect(check(r, "mcp-auth.json")!.message).toContain(`MCP OAuth tokens and client registrations, pi 1.x; holds credentials, mode 600; in snapshot ${short}`);
    const mcp = check(r, "mcp.json")!;
    expect(mcp).toMatchObject({ status: "warn", fix: `chmod 600 ${path.join(sb.agentDir, "mcp.json")}` });
    expect(mcp.message).toMatch(/MCP servers, pi 1\.x .*holds credentials, mode 644; in snapshot .*readable by others/);
    // models.json with no key in it is not a secret, whatever its mode.
    expect(check(r, "models.json")).toMatchObject({ status: "ok" });
    expect(check(r, "models.json")!.message).not.toContain("holds credentials");
    expect(check(r, "agent files")!.message).toBe("not present (pi writes them when needed): trust.json, crashes.json, models-store.json");
  });

  it("a file pi wrote after the last snapshot is named as not backed up, until a snapshot holds it", async () => {
    piWriteStateFiles(sb.home, sb.agentDir, path.join(sb.root, "work"));
    chmodSync(path.join(sb.agentDir, "mcp.json"), 0o600);
    let r = await doctor();
    for (const name of ["trust.json", "crashes.json", "models-store.json"]) {
      expect(check(r, name), name).toMatchObject({ status: "warn", fix: expect.stringContaining("pi-guard snapshot now") });
      expect(check(r, name)!.message).toMatch(/NOT in the last snapshot [0-9a-f]{8}\): lost with the agent dir, it cannot be restored/);
    }
    expect(check(r, "mcp.json")).toMatchObject({ status: "ok" });
    expect(check(r, "agent files")).toBeUndefined();
    await snapshot(sb);
    r = await doctor();
    for (const name of ["auth.json", "models.json", "settings.json", ...NEW_FILES]) expect(check(r, name), name).toMatchObject({ status: "ok", message: expect.stringMatching(/; in snapshot [0-9a-f]{8}\)$/) });
    expect(check(r, "crashes.json")!.message).toContain("crash records for the next /bug report, pi 1.x");
    expect(check(r, "trust.json")!.message).toContain("project trust decisions, pi 1.x");
  });

  it("an mcp-auth.json others can read is a warning with the chmod that fixes it", async () => {
    const file = path.join(sb.agentDir, "mcp-auth.json");
    chmodSync(file, 0o644);
    try {
      const c = check(await doctor(), "mcp-auth.json")!;
      expect(c).toMatchObject({ status: "warn", fix: `chmod 600 ${file}` });
      expect(c.message).toContain("is readable by others: its credentials are");
    } finally {
      chmodSync(file, 0o600);
    }
  });

  it("restore puts pi 1.x's secret files back byte for byte with their 0600, and no byte of them is stored or logged in the clear", async () => {
    const files = ["mcp-auth.json", "mcp.json"];
    chmodSync(path.join(sb.agentDir, "mcp.json"), 0o600); // as doctor's fix says (pi wrote it 0644)
    const before = new Map(files.map((f) => [f, readFileSync(path.join(sb.agentDir, f))]));
    const snap = await snapshot(sb);
    for (const f of files) rmSync(path.join(sb.agentDir, f));
    const restored = await ok(sb, ["restore", snap.snapshotId, ...files.flatMap((f) => ["--path", f])]);
    for (const f of files) {
      expect(readFileSync(path.join(sb.agentDir, f)).equals(before.get(f)!), f).toBe(true);
      expect(statSync(path.join(sb.agentDir, f)).mode & 0o777, f).toBe(0o600);
    }
    // The repository, pi-guard's caches, state and logs, and what it printed: never the plaintext.
    const clear: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (p === sb.agentDir) continue;
        if (e.isDirectory()) walk(p);
        else if (e.isFile() && [MCP_HEADER, MCP_TOKEN].some((v) => readFileSync(p).includes(v))) clear.push(p);
      }
    };
    walk(sb.root);
    expect(clear).toEqual([]);
    expect(restored.stdout + restored.stderr).not.toMatch(/hdrK3y|mcpAcc3ss/);
  });
});
