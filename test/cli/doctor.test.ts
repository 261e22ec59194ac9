import { chmodSync, copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cli, initRepo, ok, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, sha256File, writePiConfigFiles } from "../helpers/tmp.js";

interface DoctorJson {
  ok: boolean;
  checks: { name: string; status: "ok" | "warn" | "error"; message: string; fix?: string; paths?: string[] }[];
}

const statusOf = (r: DoctorJson, name: string) => r.checks.find((c) => c.name === name)?.status;

describe("pi-guard doctor", () => {
  let sb: Sandbox;
  afterEach(() => sb.cleanup());

  it("passes a healthy setup and names the last snapshot", async () => {
    sb = makeSandbox("doctor");
    mkdirSync(sb.sessionsDir, { recursive: true });
    await initRepo(sb);
    const snap = await snapshot(sb);
    const r = (await ok(sb, ["doctor", "--json"])).json<DoctorJson>();
    expect(r.ok).toBe(true);
    expect(r.checks.find((c) => c.name === "last snapshot")?.message).toContain(snap.snapshotId.slice(0, 8));
  });

  it("fails when the repository lives inside the agent dir, and warns next to it", async () => {
    sb = makeSandbox("doctor-inside");
    mkdirSync(sb.agentDir, { recursive: true });
    const inside = await cli(sb, ["doctor", "--json"], { env: { PI_GUARD_REPO: path.join(sb.agentDir, "backups") } });
    expect(inside.code).toBe(1);
    expect(statusOf(inside.json<DoctorJson>(), "repository location")).toBe("error");
    const beside = await cli(sb, ["doctor", "--json"], { env: { PI_GUARD_REPO: path.join(sb.home, ".pi", "pi-guard") } });
    expect(statusOf(beside.json<DoctorJson>(), "repository location")).toBe("warn");
  });

  it("warns about a key file others can read and a missing agent dir", async () => {
    sb = makeSandbox("doctor-key");
    await initRepo(sb);
    chmodSync(path.join(sb.configHome, "pi-guard", "key"), 0o644);
    const r = (await cli(sb, ["doctor", "--json"])).json<DoctorJson>();
    expect(statusOf(r, "key file mode")).toBe("warn");
    expect(statusOf(r, "agent dir")).toBe("warn");
    expect(statusOf(r, "last snapshot")).toBe("warn");
  });

  describe("hazards behind the original incident", () => {
    const HEADER = '{"type":"session","version":3,"id":"0b7e1d6c-0000-4000-8000-000000000001","timestamp":"2026-11-30T10:00:00.000Z","cwd":"/home/me/proj"}';
    const entry = (id: string, parent: string | null, text: string) =>
      JSON.stringify({ type: "message", id, parentId: parent, timestamp: "2026-11-30T10:00:01.000Z", message: { role: "user", content: text } });
    const check = (r: DoctorJson, name: string) => r.checks.find((c) => c.name === name);
    const findingsOf = (r: DoctorJson) => r.checks.filter((c) => c.status !== "ok");

    it("a clean setup has none of them; every warning and error carries a one-line fix", async () => {
      sb = makeSandbox("doctor-clean");
      writePiConfigFiles(sb.agentDir);
      const project = path.join(sb.sessionsDir, "--home-me-proj--");
      mkdirSync(project, { recursive: true });
      writeFileSync(path.join(project, "good.jsonl"), `${HEADER}\n${entry("aaaaaaa1", null, "hi")}\n`);
      await initRepo(sb);
      await snapshot(sb);
      // A clean setup has a credential copied off the machine (doctor warns until one is known).
      await ok(sb, ["key", "export"]);
      const r = (await ok(sb, ["doctor", "--json"])).json<DoctorJson>();
      expect(findingsOf(r)).toEqual([]);
      expect(check(r, "session files")?.message).toMatch(/^1 session file: no torn/);
      expect(check(r, "npm project")?.status).toBe("ok");
      expect(check(r, "watcher")?.message).toMatch(/no watcher has run.*less than an hour old/);
    });

    it("names every hazard on a crafted agent dir, with a fix, and changes no file", async () => {
      sb = makeSandbox("doctor-hazards");
      writePiConfigFiles(sb.agentDir);
      const project = path.join(sb.dataHome, "real-sessions");
      mkdirSync(path.join(project, "--home-me-proj--"), { recursive: true });
      // The sessions dir is a symlink to the real folder.
      symlinkSync(project, sb.sessionsDir);
      const dir = path.join(project, "--home-me-proj--");
      const torn = path.join(dir, "torn.jsonl");
      const glued = path.join(dir, "glued.jsonl");
      const headless = path.join(dir, "headless.jsonl");
      const noNewline = path.join(dir, "no-newline.jsonl");
      writeFileSync(torn, `${HEADER}\n${entry("aaaaaaa1", null, "hi")}\n{"type":"message","id":"aaaa`);
      writeFileSync(glued, `${HEADER}\n${entry("aaaaaaa1", null, "hi")}${entry("aaaaaaa2", "aaaaaaa1", "there")}\n`);
      writeFileSync(headless, `${entry("aaaaaaa1", null, "hi")}\n`);
      writeFileSync(noNewline, `${HEADER}\n${entry("aaaaaaa1", null, "hi")}`);
      // The incident's npm project, and a package.json beside the agent dir.
      mkdirSync(path.join(sb.agentDir, "npm", "node_modules"), { recursive: true });
      writeFileSync(path.join(sb.agentDir, "npm", "package.json"), "{}");
      writeFileSync(path.join(sb.home, ".pi", "package.json"), "{}");
      writeFileSync(path.join(sb.home, ".npmrc"), "registry=https://registry.npmjs.org/\nprefix=~/.pi/agent/npm-global\n");
      await initRepo(sb);
      // A stray repository and a key file copied into the agent dir.
      const stray = path.join(sb.agentDir, "old-backups", "repo");
      mkdirSync(path.join(stray, "keys"), { recursive: true });
      mkdirSync(path.join(stray, "snapshots"), { recursive: true });
      writeFileSync(path.join(stray, "config"), "x");
      copyFileSync(path.join(sb.configHome, "pi-guard", "key"), path.join(sb.agentDir, "old-backups", "key"));
      const before = [torn, glued, headless, noNewline].map(sha256File);

      const r = await cli(sb, ["doctor", "--json"]);
      // Hazards are warnings: the setup works today, so the exit code stays 0.
      expect(r.code, r.stderr).toBe(0);
      const j = r.json<DoctorJson>();
      const names = findingsOf(j).map((c) => c.name);
      expect(names).toEqual(
        expect.arrayContaining(["npm project", "npm prefix", "repository in agent dir", "key in agent dir", "sessions symlink", "torn last line", "glued entries", "missing header", "watcher"]),
      );
      for (const c of findingsOf(j)) {
        expect(c.fix, c.name).toMatch(/\S/);
        expect(c.fix, c.name).not.toContain("\n");
      }
      expect(check(j, "npm project")?.paths?.sort()).toEqual(
        [path.join(sb.agentDir, "npm", "package.json"), path.join(sb.agentDir, "npm", "node_modules"), path.join(sb.home, ".pi", "package.json")].sort(),
      );
      expect(check(j, "npm prefix")?.message).toContain("~/.pi/agent/npm-global");
      expect(check(j, "npm prefix")?.fix).toContain(path.join(sb.home, ".npmrc"));
      expect(check(j, "repository in agent dir")?.paths).toEqual([stray]);
      expect(check(j, "key in agent dir")?.paths).toEqual([path.join(sb.agentDir, "old-backups", "key")]);
      expect(check(j, "sessions symlink")?.message).toContain(project);
      expect(check(j, "sessions symlink")?.fix).toContain(`"sessionDir": "${project}"`);
      // Named as pi names them: through the sessions dir (here the symlink).
      const seen = (f: string) => path.join(sb.sessionsDir, path.relative(project, f));
      expect(check(j, "torn last line")?.paths?.sort()).toEqual([noNewline, torn].map(seen).sort());
      expect(check(j, "glued entries")?.paths).toEqual([glued].map(seen));
      expect(check(j, "missing header")?.paths).toEqual([headless].map(seen));
      expect(check(j, "torn last line")?.fix).toMatch(/^pi-guard repair \S+ --in-place/);
      expect(check(j, "watcher")?.message).toMatch(/no snapshot in the last hour/);
      expect(check(j, "watcher")?.fix).toContain("pi-guard service install");
      // Read-only: the damaged files are exactly as they were.
      expect([torn, glued, headless, noNewline].map(sha256File)).toEqual(before);

      // Human output prints each fix under its finding.
      const human = await cli(sb, ["doctor"]);
      expect(human.stdout).toMatch(/WARN\s+glued entries[^\n]*\n\s+fix: pi-guard repair /);
    });

    it("an npm prefix from the environment, and a stopped watcher with no recent snapshot", async () => {
      sb = makeSandbox("doctor-env");
      mkdirSync(sb.sessionsDir, { recursive: true });
      await initRepo(sb);
      const stateHome = path.join(sb.root, "state");
      const { watcherFiles } = await import("../../src/watch/state.js");
      const file = watcherFiles(path.join(stateHome, "pi-guard"), sb.agentDir).state;
      mkdirSync(path.dirname(file), { recursive: true });
      const old = new Date(Date.now() - 3 * 3_600_000).toISOString();
      writeFileSync(file, JSON.stringify({ version: 1, pid: 999_999_999, host: os.hostname(), agentDir: sb.agentDir, repo: sb.repo, startedAt: old, updatedAt: old, cpu: { userMs: 1, systemMs: 1 }, rssBytes: 1, snapshots: { made: 1, failed: 0 }, nextJobs: [] }));
      const r = (await cli(sb, ["doctor", "--json"], { env: { npm_config_prefix: path.join(sb.agentDir, "npm"), XDG_STATE_HOME: stateHome } })).json<DoctorJson>();
      expect(check(r, "npm prefix")).toMatchObject({ status: "warn", fix: "unset npm_config_prefix (or point it at ~/.npm-global)" });
      expect(check(r, "watcher")?.message).toMatch(/not running \(pid 999999999 is gone.*no snapshot in the last hour: changes since ever/);
      expect(readFileSync(file, "utf8")).toContain("999999999");
    });
  });
});
