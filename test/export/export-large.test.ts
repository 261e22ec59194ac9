// `pi-guard export` of a large session (about 40 MB, made by the bench's session generator: long
// tool outputs, many turns, compactions, a branch) streams: Markdown and JSON equal the in-memory
// rendering, and the process stays far below the memory that holding the session would take.
// A failed export (a full disk) or a killed one leaves no file and the old file intact.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeBranchedSession, type BranchedSession } from "../../bench/export-data.js";
import { DEFAULT_POOL_ROOT } from "../../bench/generate.js";
import { measure } from "../../bench/measure.js";
import { loadTextPool } from "../../bench/textPool.js";
import { exportSession } from "../../src/export/index.js";
import { loadSessionBytes } from "../../src/sessions/read.js";
import { BIN, cli, collect, expectOneLineError, spawnCli } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

const SESSION_ID = "019b0c2e-7f00-7000-8000-0000000a11ce";
/** Holding a 40 MB session and its rendering whole takes several hundred MB; streaming does not. */
const PEAK_RSS_LIMIT_MB = 200;

let sb: Sandbox;
let file: string;
let session: BranchedSession;
beforeAll(() => {
  sb = makeSandbox("export-large");
  const cwd = "/home/dev/code/large";
  file = path.join(sb.sessionsDir, "--home-dev-code-large--", `2026-01-15T09-00-00-000Z_${SESSION_ID}.jsonl`);
  mkdirSync(path.dirname(file), { recursive: true });
  session = writeBranchedSession(file, { cwd, sessionId: SESSION_ID, targetBytes: 40 * 1024 * 1024, seed: "export-large-test", pool: loadTextPool(DEFAULT_POOL_ROOT) });
}, 60_000);
afterAll(() => sb?.cleanup());

/** Where two long texts part, with a little context: a 20 MB diff is unreadable. */
function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return `lengths ${a.length} / ${b.length}, first difference at ${i}:\nstreamed:  ${JSON.stringify(a.slice(Math.max(0, i - 200), i + 200))}\nreference: ${JSON.stringify(b.slice(Math.max(0, i - 200), i + 200))}`;
}

const stamp = (text: string) => text.replace(/"exportedAt": "[^"]+"/, '"exportedAt": "T"');

describe("export of a large session", () => {
  it.each(["markdown", "json"] as const)("%s: equals the in-memory rendering, in bounded memory", async (format) => {
    // Warm the catalog first, so the measurement is the export's.
    expect((await cli(sb, ["sessions", "list"])).code).toBe(0);
    const out = path.join(sb.dir(`out-${format}`), `big.${format}`);
    const m = await measure(process.execPath, [BIN, "export", SESSION_ID.slice(0, 8), "--format", format, "--output", out], { env: sb.env, timeoutMs: 120_000 });
    expect(m.exitCode, m.stderr).toBe(0);
    // As the in-memory path would write it: a lone surrogate (pi's JSON may escape one) has no
    // UTF-8 form, and any file written from a JS string carries U+FFFD in its place.
    const rendered = await exportSession(loadSessionBytes(readFileSync(file), SESSION_ID), { format, agentDir: sb.agentDir, source: `live ${file}` });
    const reference = Buffer.from(rendered, "utf8").toString("utf8");
    const text = readFileSync(out, "utf8");
    expect(text.length).toBeGreaterThan(20 * 1024 * 1024);
    expect(stamp(text) === stamp(reference), firstDifference(stamp(text), stamp(reference))).toBe(true);
    expect(m.stdout).toMatch(/^exported 019b0c2e/);
    expect(m.peakRssMB).toBeLessThan(PEAK_RSS_LIMIT_MB);
  }, 120_000);

  it("exports the side branch with --branch", async () => {
    const out = path.join(sb.dir("out-branch"), "side.md");
    const r = await cli(sb, ["export", SESSION_ID.slice(0, 8), "--branch", session.sideLeaf, "-o", out]);
    expect(r.code, r.stderr).toBe(0);
    const text = readFileSync(out, "utf8");
    expect(text).toContain(`id ${session.sideLeaf}`);
    expect(text).not.toContain(`id ${session.leafId}`);
  }, 60_000);

  describe("on a full disk (a 1 MiB tmpfs)", () => {
    let mnt: string;
    let mounted = false;
    beforeAll(() => {
      mnt = sb.dir("tmpfs");
      try {
        execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt], { stdio: "ignore" });
        mounted = true;
      } catch {
        // Not root: the ulimit case below still runs.
      }
    });
    afterAll(() => {
      if (mounted) execFileSync("umount", [mnt]);
    });

    it.each(["markdown", "json"] as const)("%s: exit 1, one line, no partial file, the old file intact", async (format) => {
      if (!mounted) return;
      const dir = path.join(mnt, format);
      mkdirSync(dir);
      const out = path.join(dir, `export.${format}`);
      writeFileSync(out, "the previous export\n");
      const r = await cli(sb, ["export", SESSION_ID.slice(0, 8), "--format", format, "-o", out, "--force"]);
      expect(r.code).toBe(1);
      expect(expectOneLineError(r)).toMatch(/no space left on the device/);
      expect(readFileSync(out, "utf8")).toBe("the previous export\n");
      expect(readdirSync(dir)).toEqual([`export.${format}`]);
    }, 60_000);
  });

  it("under a file size limit (ulimit -f, short writes): exit 1, no file", async () => {
    const dir = sb.dir("ulimit");
    const out = path.join(dir, "big.md");
    const env = Object.entries(sb.env).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ");
    let code = 0;
    let stderr = "";
    try {
      execFileSync("bash", ["-c", `ulimit -f 2048; env -i ${env} "${process.execPath}" "${BIN}" export ${SESSION_ID.slice(0, 8)} -o "${out}"`], { stdio: ["ignore", "ignore", "pipe"] });
    } catch (err) {
      code = (err as { status: number }).status;
      stderr = String((err as { stderr: Buffer }).stderr);
    }
    expect(code).toBe(1);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(/cannot write .*big\.md/);
    expect(readdirSync(dir)).toEqual([]);
  }, 60_000);

  it("killed while writing (SIGTERM): the old file intact, no temp file left", async () => {
    const dir = sb.dir("killed");
    const out = path.join(dir, "big.json");
    writeFileSync(out, "old\n");
    const child = spawnCli(sb, ["export", SESSION_ID.slice(0, 8), "--format", "json", "-o", out, "--force"]);
    const done = collect(child);
    // Wait until the temp file exists, then kill.
    for (let i = 0; i < 600 && readdirSync(dir).length < 2 && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 10));
    expect(readdirSync(dir).length).toBe(2);
    child.kill("SIGTERM");
    const r = await done;
    expect(r.signal ?? r.code).toBeTruthy();
    expect(readFileSync(out, "utf8")).toBe("old\n");
    expect(readdirSync(dir)).toEqual(["big.json"]);
    expect(existsSync(out)).toBe(true);
  }, 60_000);
});
