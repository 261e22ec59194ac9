// A hostile entry nested thousands of levels deep (one tool-call argument) in a real pi session:
// JSON.parse reads it, but every recursive walk over the value (search text, rendering,
// JSON.stringify, redaction) would overflow the stack. Every command that reads sessions must read
// it as far as is safe, say which entry it cut, and leave the other entries and sessions alone.

import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, initRepo, snapshot, type CliResult } from "../helpers/cli.js";
import { fauxText, fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { makeSandbox, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";
import { appendHostileEntry, deepArray, deepObject } from "./hostile.js";

let sb: Sandbox;
let live: PiSessionResult;
let gone: PiSessionResult;
let clean: PiSessionResult;

const noCrash = (r: CliResult) => {
  const where = `exit ${r.code}\nstderr:\n${r.stderr.slice(0, 2000)}\nstdout:\n${r.stdout.slice(0, 2000)}`;
  expect(r.stderr, where).not.toMatch(/^\s+at /m);
  expect(r.stderr, where).not.toMatch(/internal error|RangeError|Maximum call stack/i);
  expect(r.code, where).toBe(0);
};

beforeAll(async () => {
  sb = makeSandbox("deep");
  writePiConfigFiles(sb.agentDir);
  live = await makePiSession({
    agentDir: sb.agentDir,
    cwd: path.join(sb.root, "work", "alpha"),
    turns: [
      { user: "Tell me about the axolotl", assistant: [[fauxText("Looking it up."), fauxToolCall("bash", { command: "echo axolotl-facts" })], "The axolotl regrows limbs."] },
      { user: "And the okapi?", assistant: ["The okapi is a giraffid."] },
    ],
  });
  appendHostileEntry(live.file, deepObject(5_000), "deadbee5");
  gone = await makePiSession({
    agentDir: sb.agentDir,
    cwd: path.join(sb.root, "work", "beta"),
    turns: [{ user: "What about the quokka?", assistant: ["The quokka smiles."] }],
  });
  appendHostileEntry(gone.file, deepArray(100_000), "deadbe10");
  clean = await makePiSession({
    agentDir: sb.agentDir,
    cwd: path.join(sb.root, "work", "gamma"),
    turns: [{ user: "Describe the pangolin", assistant: ["The pangolin has scales."] }],
  });
  await initRepo(sb);
  await snapshot(sb);
  // The 100,000-level session now lives only in the snapshot: it is read from the repository.
  rmSync(gone.file);
});

afterAll(() => sb?.cleanup());

describe("an entry nested 5,000 and 100,000 levels deep", () => {
  it("sessions list and stats count every session", async () => {
    const r = await cli(sb, ["--json", "sessions", "list"]);
    noCrash(r);
    const ids = r.json<{ id: string }[]>().map((s) => s.id);
    expect(ids.sort()).toEqual([live.sessionId, gone.sessionId, clean.sessionId].sort());
    const stats = await cli(sb, ["--json", "stats"]);
    noCrash(stats);
    expect(stats.json<{ totals: { sessions: number } }>().totals.sessions).toBe(3);
  });

  it("sessions search indexes every session, reports the cut entries, and finds words in all of them", async () => {
    const first = await cli(sb, ["sessions", "search", "axolotl"]);
    noCrash(first);
    expect(first.stdout).toContain(live.sessionId.slice(0, 8));
    // Indexing read both hostile entries and says so, naming session and entry.
    expect(first.stderr).toMatch(new RegExp(`${live.sessionId.slice(0, 8)}.*deadbee5.*nested deeper than \\d+ levels`));
    expect(first.stderr).toMatch(new RegExp(`${gone.sessionId.slice(0, 8)}.*deadbe10.*nested deeper than \\d+ levels`));
    for (const [word, s] of [["okapi", live], ["quokka", gone], ["pangolin", clean]] as const) {
      const r = await cli(sb, ["--json", "sessions", "search", word]);
      noCrash(r);
      expect(r.json<{ results: { session: { id: string } }[] }>().results.map((x) => x.session.id)).toEqual([s.sessionId]);
    }
  });

  it("sessions merge writes a session pi loads, holding the deep part as text, and says so", async () => {
    const out = path.join(sb.root, "merged.jsonl");
    const r = await cli(sb, ["--json", "sessions", "merge", live.sessionId, clean.sessionId, "--output", out]);
    noCrash(r);
    expect(r.stderr).toMatch(new RegExp(`${live.sessionId}.*deadbee5.*nested deeper than \\d+ levels`));
    const text = readFileSync(out, "utf8");
    const pi = validateWithPi(text, { expectMessages: true });
    expect(JSON.stringify(pi.context.messages)).toContain("The pangolin has scales.");
    expect(text).toContain("echo hostile");
  });

  for (const which of ["live (5,000 levels)", "snapshot only (100,000 levels)"]) {
    const pick = () => (which.startsWith("live") ? { s: live, entry: "deadbee5", words: ["The axolotl regrows limbs.", "The okapi is a giraffid."] } : { s: gone, entry: "deadbe10", words: ["The quokka smiles."] });

    it(`sessions show: ${which}`, async () => {
      const { s, entry, words } = pick();
      const r = await cli(sb, ["sessions", "show", s.sessionId, "--full"]);
      noCrash(r);
      for (const w of words) expect(r.stdout).toContain(w);
      expect(r.stdout + r.stderr).toMatch(new RegExp(`${entry}.*nested deeper than \\d+ levels; shown as raw JSON`));
      const json = await cli(sb, ["--json", "sessions", "show", s.sessionId]);
      noCrash(json);
      expect(json.json<{ path: { id: string }[] }>().path.map((e) => e.id)).toContain(entry);
    });

    for (const format of ["markdown", "json", "html"]) {
      it(`export --format ${format}: ${which}`, async () => {
        const { s, entry, words } = pick();
        const out = path.join(sb.root, `export-${s.sessionId}.${format}`);
        const r = await cli(sb, ["export", s.sessionId, "--format", format, "-o", out]);
        noCrash(r);
        expect(r.stderr).toMatch(new RegExp(`${entry}.*nested deeper than \\d+ levels; shown as raw JSON`));
        const text = readFileSync(out, "utf8");
        if (format === "json") {
          const doc = JSON.parse(text) as { entries: { id: string }[] };
          expect(doc.entries.map((e) => e.id)).toContain(entry);
        }
        if (format !== "html") for (const w of words) expect(text).toContain(w);
        else expect(text).toContain(entry);
      });
    }
  }
});
