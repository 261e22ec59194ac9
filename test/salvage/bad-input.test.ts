import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { runCli, tempEnv } from "./cli.js";
import { tempRoot } from "../helpers/tmp.js";

const root = tempRoot("bad-input");
const env = tempEnv(root);
const sha = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

const INPUTS: Record<string, Buffer> = {
  "random bytes": randomBytes(64 * 1024),
  "an empty file": Buffer.alloc(0),
  "truncated JSON": Buffer.from('{"type":"session","version":3,"id":"0197c0de-aaaa-7bbb-8ccc-ddddeeeeffff","timestamp":"2026-11-30T04:0'),
  "invalid UTF-8": Buffer.concat([Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xa0, 0xa1, 0x0a]), Buffer.from([0xe2, 0x28, 0xa1, 0xf0, 0x28, 0x8c, 0xbc, 0x0a])]),
  "HTML that is not a pi export": Buffer.from('<!doctype html><html><head><script type="application/json">{"a":1}</script></head><body>hi</body></html>\n'),
  "a pi-looking export with broken data": Buffer.from('<html><script id="session-data" type="application/json">eyJoZWFkZXIiOnsidHlwZSI6InNl</script></html>'),
  "an export cut off mid-data": Buffer.from('<html><script id="session-data" type="application/json">eyJoZWFkZXIiOnsidHlwZSI6InNl'),
};

const COMMANDS: Record<string, (file: string, out: string) => string[]> = {
  repair: (file) => ["repair", file],
  "repair --in-place": (file) => ["repair", "--in-place", file],
  "salvage --from-html": (file, out) => ["salvage", "--from-html", file, "--out", out],
  "salvage --from-log": (file, out) => ["salvage", "--from-log", file, "--out", out],
  "salvage --from-html --install": (file) => ["salvage", "--from-html", file, "--install"],
  "salvage --from-hermes": (file, out) => ["salvage", "--from-hermes", file, "--all", "--out", out],
};

/** SQLite files that are not usable hermes databases. */
function badDatabases(dir: string): Record<string, string> {
  const unknown = join(dir, "unknown.db");
  const u = new Database(unknown);
  u.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('hi');");
  u.close();
  const corrupt = join(dir, "corrupt.db");
  const c = new Database(corrupt);
  c.exec(`CREATE TABLE sessions (id TEXT PRIMARY KEY, project TEXT, cwd TEXT, started_at TEXT, ended_at TEXT, message_count INTEGER);
    CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, timestamp TEXT, tool_calls TEXT);
    INSERT INTO sessions VALUES ('s1', 'p', '/p', '2026-11-30T04:00:00.000Z', NULL, 400);`);
  const add = c.prepare("INSERT INTO messages VALUES (?, 's1', 'user', ?, '2026-11-30T04:00:00.000Z', '[]')");
  for (let i = 0; i < 400; i++) add.run(`m${i}`, "x".repeat(500));
  c.close();
  // Overwrite pages in the middle of the messages table with junk: a corrupted database page.
  const bytes = readFileSync(corrupt);
  bytes.fill(0xa5, 4096 * 6, 4096 * 9);
  writeFileSync(corrupt, bytes);
  return { "a SQLite file with an unknown schema": unknown, "a corrupted database page": corrupt };
}

describe("bad input: one clear line, non-zero exit, no partial output, input unchanged", () => {
  for (const [command, args] of Object.entries(COMMANDS)) {
    for (const [name, bytes] of Object.entries(INPUTS)) {
      it(`${command} with ${name}`, async () => {
        const dir = mkdtempSync(join(root, "case-"));
        const file = join(dir, name.includes("HTML") || name.includes("export") ? "input.html" : "input.jsonl");
        writeFileSync(file, bytes);
        const before = sha(file);
        const out = join(dir, "out");
        const run = await runCli(args(file, out), env);
        // A bad input file is the user's mistake, not a damaged repository (exit 3).
        expect(run.exitCode, run.stderr).toBe(1);
        const lines = run.stderr.split("\n");
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(/^pi-guard: \S.*/);
        expect(run.stderr).not.toMatch(/internal error|\n\s+at /);
        expect(run.stdout).toBe("");
        expect(sha(file)).toBe(before);
        expect(readdirSync(dir)).toEqual([file.split("/").pop()]);
        expect(existsSync(join(env.PI_CODING_AGENT_DIR, "sessions"))).toBe(false);
      });
    }
  }

  it("salvage --from-hermes with an unknown schema or a corrupted page: one line, no output, db untouched", async () => {
    const dir = mkdtempSync(join(root, "db-"));
    for (const [name, db] of Object.entries(badDatabases(dir))) {
      const before = sha(db);
      const out = join(dir, "out");
      const run = await runCli(["salvage", "--from-hermes", db, "--all", "--out", out], env);
      expect(run.exitCode, name).toBe(1);
      expect(run.stderr.split("\n"), name).toHaveLength(1);
      expect(run.stderr, name).toMatch(name.includes("unknown") ? /is a SQLite database but not a hermes one \(tables: notes\)$/ : /cannot read the database: .*malformed/);
      expect(sha(db), name).toBe(before);
      expect(existsSync(out), name).toBe(false);
    }
    expect(readdirSync(dir).sort()).toEqual(["corrupt.db", "unknown.db"]);
  });

  it("a missing input and a directory as input are one-line errors too", async () => {
    const dir = mkdtempSync(join(root, "misc-"));
    mkdirSync(join(dir, "adir"));
    const cases: [string[], number][] = [
      [["repair", join(dir, "nope.jsonl")], 1],
      [["salvage", "--from-log", join(dir, "adir")], 2],
      [["salvage"], 2],
      [["salvage", "--from-log", join(dir, "x"), "--install", "--out", dir], 2],
    ];
    for (const [args, code] of cases) {
      const run = await runCli(args, env);
      expect(run.exitCode, run.stderr).toBe(code);
      expect(run.stderr.split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(/^pi-guard: /);
    }
  });
});
