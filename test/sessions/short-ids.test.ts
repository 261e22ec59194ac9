// pi's session ids are UUIDv7: sessions started within about 65 s share their first 8 hex digits
// (a timestamp). pi-guard shows each id by its shortest prefix, at least 8 characters, that no
// other session's id starts with (src/sessions/short-id.ts), names the candidates of an ambiguous
// prefix by those, and names a merge so that its two sources can be told apart. The sessions are
// made by pi 0.73.1's own agent loop, back to back, so their ids collide as real ones do.

import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOneLineError } from "../helpers/cli.js";
import { makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
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
