// Salvage benchmark: generates a pi-hermes-memory sessions.db of >= 1.5 GiB and a pi
// --mode json event log of >= 1 GiB in a temp dir, runs the built `pi-guard salvage` on each
// as a child process, and reports throughput and peak RSS (target: <= 300 MB) as a table and
// JSON in bench/out/. Everything generated is deleted at the end.
//
//   npm run build && node dist/bench/salvage.js [--db-size 1.5GiB] [--log-size 1GiB] [--keep]

import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { measure } from "./measure.js";
import { generateEventLog, generateHermesDb } from "./salvage-data.js";
import { formatBytes, parseSize } from "./size.js";

const ROOT = resolve(fileURLToPath(new URL(".", import.meta.url)), "../..");
const BIN = join(ROOT, "bin", "pi-guard.js");
const RSS_TARGET_MB = 300;

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) total += e.isDirectory() ? dirBytes(join(dir, e.name)) : statSync(join(dir, e.name)).size;
  return total;
}

interface Result {
  source: string;
  inputBytes: number;
  sessions: number;
  outputBytes: number;
  seconds: number;
  mbPerSecond: number;
  peakRssMB: number;
  pass: boolean;
  exitCode: number;
}

async function salvageRun(work: string, name: string, input: string, args: string[]): Promise<Result> {
  const out = join(work, `out-${name}`);
  const env = { PATH: process.env.PATH ?? "", HOME: join(work, "home"), XDG_DATA_HOME: join(work, "data"), XDG_CONFIG_HOME: join(work, "config"), PI_CODING_AGENT_DIR: join(work, "agent"), TMPDIR: work, NO_COLOR: "1" };
  const m = await measure(process.execPath, [BIN, "--json", "salvage", ...args, "--out", out], { env, timeoutMs: 30 * 60_000 });
  if (m.exitCode !== 0) console.error(`${name}: exit ${m.exitCode}: ${m.stderr.slice(-2000)}`);
  const report = m.exitCode === 0 ? (JSON.parse(m.stdout) as { sessions: unknown[] }) : { sessions: [] };
  const inputBytes = statSync(input).size;
  const outputBytes = m.exitCode === 0 ? dirBytes(out) : 0;
  rmSync(out, { recursive: true, force: true }); // keep disk use down before the next run
  const seconds = m.ms / 1000;
  return { source: name, inputBytes, sessions: report.sessions.length, outputBytes, seconds, mbPerSecond: inputBytes / 2 ** 20 / seconds, peakRssMB: m.peakRssMB, pass: m.exitCode === 0 && m.peakRssMB <= RSS_TARGET_MB, exitCode: m.exitCode };
}

function table(results: Result[]): string {
  const rows = [["source", "input", "sessions", "output", "time", "MB/s", "peak RSS", `<= ${RSS_TARGET_MB} MB`]];
  for (const r of results) rows.push([r.source, formatBytes(r.inputBytes), String(r.sessions), formatBytes(r.outputBytes), `${r.seconds.toFixed(1)} s`, r.mbPerSecond.toFixed(1), `${r.peakRssMB.toFixed(0)} MB`, r.pass ? "pass" : "FAIL"]);
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join("  ")).join("\n");
}

async function main(): Promise<void> {
  const dbSize = parseSize(flag("--db-size", "1.5GiB"));
  const logSize = parseSize(flag("--log-size", "1GiB"));
  const work = mkdtempSync(join(tmpdir(), "pi-guard-bench-salvage-"));
  const results: Result[] = [];
  try {
    const db = join(work, "sessions.db");
    let t = Date.now();
    const dbInfo = generateHermesDb(db, dbSize);
    console.log(`generated ${formatBytes(statSync(db).size)} sessions.db (${dbInfo.sessions} sessions, ${dbInfo.messages} messages) in ${((Date.now() - t) / 1000).toFixed(0)} s`);
    results.push(await salvageRun(work, "hermes --all", db, ["--from-hermes", db, "--all"]));
    rmSync(db, { force: true });

    const log = join(work, "pi-events.jsonl");
    t = Date.now();
    const logInfo = generateEventLog(log, logSize);
    console.log(`generated ${formatBytes(statSync(log).size)} event log (${logInfo.sessions} sessions, ${logInfo.messages} messages) in ${((Date.now() - t) / 1000).toFixed(0)} s`);
    results.push(await salvageRun(work, "log", log, ["--from-log", log]));
  } finally {
    if (!process.argv.includes("--keep")) rmSync(work, { recursive: true, force: true });
  }
  console.log(`\n${table(results)}`);
  const outDir = join(ROOT, "bench", "out");
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `salvage-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify({ rssTargetMB: RSS_TARGET_MB, node: process.version, results }, null, 2));
  console.log(`\nJSON: ${file}`);
  if (results.some((r) => !r.pass)) process.exitCode = 1;
}

await main();
