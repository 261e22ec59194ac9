import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { agentDir, expandTilde, readSettings, sessionsDir } from "../../src/agents/pi/paths.js";
import { tempRoot } from "../helpers/tmp.js";

const home = "/home/someone";

describe("agentDir", () => {
  it("defaults to ~/.pi/agent and honours PI_CODING_AGENT_DIR with ~ expansion", () => {
    expect(agentDir({}, home)).toBe("/home/someone/.pi/agent");
    expect(agentDir({ PI_CODING_AGENT_DIR: "/srv/pi" }, home)).toBe("/srv/pi");
    expect(agentDir({ PI_CODING_AGENT_DIR: "~/alt" }, home)).toBe("/home/someone/alt");
    expect(expandTilde("~other/x", home)).toBe("~other/x");
  });
});

describe("sessionsDir", () => {
  function setup() {
    const root = tempRoot("paths");
    const agent = join(root, "agent");
    const cwd = join(root, "proj");
    mkdirSync(agent, { recursive: true });
    mkdirSync(join(cwd, ".pi"), { recursive: true });
    return { root, agent, cwd };
  }

  it("uses <agentDir>/sessions when nothing moves it, even without settings.json", () => {
    const { agent, cwd } = setup();
    expect(sessionsDir({ env: {}, home, agentDir: agent, cwd })).toEqual({ dir: join(agent, "sessions"), source: "default", flat: false });
  });

  it("follows pi's precedence: flag, env, project settings, global settings", () => {
    const { agent, cwd } = setup();
    writeFileSync(join(agent, "settings.json"), JSON.stringify({ sessionDir: "~/global-sessions" }));
    expect(sessionsDir({ env: {}, home, agentDir: agent, cwd })).toMatchObject({ dir: "/home/someone/global-sessions", source: "settings", flat: true });
    writeFileSync(join(cwd, ".pi", "settings.json"), JSON.stringify({ sessionDir: "/project-sessions" }));
    expect(sessionsDir({ env: {}, home, agentDir: agent, cwd }).source).toBe("project-settings");
    expect(sessionsDir({ env: { PI_CODING_AGENT_SESSION_DIR: "/env-sessions" }, home, agentDir: agent, cwd })).toMatchObject({ dir: "/env-sessions", source: "env" });
    expect(sessionsDir({ env: { PI_CODING_AGENT_SESSION_DIR: "/env" }, home, agentDir: agent, cwd, flag: "rel" })).toMatchObject({ dir: join(cwd, "rel"), source: "flag" });
  });

  it("derives the agent dir from the environment when not given", () => {
    expect(sessionsDir({ env: { PI_CODING_AGENT_DIR: "/nonexistent-agent" }, home, cwd: "/" }).dir).toBe("/nonexistent-agent/sessions");
  });
});

describe("readSettings", () => {
  it("tolerates a missing file, reports invalid JSON, and never writes", () => {
    const agent = tempRoot("settings");
    const path = join(agent, "settings.json");
    expect(readSettings(path)).toEqual({ path, settings: null });
    writeFileSync(path, "{ nope");
    expect(readSettings(path).error).toMatch(/not valid JSON/);
    writeFileSync(path, "[]");
    expect(readSettings(path).error).toMatch(/not a JSON object/);
    writeFileSync(path, '{"sessionDir":"/x","other":1}');
    expect(readSettings(path).settings).toEqual({ sessionDir: "/x", other: 1 });
    expect(readFileSync(path, "utf8")).toBe('{"sessionDir":"/x","other":1}');
  });
});
