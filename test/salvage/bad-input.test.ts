import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, tempEnv } from "./cli.js";

const root = mkdtempSync(join(tmpdir(), "pi-guard-bad-input-"));
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
};

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
        expect(run.exitCode).not.toBe(0);
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

  it("a missing input and a directory as input are one-line errors too", async () => {
    const dir = mkdtempSync(join(root, "misc-"));
    mkdirSync(join(dir, "adir"));
    for (const args of [
      ["repair", join(dir, "nope.jsonl")],
      ["salvage", "--from-log", join(dir, "adir")],
      ["salvage"],
      ["salvage", "--from-log", join(dir, "x"), "--install", "--out", dir],
    ]) {
      const run = await runCli(args, env);
      expect(run.exitCode).not.toBe(0);
      expect(run.stderr.split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(/^pi-guard: /);
    }
  });
});
