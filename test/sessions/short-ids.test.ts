// pi's session ids are UUIDv7: sessions started within about 65 s share their first 8 hex digits
// (a timestamp). pi-guard shows each id by its shortest prefix, at least 8 characters, that no
// other session's id starts with (src/sessions/short-id.ts), names the candidates of an ambiguous
// prefix by those, and names a merge so that its two sources can be told apart. The sessions are
// made by pi 0.73.1's own agent loop, back to back, so their ids collide as real ones do, and by
// pi 1.6.0 with its --session-id: ids of one millisecond, and ids the user chose.

import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOneLineError, initRepo } from "../helpers/cli.js";
import { makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { makePi1Session } from "../helpers/pi1.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { run, runOk } from "./cli.js";

interface ListRow {
  id: string;
  shortId: string;
  name: string | null;
}

let sb: Sandbox;
const made: PiSessionResult[] = [];
const makeSession = (user: string, name?: string) => makePiSession({ agentDir: sb.agentDir, cwd: path.join(sb.root, "work", "app"), turns: [{ user, assistant: [`done: ${user}`], name }] });

/** Real pi sessions until two share their first 8 digits (they do unless a 65 s tick falls between them). */
async function collidingSessions(): Promise<[PiSessionResult, PiSessionResult]> {
  for (let i = 0; i < 4; i++) {
    made.push(await makeSession(`task ${i}`));
    const last = made[made.length - 1];
    const twin = made.slice(0, -1).find((m) => m.sessionId.slice(0, 8) === last.sessionId.slice(0, 8));
    if (twin) return [twin, last];
  }
  throw new Error(`pi made no two session ids with the same first 8 digits: ${made.map((m) => m.sessionId).join(", ")}`);
}

let a: PiSessionResult;
let b: PiSessionResult;

beforeAll(async () => {
  sb = makeSandbox("short-ids");
  [a, b] = await collidingSessions();
}, 60_000);

afterAll(() => sb?.cleanup());

describe("short session ids of UUIDv7 sessions started together", () => {
  it("pi's ids really share their first 8 digits (else the test proves nothing)", () => {
    expect(a.sessionId).not.toBe(b.sessionId);
    expect(a.sessionId.slice(0, 8)).toBe(b.sessionId.slice(0, 8));
  });

  it("sessions list never shows two sessions under one id, and each shown id opens its session", async () => {
    // The table first: what a user reads.
    const table = (await runOk(sb, ["sessions", "list", "--live"], { COLUMNS: "200" })).stdout.split("\n").slice(1).filter(Boolean);
    const column = table.map((line) => line.split(/\s+/)[0]);
    expect(column).toHaveLength(made.length);
    expect(new Set(column).size, `ID column: ${column.join(", ")}`).toBe(made.length);
    const rows = (await runOk(sb, ["--json", "sessions", "list", "--live"])).json<ListRow[]>();
    const shown = rows.map((r) => r.shortId);
    expect(column.sort()).toEqual([...shown].sort());
    for (const r of rows) {
      expect(r.id.startsWith(r.shortId)).toBe(true);
      expect(r.shortId.length).toBeGreaterThanOrEqual(8);
      expect(r.shortId.endsWith("-")).toBe(false);
    }
    for (const r of rows) {
      const show = (await runOk(sb, ["--json", "sessions", "show", r.shortId])).json<{ session: { id: string } }>();
      expect(show.session.id).toBe(r.id);
    }
  });

  it("sessions show of the shared 8 digits lists each candidate by the id that tells it apart", async () => {
    const prefix = a.sessionId.slice(0, 8);
    const rows = (await runOk(sb, ["--json", "sessions", "list", "--live"])).json<ListRow[]>();
    const candidates = rows.filter((r) => r.id.startsWith(prefix));
    const msg = expectOneLineError(await run(sb, ["sessions", "show", prefix]), 2);
    expect(msg).toContain(`session id "${prefix}" is ambiguous: ${candidates.length} sessions match: `);
    // Each by its list id and start time; each of those ids opens exactly that session.
    for (const c of candidates) {
      expect(msg).toMatch(new RegExp(`${c.shortId} \\(\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d\\)`));
      expect((await runOk(sb, ["--json", "sessions", "show", c.shortId])).json<{ session: { id: string } }>().session.id).toBe(c.id);
    }
  });

  it("stats and the dashboard name the biggest sessions by the same ids; an export's title names the whole id", async () => {
    await initRepo(sb);
    const short = new Map((await runOk(sb, ["--json", "sessions", "list", "--live"])).json<ListRow[]>().map((r) => [r.id, r.shortId]));
    const biggest = (await runOk(sb, ["--json", "stats"])).json<{ biggest: { id: string; shortId: string }[] }>().biggest;
    expect(biggest.map((x) => x.id).sort()).toEqual([...short.keys()].sort());
    for (const x of biggest) expect(x.shortId).toBe(short.get(x.id));
    const page = path.join(sb.dir("dash"), "d.html");
    await runOk(sb, ["dashboard", "-o", page]);
    const html = readFileSync(page, "utf8");
    for (const id of [a.sessionId, b.sessionId]) expect(html).toContain(`${short.get(id)} `);
    const md = (await runOk(sb, ["export", a.sessionId, "--format", "markdown"])).stdout;
    expect(md.split("\n")[0]).toBe(`# pi session ${a.sessionId}`);
  });

  it("merge names its result with ids that tell the two sources apart, also when both have one name", async () => {
    const nameOf = (file: string) => readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l)).find((e) => e.type === "session_info")?.name;
    const out = path.join(sb.dir("merged"), "m.jsonl");
    await runOk(sb, ["sessions", "merge", a.sessionId, b.sessionId, "-o", out]);
    const named = /^merge of (\S+) \+ (\S+)$/.exec(nameOf(out));
    expect(named?.[1], `name: ${nameOf(out)}`).not.toBe(named?.[2]);
    const shortOf = async () => new Map((await runOk(sb, ["--json", "sessions", "list", "--live"])).json<ListRow[]>().map((r) => [r.id, r.shortId]));
    let short = await shortOf();
    const [sa, sbb] = [short.get(a.sessionId)!, short.get(b.sessionId)!];
    expect(sa).not.toBe(sbb);
    expect(nameOf(out)).toBe(`merge of ${sa} + ${sbb}`);
    const human = (await runOk(sb, ["sessions", "merge", a.sessionId, b.sessionId, "-o", path.join(sb.dir("merged2"), "m.jsonl")])).stdout;
    expect(human).toContain(`merged ${sa} + ${sbb} `);
    // Two sessions of one name: the name, each with its id.
    const [c, d] = [await makeSession("one more", "fix tests"), await makeSession("and another", "fix tests")];
    short = await shortOf();
    const same = path.join(sb.dir("merged3"), "m.jsonl");
    await runOk(sb, ["sessions", "merge", c.sessionId, d.sessionId, "-o", same]);
    expect(nameOf(same)).toBe(`merge of fix tests (${short.get(c.sessionId)}) + fix tests (${short.get(d.sessionId)})`);
  });
});

describe("pi 1.6.0 sessions: ids of one millisecond, and ids chosen with --session-id", () => {
  // Two UUIDv7 ids of the same millisecond share 12 hex digits and the version digit.
  const SAME_MS = ["019ad0c4-7e21-7a3b-8c4d-0123456789ab", "019ad0c4-7e21-7a3c-9e5f-abcdef012345"];
  const CHOSEN = ["ledger-july", "ledger-july-2"];
  let sb1: Sandbox;

  beforeAll(async () => {
    sb1 = makeSandbox("short-ids-pi1");
    const cwd = path.join(sb1.root, "work", "books");
    for (const sessionId of [...SAME_MS, ...CHOSEN]) {
      const made1 = await makePi1Session({ agentDir: sb1.agentDir, cwd, sessionId, turns: [{ user: `hello ${sessionId}`, assistant: ["hi"] }] });
      expect(made1.sessionId).toBe(sessionId);
    }
  }, 120_000);

  afterAll(() => sb1?.cleanup());

  it("sessions list shows the ids of one millisecond apart and the chosen ids whole", async () => {
    const table = (await runOk(sb1, ["sessions", "list", "--live"], { COLUMNS: "200" })).stdout.split("\n").slice(1).filter(Boolean);
    const column = table.map((line) => line.split(/\s+/)[0]).sort();
    expect(column).toEqual(["019ad0c4-7e21-7a3b", "019ad0c4-7e21-7a3c", "ledger-july", "ledger-july-2"]);
    const rows = (await runOk(sb1, ["--json", "sessions", "list", "--live"])).json<ListRow[]>();
    expect(rows.map((r) => r.shortId).sort()).toEqual(column);
  });

  it("an ambiguous prefix names candidates by ids that differ; each one opens its session", async () => {
    const uuid = expectOneLineError(await run(sb1, ["sessions", "show", "019ad0c4"]), 2);
    expect(uuid).toMatch(/019ad0c4-7e21-7a3b \(\d{4}-.*019ad0c4-7e21-7a3c \(\d{4}-|019ad0c4-7e21-7a3c \(\d{4}-.*019ad0c4-7e21-7a3b \(\d{4}-/);
    const chosen = expectOneLineError(await run(sb1, ["sessions", "show", "ledger"]), 2);
    expect(chosen).toMatch(/ledger-july \(/);
    expect(chosen).toMatch(/ledger-july-2 \(/);
    for (const id of ["019ad0c4-7e21-7a3b", "019ad0c4-7e21-7a3c", "ledger-july", "ledger-july-2"]) {
      const shown = (await runOk(sb1, ["--json", "sessions", "show", id])).json<{ session: { id: string } }>();
      expect(shown.session.id.startsWith(id)).toBe(true);
    }
  });

  it("search names its sessions by the same ids", async () => {
    const out = (await runOk(sb1, ["sessions", "search", "hello", "--live"])).stdout.split("\n");
    const ids = out.filter((l) => /^\S/.test(l) && !/ sessions? in /.test(l)).map((l) => l.split(/\s+/)[0]).sort();
    expect(ids).toEqual(["019ad0c4-7e21-7a3b", "019ad0c4-7e21-7a3c", "ledger-july", "ledger-july-2"]);
  });

  it("tag and merge name the chosen ids whole", async () => {
    expect((await runOk(sb1, ["sessions", "tag", "ledger-july", "books"])).stdout.trim()).toBe("ledger-july: #books");
    const out = path.join(sb1.dir("merged"), "m.jsonl");
    const human = (await runOk(sb1, ["sessions", "merge", "ledger-july", "ledger-july-2", "-o", out])).stdout;
    expect(human).toContain("merged ledger-july + ledger-july-2 ");
    const info = readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l)).find((e) => e.type === "session_info");
    expect(info.name).toBe("merge of ledger-july + ledger-july-2");
  });
});
