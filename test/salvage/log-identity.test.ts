// Session identity from the plain lines of a web UI's log. The input is made the way the real
// programs make it: pi's real RPC mode (rpc-child.mjs, faux model) answers the commands a web UI
// sends, and the log wraps every line pi printed as {type:"rpc_event",event} beside the UI's own
// plain lines ("spawning: pi --mode rpc (cwd=...)", "rpc ready, session <uuid>").

import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { sessionDirName } from "../../src/agents/pi/writer.js";
import { salvage } from "../../src/salvage/salvage.js";
import { excerpt, plainLineIdentity } from "../../src/salvage/log-identity.js";
import { expectOneLineError } from "../helpers/cli.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { runCli, tempEnv } from "./cli.js";
import { runPiRpc, type RpcLine } from "./rpc-run.js";
import { tempRoot } from "../helpers/tmp.js";

let root: string;
let agentDir: string;
/** A project dir with a space and parentheses: the UI prints it inside "(cwd=...)". */
let cwd: string;
let one: RpcLine[];
let two: RpcLine[];
let idOne: string;
let idsTwo: string[];

const t = (i: number) => new Date(Date.UTC(2026, 10, 30, 4, 0, i)).toISOString();
const stateIds = (lines: RpcLine[]) =>
  lines.filter((l) => l.type === "response" && l.command === "get_state").map((l) => (l.data as { sessionId: string }).sessionId);

/** The web UI's log: its own lines, then every line pi printed, wrapped (get_state answers left out when asked). */
function webUiLog(lines: RpcLine[], id: string, opts: { getState: boolean }): string {
  let out = `${t(0)} [pi-web] server listening on http://127.0.0.1:3000\n`;
  out += `${t(1)} [pi-web] spawning: pi --mode rpc (cwd=${cwd})\n`;
  out += `${t(2)} [pi-web] rpc ready, session ${id}\n`;
  lines.forEach((l, i) => {
    if (!opts.getState && l.command === "get_state") return;
    out += `${t(3 + i)} [pi-web] rpc ${JSON.stringify({ type: "rpc_event", event: l })}\n`;
  });
  return out;
}

let n = 0;
function write(text: string): string {
  const file = join(root, `web-${++n}.log`);
  writeFileSync(file, text);
  return file;
}

beforeAll(async () => {
  root = tempRoot("logid");
  agentDir = join(root, "agent");
  cwd = join(root, "my proj (v2)");
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  one = await runPiRpc({
    agentDir,
    cwd,
    replies: [{ tool: "bash", args: { command: "echo hi" } }, "done one"],
    commands: [{ type: "get_state" }, { type: "prompt", message: "list files" }, { type: "get_state" }],
  });
  idOne = stateIds(one)[0];
  two = await runPiRpc({
    agentDir: join(root, "agent-two"),
    cwd,
    replies: ["reply one", "reply two"],
    commands: [{ type: "get_state" }, { type: "prompt", message: "first session" }, { type: "new_session" }, { type: "get_state" }, { type: "prompt", message: "second session" }],
  });
  idsTwo = [...new Set(stateIds(two))];
}, 60_000);

describe("identity from plain lines", () => {
  it("takes the id and cwd from the web UI's own lines, reports the lines, and writes a file pi loads", async () => {
    expect(idOne).toMatch(/^[0-9a-f-]{36}$/);
    const file = write(webUiLog(one, idOne, { getState: false }));
    const result = await salvage({ logs: [file], outDir: join(root, "out-a") });
    expect(result.written).toHaveLength(1);
    const [s] = result.report.sessions;
    // Before: an invented id and an empty cwd.
    expect(s).toMatchObject({ id: idOne, cwd, idInvented: false, cwdKnown: true });
    expect(s.identity?.sessionId).toMatchObject({ value: idOne, from: "line", line: 3, path: file });
    expect(s.identity?.sessionId?.text).toContain(`rpc ready, session ${idOne}`);
    expect(s.identity?.cwd).toMatchObject({ value: cwd, from: "line", line: 2 });
    expect(s.gaps.join("\n")).not.toMatch(/names no/);
    const text = readFileSync(result.written[0].path, "utf8");
    validateWithPi(text, { expectMessages: true });
    expect(JSON.parse(text.slice(0, text.indexOf("\n")))).toMatchObject({ id: idOne, cwd });
  });

  it("joins an earlier export of the same session (no message in common) into one file, installed in the project's folder", async () => {
    // pi's export_html after the first prompt; the web UI's log (rotated) holds only what came after.
    const html = join(root, "first-half.html");
    const lines = await runPiRpc({
      agentDir: join(root, "agent-resumed"),
      cwd,
      replies: ["first reply", { tool: "bash", args: { command: "echo later" } }, "second reply"],
      commands: [{ type: "get_state" }, { type: "prompt", message: "first prompt" }, { type: "export_html", outputPath: html }, { type: "prompt", message: "second prompt" }, { type: "get_state" }],
    });
    const id = stateIds(lines)[0];
    const after = lines.slice(lines.findIndex((l) => l.command === "export_html") + 1);
    const file = write(webUiLog(after, id, { getState: false }));
    const env = tempEnv(join(root, "install"));
    const r = await runCli(["salvage", "--from-log", file, "--from-html", html, "--install", "--json"], env);
    expect(r.exitCode, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as {
      sessions: { id: string; cwd: string; file: string; messages: Record<string, number>; sources: { kind: string }[]; identity: { sessionId: { line: number }; cwd: unknown } }[];
    };
    // Before: two sessions, the log's with an invented id and no cwd.
    expect(report.sessions).toHaveLength(1);
    const [s] = report.sessions;
    expect(s).toMatchObject({ id, cwd, messages: { user: 2, assistant: 3, toolResult: 1 } });
    expect(s.sources.map((x) => x.kind).sort()).toEqual(["html", "log"]);
    expect(s.identity.sessionId.line).toBe(3);
    expect(s.identity.cwd).toMatchObject({ value: cwd, from: "line", line: 2 });
    expect(s.file.startsWith(join(env.PI_CODING_AGENT_DIR, "sessions", sessionDirName(cwd)) + "/")).toBe(true);
    expect(s.file.endsWith(`_${id}.jsonl`)).toBe(true);
    validateWithPi(readFileSync(s.file, "utf8"), { expectMessages: true });
  });

  it("splits a log at new_session and takes each id from the get_state that follows", async () => {
    expect(idsTwo).toHaveLength(2);
    const file = write(webUiLog(two, idsTwo[0], { getState: true }));
    const result = await salvage({ logs: [file], outDir: join(root, "out-two") });
    const byId = new Map(result.report.sessions.map((s) => [s.id, s]));
    expect([...byId.keys()].sort()).toEqual([...idsTwo].sort());
    // new_session keeps pi's cwd: the spawn line names it for both.
    for (const id of idsTwo) expect(byId.get(id)).toMatchObject({ cwd, idInvented: false, messages: { user: 1, assistant: 1 } });
    expect(byId.get(idsTwo[1])!.identity?.sessionId?.text).toContain('"command":"get_state"');
    for (const w of result.written) validateWithPi(readFileSync(w.path, "utf8"), { expectMessages: true });
  });

  it("splits a log at pi's clone (a fork at the leaf) and keeps the cwd for the copy", async () => {
    const lines = await runPiRpc({
      agentDir: join(root, "agent-clone"),
      cwd,
      replies: ["before the clone", "in the clone"],
      commands: [{ type: "get_state" }, { type: "prompt", message: "original" }, { type: "clone" }, { type: "get_state" }, { type: "prompt", message: "continued in the clone" }],
    });
    const [orig, copy] = [...new Set(stateIds(lines))];
    expect(copy).toBeDefined();
    const result = await salvage({ logs: [write(webUiLog(lines, orig, { getState: false }) + `${t(99)} [pi-web] session switched, session ${copy}\n`)], outDir: join(root, "out-clone") });
    // The copy's id comes only after its messages here: the unnamed stream after the clone takes it.
    const got = result.report.sessions.map((s) => [s.id, s.cwd, s.messages.user]).sort();
    expect(got).toEqual([[orig, cwd, 1], [copy, cwd, 1]].sort());
  });

  it("splits a log at switch_session and does not guess the other session's cwd", async () => {
    const dir = join(agentDir, "sessions", sessionDirName(cwd));
    const target = join(dir, readdirSync(dir).find((f) => f.endsWith(`_${idOne}.jsonl`))!);
    const lines = await runPiRpc({
      agentDir: join(root, "agent-switch"),
      cwd,
      replies: ["here first", "back in the old one"],
      commands: [{ type: "get_state" }, { type: "prompt", message: "a new one" }, { type: "switch_session", sessionPath: target }, { type: "get_state" }, { type: "prompt", message: "resumed" }],
    });
    const [fresh, resumed] = [...new Set(stateIds(lines))];
    expect(resumed).toBe(idOne);
    const result = await salvage({ logs: [write(webUiLog(lines, fresh, { getState: true }))], outDir: join(root, "out-switch") });
    const byId = new Map(result.report.sessions.map((s) => [s.id, s]));
    expect(byId.get(fresh)).toMatchObject({ cwd, cwdKnown: true });
    // pi may have switched to another project's session: no line names its cwd, so it is reported missing.
    expect(byId.get(idOne)).toMatchObject({ cwd: "", cwdKnown: false, messages: { user: 1, assistant: 1 } });
    expect(byId.get(idOne)!.gaps).toContain("the log names no project dir (cwd)");
  });

  it("splits a log where each session has its own process and its own plain lines", async () => {
    const other = join(root, "other project");
    const a = webUiLog(one, idOne, { getState: false });
    const b = webUiLog(two.slice(two.findIndex((l) => l.command === "new_session") + 1), idsTwo[1], { getState: false }).replace(`(cwd=${cwd})`, `(cwd=${other})`);
    const result = await salvage({ logs: [write(a + b)], outDir: join(root, "out-procs") });
    const got = result.report.sessions.map((s) => [s.id, s.cwd]).sort();
    expect(got).toEqual([[idOne, cwd], [idsTwo[1], other]].sort());
  });
});

describe("--session-id and --cwd", () => {
  const env = () => tempEnv(join(root, "flags"));
  const bare = () => one.filter((l) => l.command !== "get_state").map((l) => `${JSON.stringify({ type: "rpc_event", event: l })}\n`).join("");
  const given = "0f8e2c1a-5b7d-4e2f-9a31-6c0d8e4b2f17";

  it("supply the id and cwd when no line names them", async () => {
    const r = await runCli(["salvage", "--from-log", write(bare()), "--session-id", given.toUpperCase(), "--cwd", "/srv/app", "--out", join(root, "out-f1"), "--json"], env());
    expect(r.exitCode, r.stderr).toBe(0);
    const [s] = JSON.parse(r.stdout).sessions;
    expect(s).toMatchObject({ id: given, cwd: "/srv/app", idInvented: false, identity: { sessionId: { value: given, from: "flag" }, cwd: { value: "/srv/app", from: "flag" } } });
    expect(s.identity.sessionId.replaced).toBeUndefined();
  });

  it("win over a line that names another, and the report says which line", async () => {
    const file = write(webUiLog(one, idOne, { getState: false }));
    const r = await runCli(["salvage", "--from-log", file, "--session-id", given, "--out", join(root, "out-f2")], env());
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain(`session ${given}`);
    expect(r.stdout).toMatch(new RegExp(`id +from --session-id, over line 3 \\(${idOne}\\)`));
    expect(r.stdout).toMatch(/cwd +from line 2: .*spawning: pi --mode rpc/);
  });

  it("are refused when malformed, without --from-log, or when the log holds several sessions", async () => {
    const log = write(webUiLog(one, idOne, { getState: false }));
    expect(expectOneLineError(await runCli(["salvage", "--from-log", log, "--session-id", "not-a-uuid"], env()).then(toResult), 2)).toMatch(/--session-id must be a session UUID/);
    expect(expectOneLineError(await runCli(["salvage", "--from-html", log, "--session-id", given], env()).then(toResult), 2)).toMatch(/only applies to --from-log/);
    const twoLog = write(webUiLog(two, idsTwo[0], { getState: true }));
    expect(expectOneLineError(await runCli(["salvage", "--from-log", twoLog, "--session-id", given, "--out", join(root, "out-f3")], env()).then(toResult), 2)).toMatch(/holds 2/);
    expect(() => readdirSync(join(root, "out-f3"))).toThrow();
  });
});

describe("plain line patterns", () => {
  it("reads the shapes wrappers and pi print, and nothing from look-alikes", () => {
    const id = "0f8e2c1a-5b7d-4e2f-9a31-6c0d8e4b2f17";
    expect(plainLineIdentity(`[pi-web] rpc ready, session ${id}`)).toEqual({ sessionId: id });
    expect(plainLineIdentity(`sessionId=${id.toUpperCase()}`)).toEqual({ sessionId: id });
    expect(plainLineIdentity(`Session file: /home/me/.pi/agent/sessions/--x--/2026-01-01T00-00-00-000Z_${id}.jsonl`)).toEqual({ sessionId: id });
    expect(plainLineIdentity("spawning: pi --mode rpc (cwd=/home/me/a b (c))")).toEqual({ cwd: "/home/me/a b (c)", spawn: true });
    expect(plainLineIdentity('started worker cwd="/srv/x y" pid=3')).toEqual({ cwd: "/srv/x y" });
    expect(plainLineIdentity("Stored session working directory does not exist: /gone/proj")).toEqual({ cwd: "/gone/proj" });
    expect(plainLineIdentity("cwd=relative/path")).toEqual({});
    expect(plainLineIdentity(`request ${id} done`)).toEqual({});
    expect(plainLineIdentity(`session ${id}0`)).toEqual({});
    expect(plainLineIdentity("spawning: pi (cwd=/x/\u001b[2Jy)")).toEqual({});
    // The report prints the line: a hostile log cannot send escape sequences to the terminal.
    expect(excerpt(`\u001b]0;owned\u0007rpc ready, session ${id}`)).toBe(`?]0;owned?rpc ready, session ${id}`);
    expect(excerpt("x".repeat(500))).toHaveLength(160);
  });
});

function toResult(r: { exitCode: number; stdout: string; stderr: string }) {
  return { code: r.exitCode, signal: null, stdout: r.stdout, stderr: `${r.stderr}\n`, json: () => JSON.parse(r.stdout) };
}
