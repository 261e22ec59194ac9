// What salvage and repair write holds session text: files 0600 and folders 0700, as pi's own
// auth.json is, whatever the umask. And `salvage --install` never creates a second live file for
// a session that already has one, wherever that one lives.

import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { sessionDirName } from "../../src/agents/pi/writer.js";
import { fauxText, fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { listFiles, tempRoot } from "../helpers/tmp.js";
import { runCli, tempEnv } from "./cli.js";
import { jsonModeLog } from "./log-shapes.js";

let root: string;
let made: PiSessionResult;
let log: string;

const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);

beforeAll(async () => {
  root = tempRoot("private");
  made = await makePiSession({
    agentDir: join(root, "agent"),
    cwd: join(root, "proj"),
    turns: [{ user: "note the secret plan", assistant: [[fauxText("noting"), fauxToolCall("bash", { command: "echo plan" })], "noted"] }],
  });
  const text = readFileSync(made.file, "utf8");
  log = join(root, "pi.log");
  writeFileSync(log, jsonModeLog(JSON.parse(text.slice(0, text.indexOf("\n"))), made.events));
});

describe("files holding session text are private", () => {
  it("salvage --out DIR: the folder 0700, the session 0600", async () => {
    const out = join(root, "out", "deeper");
    const run = await runCli(["--json", "salvage", "--from-log", log, "--out", out], tempEnv(root));
    expect(run.exitCode, run.stderr).toBe(0);
    const file = JSON.parse(run.stdout).sessions[0].file as string;
    expect(dirname(file)).toBe(out);
    expect(mode(file)).toBe("600");
    expect(mode(out)).toBe("700");
    expect(mode(dirname(out))).toBe("700");
  });

  it("salvage --install into pi's sessions dir: 0600 in a new 0700 project folder", async () => {
    const env = tempEnv(mkdtempSync(join(root, "install-")));
    const run = await runCli(["--json", "salvage", "--from-log", log, "--install"], env);
    expect(run.exitCode, run.stderr).toBe(0);
    const file = JSON.parse(run.stdout).sessions[0].file as string;
    expect(mode(file)).toBe("600");
    expect(mode(dirname(file))).toBe("700");
  });

  it("sessions merge: the merged session 0600 (in the first session's project folder, pi's own)", async () => {
    const env = tempEnv(mkdtempSync(join(root, "merge-")));
    const a = await makePiSession({ agentDir: env.PI_CODING_AGENT_DIR, cwd: join(root, "merge-a"), turns: [{ user: "first", assistant: ["one"] }] });
    const b = await makePiSession({ agentDir: env.PI_CODING_AGENT_DIR, cwd: join(root, "merge-b"), turns: [{ user: "second", assistant: ["two"] }] });
    const run = await runCli(["--json", "sessions", "merge", a.sessionId, b.sessionId], env);
    expect(run.exitCode, run.stderr).toBe(0);
    const file = JSON.parse(run.stdout).file as string;
    expect(mode(file)).toBe("600");
    expect(dirname(file)).toBe(dirname(a.file));
  });

  it("repair FILE: the repaired copy is 0600", async () => {
    const dir = mkdtempSync(join(root, "repair-"));
    const file = join(dir, basename(made.file));
    writeFileSync(file, readFileSync(made.file, "utf8").trimEnd(), { mode: 0o644 }); // no final newline: a repair
    const run = await runCli(["--json", "repair", file], tempEnv(root));
    expect(run.exitCode, run.stderr).toBe(0);
    expect(mode(JSON.parse(run.stdout).output)).toBe("600");
  });
});

describe("salvage --install and a session that already has a live file", () => {
  it("refuses to install a second file for the session under another project folder, naming the live one", async () => {
    const env = tempEnv(root); // its agent dir is the one that holds made.file
    const elsewhere = join(root, "moved-project");
    const before = listFiles(join(root, "agent", "sessions"));
    const run = await runCli(["salvage", "--from-log", log, "--cwd", elsewhere, "--install"], env);
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toBe(`pi-guard: ${made.file} already holds session ${made.sessionId} (salvage --out DIR writes the salvaged copy elsewhere); nothing was written`);
    expect(listFiles(join(root, "agent", "sessions"))).toEqual(before);
    expect(readdirSync(join(root, "agent", "sessions"))).not.toContain(sessionDirName(elsewhere));
  });

  it("installs it once the live file is gone", async () => {
    const env = tempEnv(mkdtempSync(join(root, "fresh-")));
    const run = await runCli(["--json", "salvage", "--from-log", log, "--install"], env);
    expect(run.exitCode, run.stderr).toBe(0);
    const again = await runCli(["salvage", "--from-log", log, "--cwd", join(root, "other"), "--install"], env);
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toMatch(/already holds session/);
    rmSync(JSON.parse(run.stdout).sessions[0].file);
    const third = await runCli(["salvage", "--from-log", log, "--install"], env);
    expect(third.exitCode, third.stderr).toBe(0);
  });
});
