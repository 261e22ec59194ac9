// Export benchmark: generates one realistic pi session of ~200 MB (long tool outputs, many turns,
// a branch) in a temp agent dir, runs the built `pi-guard export` on it once per format as a child
// process, and reports wall time and peak RSS (target: <= 300 MB in every format) as a table and
// as JSON in bench/out/. Everything generated is deleted at the end unless --keep.
//
//   npm run build && node dist/bench/export.js [--size 200MiB] [--formats markdown,json,html]
//                                              [--bin path/to/bin/pi-guard.js] [--keep]
// --bin runs another checkout's build on the same session (a before/after comparison).

import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { writeBranchedSession } from "./export-data.js";
import { DEFAULT_POOL_ROOT } from "./generate.js";
import { measure } from "./measure.js";
import { formatBytes, parseSize } from "./size.js";
import { measureHtmlOpen } from "./html-open.js";
import { loadTextPool } from "./textPool.js";

const ROOT = resolve(fileURLToPath(new URL(".", import.meta.url)), "../..");
const RSS_TARGET_MB = 300;
const SESSION_ID = "019b0c2e-7f00-7000-8000-00000000e4b7";

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

interface Result {
  format: string;
  sessionBytes: number;
  outputBytes: number;
  seconds: number;
  peakRssMB: number;
  pass: boolean;
  exitCode: number;
  error?: string;
  /** html only: the page in Chromium (bench/html-open.ts); target < 3000 ms to the first message. */
  page?: { openMs: number; firstEntryPaintMs: number | null; requests: number; errors: string[] };
}

function table(results: Result[]): string {
  const rows = [["format", "session", "output", "time", "peak RSS", `<= ${RSS_TARGET_MB} MB`]];
  for (const r of results) rows.push([r.format, formatBytes(r.sessionBytes), formatBytes(r.outputBytes), `${r.seconds.toFixed(1)} s`, `${r.peakRssMB.toFixed(0)} MB`, r.pass ? "pass" : r.exitCode ? `FAIL (exit ${r.exitCode})` : "FAIL"]);
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join("  ")).join("\n");
}

async function main(): Promise<void> {
  const size = parseSize(flag("--size", "200MiB"));
  const formats = flag("--formats", "markdown,json,html").split(",");
  const bin = resolve(flag("--bin", join(ROOT, "bin", "pi-guard.js")));
  const work = mkdtempSync(join(tmpdir(), "pi-guard-bench-export-"));
  const results: Result[] = [];
  try {
    const agent = join(work, "agent");
    const cwd = "/home/dev/code/big-project";
    const file = join(agent, "sessions", "--home-dev-code-big-project--", `2026-01-15T09-00-00-000Z_${SESSION_ID}.jsonl`);
    mkdirSync(join(file, ".."), { recursive: true });
    let t = Date.now();
    const session = writeBranchedSession(file, { cwd, sessionId: SESSION_ID, targetBytes: size, seed: "export-bench", pool: loadTextPool(DEFAULT_POOL_ROOT) });
    console.log(`generated a ${formatBytes(session.bytes)} session (branch at ${session.branchPoint}) in ${((Date.now() - t) / 1000).toFixed(0)} s`);
    const env = { PATH: process.env.PATH ?? "", HOME: join(work, "home"), XDG_DATA_HOME: join(work, "data"), XDG_CONFIG_HOME: join(work, "config"), PI_CODING_AGENT_DIR: agent, TMPDIR: work, NO_COLOR: "1" };
    // The first command after a new session summarises it for the sessions catalog; measured on
    // its own so the export rows show the export. (A cold export pays both; see bench/README.md.)
    const list = await measure(process.execPath, [bin, "sessions", "list"], { env, timeoutMs: 30 * 60_000 });
    const catalog: Result = { format: "(catalog: sessions list)", sessionBytes: session.bytes, outputBytes: 0, seconds: list.ms / 1000, peakRssMB: list.peakRssMB, pass: list.exitCode === 0 && list.peakRssMB <= RSS_TARGET_MB, exitCode: list.exitCode };
    if (list.exitCode !== 0) catalog.error = list.stderr.slice(-2000).trim();
    console.log(`catalog: exit ${list.exitCode}, ${catalog.seconds.toFixed(1)} s, peak ${catalog.peakRssMB.toFixed(0)} MB`);
    results.push(catalog);
    for (const format of formats) {
      const out = join(work, `export.${format}`);
      t = Date.now();
      const m = await measure(process.execPath, [bin, "export", SESSION_ID.slice(0, 8), "--format", format, "--output", out], { env, timeoutMs: 30 * 60_000 });
      const outputBytes = m.exitCode === 0 ? statSync(out).size : 0;
      const page = format === "html" && m.exitCode === 0 && !process.argv.includes("--no-browser") ? (await measureHtmlOpen([out]))[0] : undefined;
      if (page) console.log(`html page in Chromium: first message painted at ${page.firstEntryPaintMs} ms, visible to the driver at ${page.openMs} ms, ${page.requests} requests`);
      rmSync(out, { force: true });
      const r: Result = { format, sessionBytes: session.bytes, outputBytes, seconds: m.ms / 1000, peakRssMB: m.peakRssMB, pass: m.exitCode === 0 && m.peakRssMB <= RSS_TARGET_MB, exitCode: m.exitCode };
      if (page) {
        r.page = { openMs: page.openMs, firstEntryPaintMs: page.firstEntryPaintMs, requests: page.requests, errors: page.errors };
        r.pass &&= page.openMs < 3000 && page.requests === 0 && page.errors.length === 0;
      }
      if (m.exitCode !== 0) r.error = m.stderr.slice(-2000).trim();
      console.log(`${format}: exit ${m.exitCode}, ${r.seconds.toFixed(1)} s, peak ${r.peakRssMB.toFixed(0)} MB${r.error ? `: ${r.error}` : ""}`);
      results.push(r);
    }
  } finally {
    if (!process.argv.includes("--keep")) rmSync(work, { recursive: true, force: true });
    else console.log(`kept ${work}`);
  }
  console.log(`\n${table(results)}`);
  const outDir = join(ROOT, "bench", "out");
  mkdirSync(outDir, { recursive: true });
  const json = join(outDir, `export-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(json, JSON.stringify({ rssTargetMB: RSS_TARGET_MB, node: process.version, bin, results }, null, 2));
  console.log(`\nJSON: ${json}`);
  if (results.some((r) => !r.pass)) process.exitCode = 1;
}

await main();
