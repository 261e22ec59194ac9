// `stats` over forks made by pi's own code (SessionManager.forkFrom, as `pi --fork` does): two
// forks of one session and a fork of a fork. Each entry is counted once, in the session that
// wrote it; when the parent is gone for good, its entries are counted once, by its oldest fork.
// Totals are always the sums of the session rows.

import { readFileSync, rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRepo } from "../helpers/cli.js";
import { fauxToolCall, forkPiSession, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { runOk } from "./cli.js";

const KINDS = ["input", "output", "cacheRead", "cacheWrite", "tokens", "cost", "turns", "messages"] as const;
type Kind = (typeof KINDS)[number];
type Counts = Record<Kind, number>;
interface Row extends Counts {
  id: string;
  copied: number;
}
interface Stats {
  totals: Counts & { sessions: number };
  sessions: Row[];
}
type Line = { id: string; message?: { role: string; usage?: { input: number; output: number; cacheRead: number; cacheWrite: number; totalTokens: number; cost: { total: number } } } };

const entriesOf = (file: string) => readFileSync(file, "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l) as Line);

/** What the entries of `file` that are not in `source` add up to (every prompt here is answered). */
function added(file: string, source?: string): Counts {
  const copied = new Set(source ? entriesOf(source).map((e) => e.id) : []);
  const out: Counts = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, tokens: 0, cost: 0, turns: 0, messages: 0 };
  for (const e of entriesOf(file)) {
    if (copied.has(e.id)) continue;
    if (e.message?.role === "user") out.turns++;
    const u = e.message?.role === "assistant" ? e.message.usage : undefined;
    if (!u) continue;
    out.messages++;
    out.input += u.input;
    out.output += u.output;
    out.cacheRead += u.cacheRead;
    out.cacheWrite += u.cacheWrite;
    out.tokens += u.totalTokens;
    out.cost += u.cost.total;
  }
  return out;
}

let sb: Sandbox;
let parent: PiSessionResult;
let a: PiSessionResult;
let b: PiSessionResult;
let c: PiSessionResult;

beforeAll(async () => {
  sb = makeSandbox("stats-forks");
  const project = sb.dir("project");
  parent = await makePiSession({
    agentDir: sb.agentDir,
    cwd: project,
    turns: [
      { user: "Look at the repo", assistant: [[fauxToolCall("bash", { command: "ls" })], "A small repo."] },
      { user: "Summarise it", assistant: ["It holds one file."] },
    ],
  });
  a = await forkPiSession({ agentDir: sb.agentDir, cwd: project, parentFile: parent.file, turns: [{ user: "Fork A goes on", assistant: ["Answer in A."] }] });
  b = await forkPiSession({ agentDir: sb.agentDir, cwd: sb.dir("other"), parentFile: parent.file, turns: [{ user: "Fork B goes on", assistant: [[fauxToolCall("bash", { command: "pwd" })], "Answer in B."] }] });
  c = await forkPiSession({ agentDir: sb.agentDir, cwd: project, parentFile: a.file, turns: [{ user: "A fork of fork A", assistant: ["Answer in C."] }] });
  await initRepo(sb);
});
afterAll(() => sb?.cleanup());

const stats = async () => (await runOk(sb, ["--json", "stats"])).json<Stats>();

function expectTotalsAreRowSums(s: Stats): void {
  for (const k of KINDS) expect(s.totals[k], k).toBe(s.sessions.reduce((n, r) => n + r[k], 0));
}

describe("stats over forks", () => {
  it("counts the parent's entries in the parent and each fork's own entries in the fork", async () => {
    const s = await stats();
    expectTotalsAreRowSums(s);
    const row = (id: string) => s.sessions.find((r) => r.id === id)!;
    const own = { [parent.sessionId]: added(parent.file), [a.sessionId]: added(a.file, parent.file), [b.sessionId]: added(b.file, parent.file), [c.sessionId]: added(c.file, a.file) };
    for (const [id, counts] of Object.entries(own)) expect(row(id)).toMatchObject(counts);
    for (const k of KINDS) expect(s.totals[k], k).toBe(Object.values(own).reduce((n, x) => n + x[k], 0));
    expect(row(parent.sessionId).tokens).toBeGreaterThan(0);
    expect(row(a.sessionId).copied).toBeGreaterThan(0);
    expect(row(c.sessionId).copied).toBe(added(a.file).turns + added(a.file).messages); // all of A, parent's part included
  });

  it("counts a parent that is gone for good once, in its oldest fork, and the totals do not change", async () => {
    const before = await stats();
    rmSync(parent.file); // never snapshotted: only the forks' copies are left
    const s = await stats();
    expectTotalsAreRowSums(s);
    expect(s.totals.sessions).toBe(before.totals.sessions - 1);
    for (const k of KINDS) expect(s.totals[k], k).toBe(before.totals[k]);
    const row = (id: string) => s.sessions.find((r) => r.id === id)!;
    expect(row(a.sessionId)).toMatchObject(added(a.file));
    expect(row(b.sessionId)).toMatchObject(added(b.file, a.file));
    expect(row(c.sessionId)).toMatchObject(added(c.file, a.file));
  });
});
